"""A per-key sliding-window rate limiter, in process memory (one window per user and action)."""

from __future__ import annotations

import time
from collections import defaultdict, deque

from dynaforge.errors import RateLimited


class RateLimiter:
    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._hits: dict[str, deque[float]] = defaultdict(deque)

    def hit(self, key: str, limit: int, window_s: float, what: str) -> None:
        """Count one use of ``key``; raise RateLimited when more than ``limit`` fall inside the window."""
        if limit <= 0:
            return
        now = self._clock()
        hits = self._hits[key]
        while hits and hits[0] <= now - window_s:
            hits.popleft()
        if len(hits) >= limit:
            retry = hits[0] + window_s - now
            raise RateLimited(f"Too many {what}: at most {limit} per {window_s:g}s; try again in {retry:.0f}s", retry)
        hits.append(now)
