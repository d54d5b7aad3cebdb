"""The event bus: services publish after commit, subscriptions (and webhooks) listen by topic.

Topics are ``{event}:{key}``: ``modelFooled:nli``, ``exampleCreated:nli``, ``exampleValidated:nli``,
``roundChanged:nli``, ``evaluationProgress:{model id}``. Payloads are JSON objects.

* :class:`InMemoryEventBus`: one process (the embedded default).
* :class:`RedisEventBus`: Redis pub/sub, when ``DYNAFORGE_EVENTS_URL`` (or a Redis ``DYNAFORGE_BROKER_URL``) is set,
  so that an event raised on one server process (or an evaluation worker) reaches subscribers on every other.
  Each process keeps one pub/sub connection (a pattern subscription on the bus's prefix) and fans out locally.

Either way each local subscriber has a bounded queue: one that reads too slowly is dropped (its stream ends with
:class:`SubscriberTooSlow`) rather than growing memory. Publishing never fails the caller's already-committed
write: an unreachable Redis is logged and counted (``failed_publishes``), and subscribers get
:class:`EventBusUnavailable` with a message that says what to do; new subscriptions work again once Redis is back.
``publish_threadsafe`` is for threads outside the event loop (the evaluation job actors).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import redis

    from dynaforge.settings import Settings

log = logging.getLogger(__name__)

#: What a subscriber's stream ends with when its bus went away (a sentinel put on its queue).
_CLOSED = object()


class SubscriberTooSlow(Exception):
    """The subscriber fell more than the buffer behind and was dropped; subscribe again."""


class EventBusUnavailable(Exception):
    """The event bus (Redis) cannot be reached."""


class _Subscription(asyncio.Queue):
    """One subscriber's bounded queue, read as an async iterator of its events."""

    dropped = False
    error: Exception | None = None

    def __init__(self, topic: str, buffer: int):
        super().__init__(maxsize=buffer)
        self.topic = topic

    def __aiter__(self) -> _Subscription:
        return self

    async def __anext__(self) -> dict[str, Any]:
        if self.dropped and self.empty():
            raise SubscriberTooSlow(
                f"this subscription to {self.topic} fell more than {self.maxsize} events behind and was dropped; "
                "read events faster, or subscribe again"
            )
        item = await self.get()
        if item is _CLOSED:
            raise self.error or EventBusUnavailable("the event bus closed")
        return item


class EventBus:
    """Local fan-out to bounded subscriber queues; subclasses say how an event gets here."""

    def __init__(self, buffer: int = 256):
        self._buffer = buffer
        self._subscribers: dict[str, set[_Subscription]] = defaultdict(set)
        self._loop: asyncio.AbstractEventLoop | None = None
        self.failed_publishes = 0

    # ------------------------------------------------------------------ the interface
    async def publish(self, topic: str, payload: dict[str, Any]) -> None:
        raise NotImplementedError

    def publish_threadsafe(self, topic: str, payload: dict[str, Any]) -> None:
        """Publish from a thread that is not running the event loop."""
        raise NotImplementedError

    async def start(self) -> None:
        """Bind to the running loop (and connect, for Redis)."""
        self._loop = asyncio.get_running_loop()

    async def close(self) -> None:
        self._fail_all(EventBusUnavailable("the server is shutting down; subscribe again in a moment"))

    async def subscribe(self, topic: str) -> AsyncIterator[dict[str, Any]]:
        """The events of ``topic``, from the first read on."""
        async with self.listen(topic) as events:
            async for item in events:
                yield item

    @contextlib.asynccontextmanager
    async def listen(self, topic: str) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """Like :meth:`subscribe`, but listening from entering the block rather than from the first read: what is
        published meanwhile waits in the (bounded) queue, so a subscriber may read something else first (the
        events it missed, from the database) and lose nothing in between."""
        await self._ready()
        queue = _Subscription(topic, self._buffer)
        self._subscribers[topic].add(queue)
        try:
            yield queue
        finally:
            self._subscribers[topic].discard(queue)
            if not self._subscribers[topic]:
                self._subscribers.pop(topic, None)

    def subscriber_count(self, topic: str) -> int:
        return len(self._subscribers.get(topic, ()))

    # ------------------------------------------------------------------ local delivery (on the loop's thread)
    async def _ready(self) -> None:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()

    def _deliver(self, topic: str, payload: dict[str, Any]) -> None:
        for queue in list(self._subscribers.get(topic, ())):
            if queue.dropped:
                continue
            try:
                queue.put_nowait(payload)
            except asyncio.QueueFull:
                queue.dropped = True
                self._subscribers[topic].discard(queue)
                log.warning("dropped a subscriber of %s that fell %d events behind", topic, self._buffer)

    def _fail_all(self, error: Exception) -> None:
        for topic, queues in list(self._subscribers.items()):
            for queue in list(queues):
                queue.error = error
                queue.dropped = True
                try:
                    queue.put_nowait(_CLOSED)
                except asyncio.QueueFull:  # it is dropped anyway; make room for the sentinel
                    queue.get_nowait()
                    queue.put_nowait(_CLOSED)
            self._subscribers.pop(topic, None)


