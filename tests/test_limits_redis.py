"""Rate limits shared through Redis (the ``limits`` library): every process counts in one place, a restart forgets
nothing, keys stay bounded, deployments sharing a Redis keep apart, and a failing Redis falls back to each process's
memory instead of opening or closing every limit. (tests/test_limits.py: the in-memory path.)

Redis at :data:`support.REDIS_URL`; without it these tests skip (and fail in CI)."""

from __future__ import annotations

import logging
import time
import uuid

import httpx
import pytest
from support import REDIS_URL, PrivateRedis, eventually, make_user, service_missing

from dynaforge.app import create_app
from dynaforge.errors import InvalidCredentials, RateLimited
from dynaforge.services import auth
from dynaforge.services import ratelimit as ratelimit_module
from dynaforge.services.platform import Platform
from dynaforge.services.ratelimit import MAX_KEY_LENGTH, RateLimiter, limits_url


@pytest.fixture
def redis_client():
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except Exception as exc:  # noqa: BLE001 - any failure means no usable server
        service_missing("Redis", f"{type(exc).__name__}: {exc}")
    yield client
    client.close()


@pytest.fixture
def prefix(redis_client):
    """A key prefix of this test's own (a deployment of its own on the shared Redis), removed afterwards."""
    name = f"dynaforge-test-limits-{uuid.uuid4().hex[:10]}"
    yield name
    keys = list(redis_client.scan_iter(match=f"{name}:*", count=1000))
    if keys:
        redis_client.delete(*keys)


def _platform_like(platform: Platform, prefix: str) -> Platform:
    """Another server process: its own limiter on the same Redis and prefix, the same database."""
    settings = platform.settings.model_copy(update={"limits_url": REDIS_URL, "limits_prefix": prefix})
    return Platform(
        settings=settings,
        db=platform.db,
        plugins=platform.plugins,
        inference=platform.inference,
        limiter=RateLimiter.from_settings(settings),
    )


def test_the_storage_follows_the_settings():
    from dynaforge.settings import Settings

    assert limits_url(Settings()) is None  # the embedded default: process memory
    assert limits_url(Settings(broker_url="redis://r:6379/0")) == "redis://r:6379/0"
    assert limits_url(Settings(broker_url="amqp://q", events_url="redis://e/1")) == "redis://e/1"
    assert limits_url(Settings(events_url="redis://e/1", limits_url="redis://l/2")) == "redis://l/2"
    assert limits_url(Settings(broker_url="redis://r:6379/0", limits_url="memory://")) is None
    assert not RateLimiter.from_settings(Settings()).shared
    shared = RateLimiter.from_settings(Settings(broker_url="redis://r/0", limits_prefix="site-a"))
    assert shared.shared and shared.prefix == "site-a"


async def test_a_limit_hit_through_one_process_holds_in_another(platform, prefix):
    await make_user(platform, "erin")
    first, second = _platform_like(platform, prefix), _platform_like(platform, prefix)
    try:
        for attempt in range(10):  # logins_per_minute attempts on one account, spread over two processes
            with pytest.raises(InvalidCredentials):
                await auth.login(first if attempt % 2 else second, username="erin", password="not it at all")
        for p in (first, second):
            with pytest.raises(RateLimited, match="login attempts for this account") as refused:
                await auth.login(p, username="erin", password="long enough pw")
            assert 0 < refused.value.retry_after_s <= 60
        assert len(first.limiter) == len(second.limiter) == 0  # counted in Redis, nothing in memory
    finally:
        await first.limiter.close()
        await second.limiter.close()


