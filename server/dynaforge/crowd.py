"""Crowd platforms: where a task's owners recruit paid participants (Prolific, Mechanical Turk, a lab's own pool).

A :class:`CrowdPlatform` is registered by a plugin (hook ``register_crowd_platforms``) under a unique ``name``. An
owner creates a *study* of a task on a platform (``createCrowdStudy``) with the platform's own id for it, a
completion code and the pay per verified fooling example and per validation that agrees with the decision. The
study's link (the web app's address and :meth:`CrowdPlatform.link_path`) goes into the platform; a participant who
follows it lands on the web app's ``/crowd/<platform>/<study>`` page with the platform's URL parameters, which the
page hands to ``joinCrowdStudy``. The platform reads them (:meth:`CrowdPlatform.arrival`) and the server signs the
participant into a pseudonymous account of that study: no password, no e-mail, a token returned in the response
body (never put in a URL). At the end ``completeCrowdStudy`` gives the completion code and the URL that takes the
participant back (:meth:`CrowdPlatform.completion_url`).

Pay is computed by the core (``dynaforge.services.crowd``) and handed to the platform as :class:`Bonus` rows: as a
file the owner uploads (:meth:`CrowdPlatform.bonus_file`), or paid through the platform's API
(:meth:`CrowdPlatform.pay`, optional) with the server's outbound policy and the platform's credentials from the
operator's environment.

The core registers ``prolific`` (``dynaforge.defaults.crowd``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dynaforge.outbound import OutboundPolicy


@dataclass(frozen=True)
class Arrival:
    """Who arrived through a study link, as the platform's URL parameters say.

    ``participant``: the platform's id for the person (stable across their visits); ``session``: the platform's id
    for this attempt at the study, or None where the platform has none. A participant who joined in one session
    cannot come back under another: whoever learns a participant id alone cannot act as them."""

    participant: str
    session: str | None
    study: str | None  # the study id the link carried, checked against the study's own where given


@dataclass(frozen=True)
class Bonus:
    """What one participant is owed: ``amount`` in the study's currency's minor units (pence, cents)."""

    participant: str
    amount: int


class PayoutFailed(Exception):
    """The platform refused or could not take a payment. ``uncertain``: the request may have reached the platform
    (a timeout, a dropped connection), so the amounts must be treated as paid until someone checks there;
    ``reference``: the platform's id for the payment, where it gave one."""

    def __init__(self, message: str, *, uncertain: bool = False, reference: str | None = None):
        super().__init__(message)
        self.message = message
        self.uncertain = uncertain
        self.reference = reference


class CrowdPlatform:
    """A crowd platform. Subclasses set ``name`` and ``title`` and implement :meth:`arrival`."""

    #: the key in URLs and the API (``/crowd/<name>/<study>``): lowercase letters, digits, ``_`` or ``-``
    name: str = ""
    #: how people call it
    title: str = ""
    #: the URL parameters a study link carries, for the owners' help text
    parameters: tuple[str, ...] = ()
    #: whether :meth:`pay` is implemented (bonuses through the platform's API)
    pays: bool = False

    def arrival(self, parameters: Mapping[str, str]) -> Arrival:
        """Read who arrived from the link's URL parameters; raise ``ValueError`` naming a missing or malformed one."""
        raise NotImplementedError

    def link_path(self, study: str) -> str:
        """The path (and query, with the platform's placeholders) of the link an owner pastes into the platform for
        the study whose platform id is ``study``; the web app puts its own address in front."""
        return f"/crowd/{self.name}/{study}"

    def completion_url(self, code: str) -> str | None:
        """Where a participant who finished goes back to, with the completion code; None: they type the code."""
        return None

    def bonus_file(self, study: str, bonuses: list[Bonus], currency: str) -> str:
        """The bonuses as the file the platform takes (by default ``participant,amount`` lines, in major units)."""
        return "".join(f"{b.participant},{b.amount / 100:.2f}\n" for b in bonuses if b.amount > 0)

    async def pay(self, study: str, bonuses: list[Bonus], currency: str, policy: OutboundPolicy) -> str:
        """Pay ``bonuses`` through the platform's API; return the platform's reference for the payment. Raise
        :class:`PayoutFailed` when it did not (``uncertain`` when it may have). Every request goes through
        ``policy``."""
        raise PayoutFailed(f"{self.title or self.name} takes bonuses as a file only: download it and upload it there")
