"""Rate limits: moving windows (the ``limits`` library) per key, shared by every server process through Redis.

Storage: Redis when the settings name one (``LIMITS_URL``, else the event bus's or the job broker's Redis), so that
all replicas count together and a restart forgets nothing; process memory otherwise (the embedded demo). Redis is
used through its asyncio client, so a round trip never blocks the event loop.

Per-address limits key a client by :func:`client_key` (an IPv6 address by its /64).

Keys are built from what callers send (a username at login, a client address), so the limiter bounds what they can
make it hold: a key longer than ``MAX_KEY_LENGTH`` is kept as its SHA-256 digest (in memory and in Redis alike), and
the memory storage keeps at most ``max_keys`` keys: when a new key would pass that, windows that have emptied are
dropped and then, if still full, the keys used least recently (an evicted key starts again with an empty window,
which only ever errs towards allowing a call). Redis keys expire with their window.

When Redis fails (down, unreachable, too slow: ``REDIS_TIMEOUT_S``), every limit falls back to this process's
memory for ``REDIS_RETRY_S`` before Redis is tried again, and a warning is logged once per outage. No limit fails
open (an attacker who can disturb Redis would switch off brute-force protection) and none fails closed (the same
attacker could lock every user out of login); during the outage each process enforces each limit on its own, so a
caller gets at most the limit times the number of server processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ipaddress
import logging
import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from limits import RateLimitItemPerSecond
from limits.aio.storage import MovingWindowSupport, Storage
from limits.aio.strategies import MovingWindowRateLimiter

from dynaforge.errors import RateLimited

if TYPE_CHECKING:
    from redis.asyncio import ConnectionPool

    from dynaforge.settings import Settings

log = logging.getLogger(__name__)

MAX_KEY_LENGTH = 200
DEFAULT_MAX_KEYS = 100_000
# A Redis round trip on a healthy network takes a millisecond; past this, the limit is counted in memory instead.
REDIS_TIMEOUT_S = 0.5
# After a failure, how long limits stay in memory before Redis is tried again (no request waits on a dead Redis).
REDIS_RETRY_S = 5.0
_NAMESPACE = "rate"


def client_key(address: str | None) -> str:
    """The client a per-address limit counts: an IPv4 address as itself, an IPv6 address by its /64 (a provider
    hands each customer a /64 or more, so a caller who is keyed by the full address has 2**64 of them to rotate
    through), an IPv4-mapped IPv6 address as its IPv4. Anything else (a name a test client reports) as given, and
    no address at all as ``-``."""
    if not address:
        return "-"
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def bounded(key: str) -> str:
    """A key as the limiters keep it: itself, or its SHA-256 digest when it is longer than ``MAX_KEY_LENGTH``."""
    if len(key) > MAX_KEY_LENGTH:
        return "sha256:" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return key


class BoundedMemoryStorage(Storage, MovingWindowSupport):
    """Moving windows in process memory, at most ``max_keys`` of them (least recently used out first).

    The ``limits`` library's own memory storage keeps every key until its window expires and sweeps them all with a
    background task; this one holds a fixed number, does its work inline (no awaits: each call is atomic on the
    event loop) and supports only the moving-window strategy the platform uses."""

    def __init__(self, max_keys: int = DEFAULT_MAX_KEYS, clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.max_keys = max(1, max_keys)
        self._clock = clock
        self._windows: OrderedDict[str, tuple[int, deque[float]]] = OrderedDict()  # key -> (expiry, hits, oldest 1st)

    def __len__(self) -> int:
        return len(self._windows)

    def held_keys(self) -> list[str]:
        return list(self._windows)

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return ()

    async def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        if amount > limit:
            return False
        now = self._clock()
        entry = self._windows.get(key)
        if entry is None:
            if len(self._windows) >= self.max_keys:
                self._make_room(now)
            entry = self._windows[key] = (expiry, deque())
        else:
            self._windows.move_to_end(key)
        hits = entry[1]
        while hits and hits[0] <= now - expiry:
            hits.popleft()
        if len(hits) + amount > limit:
            return False
        hits.extend([now] * amount)
        return True

    async def get_moving_window(self, key: str, limit: int, expiry: int) -> tuple[float, int]:
        now = self._clock()
        entry = self._windows.get(key)
        hits = [t for t in entry[1] if t > now - expiry] if entry else []
        return (hits[0], len(hits)) if hits else (now, 0)

    def _make_room(self, now: float) -> None:
        for key in [k for k, (expiry, hits) in self._windows.items() if not hits or hits[-1] <= now - expiry]:
            del self._windows[key]
        while len(self._windows) >= self.max_keys:
            self._windows.popitem(last=False)  # the least recently used

    # The counters of the other strategies: not used by the platform.
    async def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        raise NotImplementedError("BoundedMemoryStorage keeps moving windows only")

    async def get(self, key: str) -> int:
        raise NotImplementedError("BoundedMemoryStorage keeps moving windows only")

    async def get_expiry(self, key: str) -> float:
        entry = self._windows.get(key)
        return entry[1][-1] + entry[0] if entry and entry[1] else self._clock()

    async def check(self) -> bool:
        return True

    async def reset(self) -> int | None:
        count = len(self._windows)
        self._windows.clear()
        return count

    async def clear(self, key: str) -> None:
        self._windows.pop(key, None)


def limits_url(settings: Settings) -> str | None:
    """The Redis URL rate limits are shared through, or None for process memory: ``LIMITS_URL`` (``memory://``:
    memory even when the platform has a Redis), else the event bus's Redis, else the job broker's."""
    url = settings.limits_url or settings.events_url or settings.broker_url
    if url and url.startswith(("redis://", "rediss://", "unix://")):
        return url
    return None


class RateLimiter:
    """Per-key moving-window limits: ``await hit(key, limit, window_s, what)`` counts one use or raises
    :class:`RateLimited` with the seconds until the window frees a slot.

    ``url``: a Redis URL (shared by every process using the same URL and ``prefix``), or None for this process's
    memory. The memory storage also stands in while Redis fails (see the module's docstring)."""

    def __init__(
        self,
        url: str | None = None,
        *,
        prefix: str = "dynaforge:limits",
        max_keys: int = DEFAULT_MAX_KEYS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.url = url
        self.prefix = prefix
        self._clock = clock
        self.memory = BoundedMemoryStorage(max_keys, clock)
        self._in_memory = MovingWindowRateLimiter(self.memory)
        self._redis: tuple[asyncio.AbstractEventLoop, MovingWindowRateLimiter, ConnectionPool] | None = None
        self._redis_down_until = 0.0
        self.redis_failures = 0

    @classmethod
    def from_settings(cls, settings: Settings) -> RateLimiter:
        return cls(limits_url(settings), prefix=settings.limits_prefix)

    @property
    def shared(self) -> bool:
        """Whether limits are counted in Redis (when it answers) rather than in this process."""
        return self.url is not None

    def __len__(self) -> int:
        """Keys held in this process's memory (none in normal operation with Redis)."""
        return len(self.memory)

    async def hit(self, key: str, limit: int, window_s: float, what: str) -> None:
        """Count one use of ``key``; raise RateLimited when ``limit`` uses already fall inside the window."""
        await self._use(key, limit, window_s, what, count=True)

    async def check(self, key: str, limit: int, window_s: float, what: str) -> None:
        """Raise RateLimited when ``limit`` uses already fall inside ``key``'s window, counting nothing: a limit on
        failures is checked before the attempt and counted (with :meth:`hit`) only when the attempt failed."""
        await self._use(key, limit, window_s, what, count=False)

    async def _use(self, key: str, limit: int, window_s: float, what: str, *, count: bool) -> None:
        if limit <= 0:
            return
        item = RateLimitItemPerSecond(limit, max(1, math.ceil(window_s)), namespace=_NAMESPACE)
        key = bounded(key)
        strategy = self._shared_strategy()
        if strategy is not None:
            try:
                async with asyncio.timeout(REDIS_TIMEOUT_S * 2):
                    if await (strategy.hit if count else strategy.test)(item, key):
                        return
                    reset = (await strategy.get_window_stats(item, key)).reset_time
            except Exception as exc:  # redis.RedisError, OSError, TimeoutError: any failure of the store
                self._redis_failed(exc)
            else:
                raise self._refusal(what, limit, window_s, reset)
        if await (self._in_memory.hit if count else self._in_memory.test)(item, key):
            return
        reset = (await self._in_memory.get_window_stats(item, key)).reset_time
        raise self._refusal(what, limit, window_s, reset)

    def _refusal(self, what: str, limit: int, window_s: float, reset: float) -> RateLimited:
        retry = max(0.0, reset - self._clock())
        return RateLimited(f"Too many {what}: at most {limit} per {window_s:g}s; try again in {retry:.0f}s", retry)

    def _shared_strategy(self) -> MovingWindowRateLimiter | None:
        if self.url is None or time.monotonic() < self._redis_down_until:
            return None
        loop = asyncio.get_running_loop()
        if self._redis is None or self._redis[0] is not loop:  # a client's connections belong to one event loop
            self._redis = (loop, *self._connect(self.url))
        return self._redis[1]

    def _connect(self, url: str) -> tuple[MovingWindowRateLimiter, ConnectionPool]:
        import redis.asyncio as aioredis
        from limits.aio.storage import RedisStorage
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        pool = aioredis.ConnectionPool.from_url(
            url,
            socket_timeout=REDIS_TIMEOUT_S,
            socket_connect_timeout=REDIS_TIMEOUT_S,
            retry=Retry(NoBackoff(), 1),  # one quick retry (a pooled connection the server closed), then memory
        )
        uri = "redis+unix://" + url.removeprefix("unix://") if url.startswith("unix://") else url
        storage = RedisStorage(uri, implementation="redispy", key_prefix=self.prefix, connection_pool=pool)  # type: ignore[arg-type]
        return MovingWindowRateLimiter(storage), pool

    def _redis_failed(self, exc: BaseException) -> None:
        self.redis_failures += 1
        self._redis_down_until = time.monotonic() + REDIS_RETRY_S
        where = (self.url or "").split("://", 1)[-1].rsplit("@", 1)[-1]  # no password in logs
        log.warning(
            "rate limits: Redis at %s failed (%s: %s); counting in this process's memory for %gs",
            where,
            type(exc).__name__,
            exc,
            REDIS_RETRY_S,
        )

    async def close(self) -> None:
        shared, self._redis = self._redis, None
        if shared is not None and shared[0] is asyncio.get_running_loop():
            with contextlib.suppress(Exception):  # closing a broken connection has nothing left to do
                await shared[2].aclose()


class Slots:
    """Things held open at once per key (live subscriptions per user): ``acquire`` refuses past the limit, and
    ``release`` gives the slot back. In process memory (what is held open is a connection to this process); keys
    with nothing held are dropped, so only what is open takes room."""

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
