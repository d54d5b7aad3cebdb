"""Small asyncio helpers shared by the services and the API."""

from __future__ import annotations

import asyncio
import weakref

_SEMAPHORES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, int], asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


def loop_semaphore(name: str, limit: int) -> asyncio.Semaphore:
    """The process-wide semaphore ``name`` (of ``limit`` slots) of the running event loop.

    A semaphore belongs to one event loop; keeping one per loop lets module-level limits work in a server, in tests
    that share a session loop, and in CLI commands that each run their own loop.
    """
    per_loop = _SEMAPHORES.setdefault(asyncio.get_running_loop(), {})
    semaphore = per_loop.get((name, limit))
    if semaphore is None:
        semaphore = per_loop[(name, limit)] = asyncio.Semaphore(limit)
    return semaphore