async def test_registrations_per_address_are_counted_across_two_apps(platform, prefix):
    """Two app instances (two replicas behind a load balancer) on one Redis: the per-address registration limit
    counts the registrations made through either."""
    register = """mutation($u: String!, $e: String!) { register(input: {username: $u, email: $e,
      password: "long enough password"}) { __typename ... on Error { message } } }"""
    replicas = [_platform_like(platform, prefix), _platform_like(platform, prefix)]
    for replica in replicas:
        replica.settings.registrations_per_hour_per_client = 2
    answers = []
    try:
        for i in range(4):
            app = create_app(platform=replicas[i % 2], sync_tasks=False)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
                response = await http.post(
                    "/graphql", json={"query": register, "variables": {"u": f"replica{i}", "e": f"r{i}@example.org"}}
                )
            answers.append(response.json()["data"]["register"])
    finally:
        for replica in replicas:
            await replica.limiter.close()
    assert [a["__typename"] for a in answers] == ["AuthPayload", "AuthPayload", "RateLimited", "RateLimited"]
    assert "registrations from your address" in answers[2]["message"]


async def test_limits_survive_a_restart(prefix):
    before = RateLimiter(REDIS_URL, prefix=prefix)
    for _ in range(3):
        await before.hit("exports:7", 3, 60.0, "exports")
    await before.close()
    after = RateLimiter(REDIS_URL, prefix=prefix)  # a new process
    try:
        with pytest.raises(RateLimited, match="Too many exports: at most 3 per 60s"):
            await after.hit("exports:7", 3, 60.0, "exports")
    finally:
        await after.close()


async def test_deployments_sharing_a_redis_count_apart(prefix):
    ours, theirs = RateLimiter(REDIS_URL, prefix=prefix), RateLimiter(REDIS_URL, prefix=prefix + "-other")
    try:
        await ours.hit("proposals:1", 1, 86400.0, "task proposals")
        with pytest.raises(RateLimited):
            await ours.hit("proposals:1", 1, 86400.0, "task proposals")
        await theirs.hit("proposals:1", 1, 86400.0, "task proposals")
    finally:
        await ours.close()
        await theirs.close()


async def test_redis_keys_are_bounded_and_expire(prefix, redis_client):
    limiter = RateLimiter(REDIS_URL, prefix=prefix)
    huge = "login:" + "u" * 1_000_000
    try:
        await limiter.hit(huge, 1, 60.0, "login attempts")
        with pytest.raises(RateLimited):  # a digest counts like the key it stands for
            await limiter.hit(huge, 1, 60.0, "login attempts")
    finally:
        await limiter.close()
    keys = list(redis_client.scan_iter(match=f"{prefix}:*"))
    assert len(keys) == 1
    assert len(keys[0]) <= len(prefix) + MAX_KEY_LENGTH + 50, keys[0][:300]
    assert 0 < redis_client.ttl(keys[0]) <= 60  # gone with its window


async def test_a_failing_redis_falls_back_to_memory_and_comes_back(tmp_path, caplog, monkeypatch):
    """Redis stopped: limits still hold, counted in this process (neither open nor closed), the failure is logged
    once, no call waits on the dead server; once Redis is back, limits are counted there again."""
    monkeypatch.setattr(ratelimit_module, "REDIS_RETRY_S", 1.0)
    server = PrivateRedis(tmp_path)
    server.start()
    limiter = RateLimiter(server.url, prefix="t")
    attempts = iter(range(1_000_000))

    async def counted_in_redis() -> bool:
        key = f"probe:{next(attempts)}"
        await limiter.hit(key, 10, 60.0, "probes")
        return not [held for held in limiter.memory.held_keys() if f"/{key}/" in held]

    try:
        assert await counted_in_redis()
        server.stop()
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="dynaforge.services.ratelimit"):
            for _ in range(10):
                await limiter.hit("login:erin", 10, 60.0, "login attempts")
            with pytest.raises(RateLimited, match="login attempts"):
                await limiter.hit("login:erin", 10, 60.0, "login attempts")
        assert time.monotonic() - started < 1.0
        assert limiter.redis_failures == 1  # not tried again within REDIS_RETRY_S
        assert f"Redis at 127.0.0.1:{server.port}/0 failed" in caplog.text
        assert "counting in this process's memory" in caplog.text
        assert not await counted_in_redis()

        server.start()  # an empty Redis: what was counted during the outage stays in memory, what follows is shared
        await eventually(counted_in_redis, what="Redis is used again")
    finally:
        await limiter.close()
        server.stop()
