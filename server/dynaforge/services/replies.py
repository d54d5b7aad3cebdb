"""A target's reply as it is written: the annotator's stream of a generative model's output.

The annotator picks a stream id (8 to 64 letters, digits, ``-`` or ``_``; a random UUID does), subscribes to
``replyStream(streamId:)`` and, once its first event says it listens, sends ``createExample`` with the same id as
``replyStream``. While the round's target models write, each piece they stream is published, in order, on a topic
that names the annotator and the id: only the person who sent the example can follow it, whichever replica serves
the subscription (the topic goes through the event bus, Redis when there are replicas). The stream ends with a
``done`` event once the models have answered or failed; ``createExample`` then answers with the example and its
verdict as always. A model that does not stream (a classifier) sends no pieces, only ``done``.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from dynaforge.errors import FieldError, InvalidInput
from dynaforge.inference.backends import TokenSink
from dynaforge.services.actor import Actor, require_human
from dynaforge.services.platform import Platform

log = logging.getLogger(__name__)

STREAM_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")
#: How long the end of a stream may wait for its pieces to be published before it gives up on them.
DRAIN_S = 5.0


def check_stream_id(stream_id: str, field: str = "replyStream") -> str:
    if not STREAM_ID.fullmatch(stream_id):
        raise InvalidInput.from_errors(
            [FieldError(field, "pattern", "must be 8 to 64 letters, digits, '-' or '_' (a random UUID will do)")]
        )
    return stream_id


def topic(actor: Actor, stream_id: str) -> str:
    """The topic of ``actor``'s stream ``stream_id``: a signed-in person's own (NotAuthenticated otherwise)."""
    actor = require_human(actor)
    return f"reply:{actor.person_id}:{check_stream_id(stream_id, 'streamId')}"


class ReplyStream:
    """Publishes the pieces of the target models' replies to one stream, in the order they were written, from
    whichever thread the models write on; :meth:`close` publishes ``done`` after the last piece."""

    def __init__(self, p: Platform, topic: str):
        self._events = p.events
        self._topic = topic
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._index = 0  # 0 is the subscription's own "listening" event; pieces count from 1
        self._publisher = asyncio.create_task(self._publish(), name="reply-stream")

    def sink(self, model: str) -> TokenSink:
        """The token sink of one model's prediction (thread-safe: it only schedules on the loop)."""

        def on_token(text: str) -> None:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, {"model": model, "text": text})

        return on_token

    async def _publish(self) -> None:
        while (item := await self._queue.get()) is not None:
            self._index += 1
            await self._events.publish(self._topic, {**item, "index": self._index, "done": False})

    async def close(self) -> None:
        """Publish ``done`` once every piece already written is out (pieces scheduled from the predicting thread
        before the prediction returned are queued before this runs)."""
        self._queue.put_nowait(None)
        try:
            await asyncio.wait_for(asyncio.shield(self._publisher), DRAIN_S)
        except TimeoutError:
            self._publisher.cancel()
            log.warning("reply stream %s: the event bus did not take its pieces within %gs", self._topic, DRAIN_S)
        except Exception:  # noqa: BLE001 - the stream is a courtesy; the example is stored either way
            log.warning("reply stream %s failed", self._topic, exc_info=True)
        await self._events.publish(self._topic, {"model": None, "text": "", "index": self._index + 1, "done": True})