class InMemoryEventBus(EventBus):
    """Events stay in this process."""

    async def publish(self, topic: str, payload: dict[str, Any]) -> None:
        self._deliver(topic, payload)

    def publish_threadsafe(self, topic: str, payload: dict[str, Any]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return  # nobody has subscribed in this process yet: nobody to tell
        loop.call_soon_threadsafe(self._deliver, topic, payload)


class RedisEventBus(EventBus):
    """Redis pub/sub under ``prefix``; one connection per process reads every event and fans it out locally."""

    RETRY_S = (0.2, 0.5, 1.0, 2.0, 5.0)

    def __init__(self, url: str, *, prefix: str = "dynaforge:events:", buffer: int = 256):
        super().__init__(buffer)
        import redis.asyncio as aioredis

        self.url = url
        self.prefix = prefix
        self._redis = aioredis.Redis.from_url(
            url, socket_connect_timeout=2, socket_timeout=None, health_check_interval=10
        )
        self._sync: redis.Redis | None = None
        self._sync_lock = threading.Lock()
        self._reader: asyncio.Task | None = None
        self._connected = asyncio.Event()
        self._down: Exception | None = None

    def _unavailable(self, exc: BaseException) -> EventBusUnavailable:
        return EventBusUnavailable(
            f"the event bus (Redis at {self._where()}) is unreachable ({type(exc).__name__}); live events pause until "
            "it is back: subscribe again in a few seconds"
        )

    def _where(self) -> str:
        return self.url.rsplit("@", 1)[-1]  # no password in messages

    async def publish(self, topic: str, payload: dict[str, Any]) -> None:
        try:
            await self._redis.publish(self.prefix + topic, json.dumps(payload, default=str))
        except Exception as exc:  # redis.ConnectionError, TimeoutError, ...
            self.failed_publishes += 1
            log.error("event %s was not published: %s", topic, self._unavailable(exc))

    def publish_threadsafe(self, topic: str, payload: dict[str, Any]) -> None:
        import redis

        with self._sync_lock:
            if self._sync is None:
                self._sync = redis.Redis.from_url(self.url, socket_connect_timeout=2, socket_timeout=5)
            try:
                self._sync.publish(self.prefix + topic, json.dumps(payload, default=str))
            except Exception as exc:
                self.failed_publishes += 1
                log.error("event %s was not published: %s", topic, self._unavailable(exc))

    async def start(self) -> None:
        await super().start()
        if self._reader is None or self._reader.done():
            self._reader = asyncio.create_task(self._read(), name="event-bus-reader")

    async def _ready(self) -> None:
        await self.start()
        if self._connected.is_set():
            return
        try:
            await asyncio.wait_for(self._connected.wait(), timeout=3.0)
        except TimeoutError:
            raise (
                self._down
                if isinstance(self._down, EventBusUnavailable)
                else EventBusUnavailable(
                    f"the event bus (Redis at {self._where()}) is unreachable; subscribe again in a few seconds"
                )
            ) from None

    async def _read(self) -> None:
        attempt = 0
        while True:
            pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.psubscribe(self.prefix + "*")
                self._connected.set()
                self._down = None
                if attempt:
                    log.info("the event bus is reachable again")
                attempt = 0
                skip = len(self.prefix)
                while True:
                    message = await pubsub.get_message(timeout=None)
                    if message is None or message.get("type") != "pmessage":
                        continue
                    channel = message["channel"]
                    topic = (channel.decode() if isinstance(channel, bytes) else channel)[skip:]
                    if topic in self._subscribers:
                        self._deliver(topic, json.loads(message["data"]))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._connected.clear()
                self._down = self._unavailable(exc)
                if attempt == 0:
                    log.error("%s", self._down)
                self._fail_all(self._down)
                await asyncio.sleep(self.RETRY_S[min(attempt, len(self.RETRY_S) - 1)])
                attempt += 1
            finally:
                with contextlib.suppress(Exception):  # the connection is gone anyway
                    await pubsub.aclose()

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
            self._reader = None
        await super().close()
        await self._redis.aclose()
        if self._sync is not None:
            self._sync.close()


def make_event_bus(settings: Settings) -> EventBus:
    """Redis pub/sub when the settings name a Redis URL for events (or the job broker is Redis), else in memory."""
    url = settings.events_url or settings.broker_url
    if url and url.startswith(("redis://", "rediss://", "unix://")):
        return RedisEventBus(url, prefix=settings.events_prefix, buffer=settings.subscriber_buffer)
    return InMemoryEventBus(buffer=settings.subscriber_buffer)
