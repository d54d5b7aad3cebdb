"""The domain: every rule of the platform, called alike by the API, the CLI and jobs.

Each service function takes the :class:`~dynaforge.services.platform.Platform` and the acting
:class:`~dynaforge.services.actor.Actor` (``Actor.anonymous()`` when nobody signed in) and authorises the call
itself.
"""
