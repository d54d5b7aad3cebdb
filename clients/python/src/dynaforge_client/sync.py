"""The blocking client: :class:`Client`, the surface of :class:`AsyncClient` for scripts and notebooks.

Each call runs on an event loop of the client's own, in a background thread, so it works where a loop is already
running (Jupyter) as well as in plain scripts. Event streams become plain iterators.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import inspect
import threading
from collections.abc import Iterator
from typing import Any, TypeVar

from .client import AsyncClient
from .events import EventStream

T = TypeVar("T")


class _Loop:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="dynaforge-client", daemon=True)
        self.thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.loop.close()


class SyncEventStream(Iterator[T]):
    """An :class:`~dynaforge_client.events.EventStream` as a blocking iterator (``for example in stream``, or
    ``stream.next(timeout=60)``); its ``last_id``, ``reconnects`` and ``gaps`` are the stream's. ``close()`` (or
    ``with``) ends it."""

    def __init__(self, stream: EventStream[T], loop: _Loop):
        self.stream = stream
        self._loop = loop
        self._iterator = loop.run(self._start())
        self._pending: concurrent.futures.Future[T] | None = None

    async def _start(self) -> Any:
        return self.stream.__aiter__()

    def next(self, timeout: float | None = None) -> T:
        """The next event; TimeoutError when none came within ``timeout`` seconds (the stream stays usable)."""
        if self._pending is None:
            self._pending = asyncio.run_coroutine_threadsafe(self._iterator.__anext__(), self._loop.loop)
        try:
            item = self._pending.result(timeout)
        except concurrent.futures.TimeoutError:
            raise TimeoutError(f"no event within {timeout} s") from None
        except StopAsyncIteration:
            self._pending = None
            raise StopIteration from None
        self._pending = None
        return item

    def __next__(self) -> T:
        return self.next()

    def __enter__(self) -> SyncEventStream[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            with contextlib.suppress(BaseException):
                self._pending.result(5)
            self._pending = None
        self._loop.run(self.stream.aclose())

    @property
    def last_id(self) -> str | None:
        return self.stream.last_id

    @property
    def reconnects(self) -> int:
        return self.stream.reconnects

    @property
    def gaps(self) -> list[Any]:
        return self.stream.gaps


class Client:
    """A Dynaforge server, blocking: ``Client(url, token)`` has every method of :class:`AsyncClient` with the same
    arguments, returning results instead of coroutines (``client.leaderboard("nli").to_pandas()``); ``model_fooled``
    and ``evaluation_progress`` return blocking iterators. Close it with ``close()`` or use ``with Client(...)``."""

    def __init__(self, url: str = "http://127.0.0.1:8000", token: str | None = None, **options: Any):
        self._loop = _Loop()
        self._async: AsyncClient = self._loop.run(self._make(url, token, options))

    @staticmethod
    async def _make(url: str, token: str | None, options: dict[str, Any]) -> AsyncClient:
        return AsyncClient(url, token, **options)  # httpx binds its pool to the loop that first uses it

    @property
    def token(self) -> str | None:
        return self._async.token

    @token.setter
    def token(self, value: str | None) -> None:
        self._async.token = value

    @property
    def base_url(self) -> str:
        return self._async.base_url

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections and stop the client's loop."""
        if self._loop.thread.is_alive():
            self._loop.run(self._async.aclose())
            self._loop.stop()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        target = getattr(self._async, name)
        if not callable(target):
            return target
        if inspect.iscoroutinefunction(target):

            @functools.wraps(target)
            def blocking(*args: Any, **kwargs: Any) -> Any:
                return self._loop.run(target(*args, **kwargs))

            return blocking

        @functools.wraps(target)
        def streaming(*args: Any, **kwargs: Any) -> Any:
            result = target(*args, **kwargs)
            return SyncEventStream(result, self._loop) if isinstance(result, EventStream) else result

        return streaming

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | {n for n in dir(self._async) if not n.startswith("_")})
