"""Password hashing cannot starve: logins and registrations hash on bounded pools of their own, off the event loop.

A slow hasher is patched in and held until the test lets it go, so that one purpose's pool and queue are full for
as long as the test needs: the other purpose still answers at once, and the full one answers RATE_LIMITED at once
instead of queueing."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from support import eventually, make_user

from dynaforge.errors import InvalidCredentials, RateLimited
from dynaforge.services import auth
from dynaforge.services.hashing import PasswordHashing

PROMPT_S = 3.0  # far above a cheap hash (milliseconds), far below "waits for the flood" (forever, here)


class HeldHasher:
    """A hasher whose ``hash`` (or ``verify``) waits until ``release`` is set."""

    def __init__(self, real, slow: str, release: threading.Event):
        self.real, self.slow, self.release = real, slow, release

    def hash(self, password):
        if self.slow == "hash":
            self.release.wait(30)
        return self.real.hash(password)

    def verify(self, stored, password):
        if self.slow == "verify":
            self.release.wait(30)
        return self.real.verify(stored, password)


class Hold:
    """Makes one purpose's hashing hang (``hold("hash")``: new passwords; ``hold("verify")``: logins) until
    ``release`` is set."""

    def __init__(self, monkeypatch):
        self.monkeypatch = monkeypatch
        self.release = threading.Event()

    def __call__(self, slow: str) -> None:
        real = auth.password_hasher
        self.monkeypatch.setattr(
            auth, "password_hasher", lambda settings: HeldHasher(real(settings), slow, self.release)
        )


@pytest.fixture
def held(platform, monkeypatch):
    """Small pools (1 thread and 2 waiting per purpose), and a :class:`Hold`."""
    platform.hashing = PasswordHashing(login_threads=1, register_threads=1, queue=2)
    hold = Hold(monkeypatch)
    yield hold
    hold.release.set()
    platform.hashing.close()


async def test_a_flood_of_registrations_does_not_delay_logins(platform, held):
    await make_user(platform, "olive")
    held("hash")
    pool = platform.hashing.register
    flood = [
        asyncio.create_task(
            auth.register(platform, username=f"flood{i}", email=f"f{i}@example.org", password="long enough pw")
        )
        for i in range(pool.capacity)
    ]
    await eventually(lambda: pool.admitted == pool.capacity, what="the registration pool and its queue are full")

    started = time.monotonic()
    with pytest.raises(RateLimited, match="busy with new accounts") as busy:  # no queueing past the queue
        await auth.register(platform, username="late", email="late@example.org", password="long enough pw")
    assert busy.value.retry_after_s > 0
    user, token = await asyncio.wait_for(auth.login(platform, username="olive", password="long enough pw"), PROMPT_S)
    with pytest.raises(InvalidCredentials):
        await asyncio.wait_for(auth.login(platform, username="olive", password="wrong password"), PROMPT_S)
    assert time.monotonic() - started < PROMPT_S and token.startswith("dfk_")
    assert not any(task.done() for task in flood)  # still held: the login went past them

    held.release.set()
    created = await asyncio.wait_for(asyncio.gather(*flood), 30)
    assert len(created) == pool.capacity and pool.admitted == 0


async def test_a_flood_of_logins_does_not_delay_registrations(platform, held):
    held("verify")
    pool = platform.hashing.login
    flood = [
        asyncio.create_task(auth.login(platform, username=f"nobody{i}", password="guess guess"))
        for i in range(pool.capacity)
    ]
    await eventually(lambda: pool.admitted == pool.capacity, what="the login pool and its queue are full")

    started = time.monotonic()
    with pytest.raises(RateLimited, match="busy with sign-ins"):
        await auth.login(platform, username="nobody-else", password="guess guess")
    user, token = await asyncio.wait_for(
        auth.register(platform, username="newcomer", email="new@example.org", password="long enough pw"), PROMPT_S
    )
    assert time.monotonic() - started < PROMPT_S and user.username == "newcomer"
    assert not any(task.done() for task in flood)
    for task in flood:
        task.cancel()
    await asyncio.gather(*flood, return_exceptions=True)


async def test_a_cancelled_caller_gives_its_place_back(platform, held):
    held("hash")
    pool = platform.hashing.register
    waiting = [
        asyncio.create_task(
            auth.register(platform, username=f"gone{i}", email=f"g{i}@example.org", password="long enough pw")
        )
        for i in range(pool.capacity)
    ]
    await eventually(lambda: pool.admitted == pool.capacity, what="the pool is full")
    for task in waiting[pool.threads :]:  # those still queued leave the queue at once
        task.cancel()
    await asyncio.gather(*waiting[pool.threads :], return_exceptions=True)
    await eventually(lambda: pool.admitted == pool.threads, what="the queued calls left")
    held.release.set()  # the running ones finish (before the test's database goes away)
    await asyncio.wait_for(asyncio.gather(*waiting[: pool.threads]), 30)
    assert pool.admitted == 0


def test_the_pools_follow_the_settings():
    from dynaforge.settings import Settings

    hashing = PasswordHashing.from_settings(
        Settings(password_hash_threads_login=3, password_hash_threads_register=2, password_hash_queue=5)
    )
    try:
        assert (hashing.login.threads, hashing.login.capacity) == (3, 8)
        assert (hashing.register.threads, hashing.register.capacity) == (2, 7)
    finally:
        hashing.close()
