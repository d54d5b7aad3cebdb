"""Live events over graphql-transport-ws, with reconnection, backoff and resumption.

A :class:`EventStream` is an async iterator. When the connection drops (the server restarted, the network failed,
the subscriber fell too far behind and was dropped) it connects again, waiting longer each time (0.5 s doubling to
``max_backoff``, with jitter), until ``max_attempts`` consecutive failures (``None``: forever). Errors that a new
connection would not fix (signed out, no such task, a bad argument) are raised at once.

**Resuming.** ``modelFooled`` takes ``after`` (an example id): on each reconnect the stream passes
:attr:`EventStream.last_id`, the id of the last example it yielded, and the server first replays the fooling
examples stored after it, oldest first, then goes on live, so nothing is lost. Ids are opaque, so the stream does not
order them: an example that was pending and fooled late arrives live after examples stored later, and a resume after
it replays those again; the stream drops every id it has already yielded, so nothing comes twice within a run (across
runs, with ``after=`` a stored id, such an example's successors may come again). The server cannot replay one case:
an example stored before ``after`` whose prediction was still pending and that fooled while the stream was away.

**Telling that events were missed.** A reconnect can resume only from an example it has seen: when the connection
drops before the first event (and no ``after`` was given), or on a stream that cannot resume (``evaluationProgress``),
events sent while it was away are lost. Each such reconnect is recorded in :attr:`EventStream.gaps` (when, and
why) and logged as a warning whose record carries the :class:`Gap` as ``record.dynaforge_gap``; ``gaps`` stays empty
while nothing can have been missed. Pass ``after=`` a stored id (:attr:`EventStream.last_id` of an earlier run) to
resume across runs of a script.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Generic, TypeVar

from . import errors
from ._generated.exceptions import GraphQLClientError, GraphQLClientInvalidMessageFormat
from ._transport import translate

log = logging.getLogger("dynaforge_client")
T = TypeVar("T")

# Server errors a new connection may fix: the subscriber was dropped (too slow), the event bus or a service was down.
# Anything else (not signed in, no such task, a document the server refuses) is raised.
_TRANSIENT_CODES = {"SERVICE_UNAVAILABLE", "RATE_LIMITED", "TRANSPORT"}
# graphql-transport-ws close codes that a new connection will not change (bad request, unauthorised, forbidden, ...)
_PERMANENT_CLOSE = range(4400, 4500)
_INIT_TIMEOUT_CLOSE = 4408
_SEEN = 10_000  # ids remembered for dropping duplicates


@dataclass(frozen=True)
class Gap:
    """A reconnect after which events sent while the stream was away may be missing."""

    at: datetime
    reason: str
    after: str | None = None


@dataclass
class EventStream(Generic[T]):
    """Events of one subscription, reconnecting as the module describes. Iterate it once; ``aclose()`` (or
    ``async with``) closes its connection when you stop early."""

    open: Callable[[str | None], AsyncIterator[T]]
    key: Callable[[T], str] | None = None
    last_id: str | None = None
    max_attempts: int | None = None
    max_backoff: float = 30.0
    reconnects: int = 0
    gaps: list[Gap] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._iterator: Any = None

    def __aiter__(self) -> AsyncIterator[T]:
        if self._iterator is None:
            self._iterator = self._run()
        return self._iterator

    async def aclose(self) -> None:
        """Close the connection and end the stream (also done by ``async with stream:`` on exit)."""
        if self._iterator is not None:
            await self._iterator.aclose()

    async def __aenter__(self) -> EventStream[T]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _run(self) -> AsyncIterator[T]:
        seen: OrderedDict[str, None] = OrderedDict()
        failures = 0
        connected_once = False
        while True:
            if connected_once:
                self.reconnects += 1
                if self.key is None or self.last_id is None:
                    reason = "the stream cannot resume" if self.key is None else "no event had been received yet"
                    gap = Gap(
                        at=datetime.now(timezone.utc), reason=f"reconnected, {reason}: events may have been missed"
                    )
                    self.gaps.append(gap)
                    log.warning("%s", gap.reason, extra={"dynaforge_gap": gap})
            connected_once = True
            events = self.open(self.last_id if self.key is not None else None)
            try:
                async for item in events:
                    failures = 0
                    if self.key is not None:
                        ident = self.key(item)
                        if ident in seen:
                            continue
                        seen[ident] = None
                        if len(seen) > _SEEN:
                            seen.popitem(last=False)
                        self.last_id = ident
                    yield item
                reason = "the server closed the connection"
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                reason = self._transient_reason(exc)
            finally:  # closed here, in this task: never left to the garbage collector once the loop has gone
                close = getattr(events, "aclose", None)
                if close is not None:
                    with contextlib.suppress(Exception):
                        await close()
            failures += 1
            if self.max_attempts is not None and failures > self.max_attempts:
                raise errors.TransportError(f"gave up after {failures - 1} reconnection attempts: {reason}")
            delay = min(self.max_backoff, 0.5 * 2 ** (failures - 1)) * (0.5 + random.random() / 2)
            log.warning("event stream interrupted (%s); reconnecting in %.1f s", reason, delay)
            await asyncio.sleep(delay)

    @staticmethod
    def _transient_reason(exc: Exception) -> str:
        """Why the connection ended, when a new one may help; raises the exception when it would not."""
        close_code = getattr(getattr(exc, "rcvd", None), "code", None)
        if close_code is not None and close_code in _PERMANENT_CLOSE and close_code != _INIT_TIMEOUT_CLOSE:
            reason = getattr(exc.rcvd, "reason", "") or "refused"  # type: ignore[attr-defined]
            raise errors.DynaforgeError(f"the server closed the subscription ({close_code}: {reason})") from exc
        if isinstance(exc, GraphQLClientInvalidMessageFormat):
            raise errors.DynaforgeError(f"the server sent a message this client cannot read: {exc}") from exc
        error = translate(exc)
        if error is not None:
            if error.code not in _TRANSIENT_CODES:
                raise error from exc
            return str(error)
        if isinstance(exc, OSError | GraphQLClientError) or type(exc).__module__.startswith("websockets"):
            return f"{type(exc).__name__}: {exc}"
        raise exc
