"""Password hashing off the event loop, on bounded thread pools of its own, one per purpose.

Argon2 is slow and memory-hard on purpose (about 0.15 s of CPU and 64 MiB per hash at the default parameters), so
it runs on threads (argon2-cffi releases the GIL), never on the event loop, and not on asyncio's default executor
that everything else shares. Logins and registrations each get their own pool
(``PASSWORD_HASH_THREADS_LOGIN``, ``PASSWORD_HASH_THREADS_REGISTER``): a flood of sign-ups cannot delay a login,
nor a password-guessing flood a sign-up. Each pool admits at most its threads plus ``PASSWORD_HASH_QUEUE`` waiting
hashes; past that the caller gets :class:`RateLimited` at once (retry in a second) instead of a queue that grows
without end. Hashing holds at most both pools' threads times a hash's memory (a waiting call holds none).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from dynaforge.errors import RateLimited

if TYPE_CHECKING:
    from dynaforge.settings import Settings

T = TypeVar("T")

BUSY_RETRY_S = 1.0


class HashPool:
    """``threads`` threads for one purpose, and room for ``queue`` more calls waiting for one."""

    def __init__(self, purpose: str, what: str, threads: int, queue: int) -> None:
        self.purpose = purpose
        self.what = what
        self.threads = max(1, threads)
        self.capacity = self.threads + max(0, queue)
        self._executor = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix=f"argon2-{purpose}")
        self._lock = threading.Lock()
        self._admitted = 0

    @property
    def admitted(self) -> int:
        """Calls running or waiting now."""
        return self._admitted

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        """``fn(*args)`` on one of the pool's threads; RateLimited at once when the pool and its queue are full.

        A caller cancelled while its call waits takes it out of the queue; one cancelled while its call runs leaves
        it to finish, and its slot is given back then."""
        with self._lock:
            if self._admitted >= self.capacity:
                raise RateLimited(
                    f"The server is busy with {self.what} ({self._admitted} in progress); try again in a second",
                    BUSY_RETRY_S,
                )
            self._admitted += 1
        try:
            future = self._executor.submit(fn, *args)
        except BaseException:
            self._release(None)
            raise
        future.add_done_callback(self._release)
        return await asyncio.wrap_future(future)

    def _release(self, _: Future | None) -> None:
        with self._lock:
            self._admitted -= 1

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


class PasswordHashing:
    """The platform's hashing pools: ``login`` checks passwords, ``register`` hashes new ones."""

    def __init__(self, login_threads: int = 2, register_threads: int = 1, queue: int = 16) -> None:
        self.login = HashPool("login", "sign-ins", login_threads, queue)
        self.register = HashPool("register", "new accounts", register_threads, queue)

    @classmethod
    def from_settings(cls, settings: Settings) -> PasswordHashing:
        return cls(
            settings.password_hash_threads_login, settings.password_hash_threads_register, settings.password_hash_queue
        )

    def close(self) -> None:
        self.login.close()
        self.register.close()
