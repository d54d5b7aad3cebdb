"""What processes that run models get of the server's environment: no secrets.

The model worker and evaluation jobs run model code that the server does not write (a transformers checkpoint's
configuration, a plugin's model). They get the server's environment without its secrets (:func:`scrubbed_environment`):
every ``DYNAFORGE_`` setting except the few they need, and any variable whose name says it holds a credential
(``*SECRET*``, ``*PASSWORD*``, ``*TOKEN*``, ``*_KEY``, ``*CREDENTIAL*``, ``DATABASE_URL``, cloud credentials).
Evaluation jobs keep the database URL they write their results with (``keep``); the model worker needs none. They
run as a development environment: production's checks (a real ``SECRET_KEY``) are the server's, and they hold none.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

#: Settings a model-running process needs (the model store, the outbound policy, plugins, threads).
NEEDED = frozenset(
    {
        "DYNAFORGE_DATA_DIR",
        "DYNAFORGE_OUTBOUND_ALLOW",
        "DYNAFORGE_LOAD_PLUGINS",
        "DYNAFORGE_MODEL_THREADS",
    }
)
_SECRET = re.compile(
    r"SECRET|PASSWORD|PASSWD|TOKEN|CREDENTIAL|_KEY$|^DATABASE_URL$|^REDIS_URL$|^AMQP_URL$|^AWS_|^AZURE_|^GOOGLE_APPLICATION",
    re.IGNORECASE,
)


def is_secret(name: str) -> bool:
    return bool(_SECRET.search(name))


def scrubbed_environment(base: Mapping[str, str] | None = None, keep: Iterable[str] = ()) -> dict[str, str]:
    """``base`` (this process's environment) without secrets and without the ``DYNAFORGE_`` settings a model
    process does not need; the names in ``keep`` stay whatever they are."""
    kept = set(keep)
    environment = dict(os.environ if base is None else base)
    return {
        name: value
        for name, value in environment.items()
        if name in kept
        or (
            not is_secret(name)
            and (not name.startswith("DYNAFORGE_") or name in NEEDED or name.startswith("DYNAFORGE_EVAL_"))
        )
    }
