"""A per-key sliding-window rate limiter, in process memory (one window per user and action).

Keys are built from what callers send (a username at login, a client address), so the limiter bounds what they can
make it hold: a key longer than ``MAX_KEY_LENGTH`` is kept as its SHA-256 digest, and at most ``max_keys`` keys are
kept: when a new key would pass that, windows that have emptied are dropped and then, if still full, the keys used
least recently (an evicted key starts again with an empty window, which only ever errs towards allowing a call).
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict, deque

from dynaforge.errors import RateLimited

MAX_KEY_LENGTH = 200
DEFAULT_MAX_KEYS = 100_000


def bounded(key: str) -> str:
    """A key as the limiters keep it: itself, or its SHA-256 digest when it is longer than ``MAX_KEY_LENGTH``."""
    if len(key) > MAX_KEY_LENGTH:
        return "sha256:" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return key


class RateLimiter:
    def __init__(self, clock=time.monotonic, max_keys: int = DEFAULT_MAX_KEYS):
        self._clock = clock
        self.max_keys = max(1, max_keys)
        self._hits: OrderedDict[str, tuple[float, deque[float]]] = OrderedDict()  # key -> (window, hits)

    def __len__(self) -> int:
        return len(self._hits)

    def hit(self, key: str, limit: int, window_s: float, what: str) -> None:
        """Count one use of ``key``; raise RateLimited when more than ``limit`` fall inside the window."""
        if limit <= 0:
            return
        key = bounded(key)
        now = self._clock()
        entry = self._hits.get(key)
        if entry is None:
            if len(self._hits) >= self.max_keys:
                self._make_room(now)
            entry = self._hits[key] = (window_s, deque())
        else:
            self._hits.move_to_end(key)
        hits = entry[1]
        while hits and hits[0] <= now - window_s:
            hits.popleft()
        if len(hits) >= limit:
            retry = hits[0] + window_s - now
            raise RateLimited(f"Too many {what}: at most {limit} per {window_s:g}s; try again in {retry:.0f}s", retry)
        hits.append(now)

    def _make_room(self, now: float) -> None:
        for key in [k for k, (window, hits) in self._hits.items() if not hits or hits[-1] <= now - window]:
            del self._hits[key]
        while len(self._hits) >= self.max_keys:
            self._hits.popitem(last=False)  # the least recently used


class Slots:
    """Things held open at once per key (live subscriptions per user): ``acquire`` refuses past the limit, and
    ``release`` gives the slot back. In process memory, like :class:`RateLimiter`; keys with nothing held are
    dropped, so only what is open takes room."""

    def __init__(self) -> None:
        self._held: dict[str, int] = {}

    def held(self, key: str) -> int:
        return self._held.get(bounded(key), 0)

    def acquire(self, key: str, limit: int, what: str) -> None:
        key = bounded(key)
        held = self._held.get(key, 0)
        if limit > 0 and held >= limit:
            raise RateLimited(f"Too many {what}: at most {limit} at once; end one first", 1.0)
        self._held[key] = held + 1

    def release(self, key: str) -> None:
        key = bounded(key)
        held = self._held.get(key, 0) - 1
        if held > 0:
            self._held[key] = held
        else:
            self._held.pop(key, None)
