"""Small in-process caches for the rows every request reads: token owners, tasks, current rounds, contexts.

The model-in-the-loop path reads the same few rows on every call; caching them keeps the API's own work per
``createExample`` small next to the model's. Entries expire after ``ttl_s`` seconds (``DYNAFORGE_CACHE_TTL_S``), and
this process drops an entry at once when it changes the row (a revoked token, new target models), so a change
made through another server process is seen within ``ttl_s``. Context rows are immutable in the fields cached here
(their text, task and round), so they only leave the cache when it is full.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any


class TTLCache:
    """A bounded LRU whose entries expire ``ttl_s`` seconds after they were stored (``None``: never)."""

    def __init__(self, ttl_s: float | None, maxsize: int = 10_000):
        self.ttl_s = ttl_s
        self.maxsize = maxsize
        self._data: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()

    def get(self, key: Hashable, default: Any = None) -> Any:
        entry = self._data.get(key)
        if entry is None:
            return default
        expires, value = entry
        if expires < time.monotonic():
            del self._data[key]
            return default
        self._data.move_to_end(key)
        return value

    def put(self, key: Hashable, value: Any) -> None:
        if self.ttl_s is not None and self.ttl_s <= 0:
            return
        expires = float("inf") if self.ttl_s is None else time.monotonic() + self.ttl_s
        self._data[key] = (expires, value)
        self._data.move_to_end(key)
        while len(self._data) > self.maxsize:
            self._data.popitem(last=False)

    async def get_or_load(self, key: Hashable, load: Callable[[], Awaitable[Any]]) -> Any:
        """The cached value of ``key``, or ``await load()`` stored for next time (a ``None`` is not stored)."""
        value = self.get(key)
        if value is None:
            value = await load()
            if value is not None:
                self.put(key, value)
        return value

    def pop(self, key: Hashable) -> None:
        self._data.pop(key, None)

    def clear(self) -> None:
        self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


@dataclass
class Caches:
    ttl_s: float = 2.0
    tokens: TTLCache = field(init=False)
    tasks: TTLCache = field(init=False)
    rounds: TTLCache = field(init=False)
    contexts: TTLCache = field(init=False)
    webhooks: TTLCache = field(init=False)  # a task's active webhooks (usually none), for the write path
    boards: TTLCache = field(init=False)  # what a task's leaderboard is computed from (services.leaderboard)

    def __post_init__(self) -> None:
        self.tokens = TTLCache(self.ttl_s)
        self.tasks = TTLCache(self.ttl_s, maxsize=1000)
        self.rounds = TTLCache(self.ttl_s, maxsize=1000)
        self.contexts = TTLCache(None, maxsize=20_000)
        self.webhooks = TTLCache(self.ttl_s, maxsize=1000)
        self.boards = TTLCache(self.ttl_s, maxsize=100)
