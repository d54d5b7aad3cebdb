"""The event bus: publish after commit, subscribe by topic. In memory for the embedded server.

Each subscriber has a bounded queue: a subscriber that reads too slowly is dropped rather than growing memory.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Any, AsyncIterator

log = logging.getLogger(__name__)


class EventBus:
    async def publish(self, topic: str, payload: dict[str, Any]) -> None:
        raise NotImplementedError

    def subscribe(self, topic: str) -> AsyncIterator[dict[str, Any]]:
        raise NotImplementedError


class SubscriberTooSlow(Exception):
    pass


class _Subscription(asyncio.Queue):
    dropped = False


class InMemoryEventBus(EventBus):
    def __init__(self, buffer: int = 256):
        self._buffer = buffer
        self._subscribers: dict[str, set[_Subscription]] = defaultdict(set)

    async def publish(self, topic: str, payload: dict[str, Any]) -> None:
        for queue in list(self._subscribers.get(topic, ())):
            try:
                queue.put_nowait(payload)
            except asyncio.QueueFull:
                self._subscribers[topic].discard(queue)
                queue.dropped = True
                log.warning("dropped a slow subscriber of %s", topic)

    async def subscribe(self, topic: str) -> AsyncIterator[dict[str, Any]]:
        queue = _Subscription(maxsize=self._buffer)
        self._subscribers[topic].add(queue)
        try:
            while True:
                if queue.dropped and queue.empty():
                    raise SubscriberTooSlow(f"subscriber of {topic} fell more than {self._buffer} events behind")
                yield await queue.get()
        finally:
            self._subscribers[topic].discard(queue)

    def subscriber_count(self, topic: str) -> int:
        return len(self._subscribers.get(topic, ()))
