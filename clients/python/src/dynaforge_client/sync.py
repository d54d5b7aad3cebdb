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
from typing import TYPE_CHECKING, Any, TypeVar

from .client import AsyncClient
from .events import EventStream

T = TypeVar("T")

# surface imports: begin (written by scripts/sync_surface.py; do not edit)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from pathlib import Path

    from ._generated.adversaries import AdversariesTaskAdversaries
    from ._generated.answer_tutorial import AnswerTutorialAnswerTutorialTutorialAnswered
    from ._generated.dataset_items import DatasetItemsDatasetItemsNodes
    from ._generated.enums import ContextStrategy, TimeBucket, ValidationLabel, ValidationMode
    from ._generated.evaluation_progress import EvaluationProgressEvaluationProgress
    from ._generated.fragments import (
        AdversaryRunFields,
        CrowdPlatformFields,
        CrowdStudyFields,
        DatasetFields,
        ExampleFields,
        ModelFields,
        RoundFields,
        TaskFields,
        TutorialFields,
        UserFields,
        ValidatorQualityFields,
    )
    from ._generated.my_stats import MyStatsTaskViewerStats
    from ._generated.next_context import NextContextNextContext
    from ._generated.paired_test import PairedTestTaskPairedTest
    from ._generated.pay_crowd_bonuses import PayCrowdBonusesPayCrowdBonusesCrowdBonusesPaid
    from ._generated.record_crowd_bonuses import RecordCrowdBonusesRecordCrowdBonusesCrowdBonusesRecorded
    from ._generated.round_analytics import RoundAnalyticsTaskRoundAnalytics
    from ._generated.suggest_edits import SuggestEditsSuggestEditsEditsSuggested
    from ._generated.task import TaskTask
    from .client import Progress
    from .results import Leaderboard, ModelResults
# surface imports: end


#: How long work still scheduled on the client's loop (closing a websocket, say) may take when the client closes.
FINISH_S = 2.0


class _Loop:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="dynaforge-client", daemon=True)
        self.thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        """End the loop as ``asyncio.run`` does: the work still scheduled (a subscription's generator that the loop
        finalises after its stream closed, say, shutting its websocket) gets a moment to finish, what remains is
        cancelled and awaited, and the loop's async generators are closed; then the loop stops."""
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._finish(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.loop.close()

    async def _finish(self) -> None:
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        if others:
            _, late = await asyncio.wait(others, timeout=FINISH_S)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        await self.loop.shutdown_asyncgens()


async def _wait_for(task: asyncio.Task[T]) -> T:
    """The task's result; cancelling the wait leaves the task running."""
    return await asyncio.shield(task)


class SyncEventStream(Iterator[T]):
    """An :class:`~dynaforge_client.events.EventStream` as a blocking iterator (``for example in stream``, or
    ``stream.next(timeout=60)``); its ``last_id``, ``reconnects`` and ``gaps`` are the stream's. ``close()`` (or
    ``with``) ends it."""

    def __init__(self, stream: EventStream[T], loop: _Loop):
        self.stream = stream
        self._loop = loop
        self._iterator = loop.run(self._start())
        #: the read in progress, an asyncio task on the client's loop: a timed-out ``next`` leaves it running, so
        #: the next call picks up its event and ``close`` cancels it there before closing the stream
        self._pending: asyncio.Task[T] | None = None

    async def _start(self) -> Any:
        return self.stream.__aiter__()

    async def _read(self) -> asyncio.Task[T]:
        if self._pending is None:
            self._pending = asyncio.ensure_future(self._iterator.__anext__())
        return self._pending

    def next(self, timeout: float | None = None) -> T:
        """The next event; TimeoutError when none came within ``timeout`` seconds (the stream stays usable)."""
        pending = self._loop.run(self._read())
        waiting = asyncio.run_coroutine_threadsafe(_wait_for(pending), self._loop.loop)
        try:
            item = waiting.result(timeout)
        except concurrent.futures.TimeoutError:
            waiting.cancel()  # the read itself goes on (shielded) for the next call
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
        """End the stream and close its connection (also after a ``next`` that timed out)."""
        self._loop.run(self._close())

    async def _close(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None and not pending.done():
            pending.cancel()  # on the loop, and waited for: the stream is idle before it is closed
            with contextlib.suppress(BaseException):
                await pending
        await self.stream.aclose()

    @property
    def last_id(self) -> str | None:
        return self.stream.last_id

    @property
    def reconnects(self) -> int:
        return self.stream.reconnects

    @property
    def gaps(self) -> list[Any]:
        return self.stream.gaps


class SyncIterator(Iterator[T]):
    """An async generator of the client (``stream_export``) as a blocking iterator; ``close()`` ends it early."""

    def __init__(self, iterator: Any, loop: _Loop):
        self._iterator = iterator
        self._loop = loop

    def __next__(self) -> T:
        try:
            return self._loop.run(self._iterator.__anext__())
        except StopAsyncIteration:
            raise StopIteration from None

    def close(self) -> None:
        self._loop.run(self._iterator.aclose())


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
        if inspect.isasyncgenfunction(target):

            @functools.wraps(target)
            def iterating(*args: Any, **kwargs: Any) -> Any:
                return SyncIterator(target(*args, **kwargs), self._loop)

            return iterating
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

    # surface: begin (written by scripts/sync_surface.py from AsyncClient; do not edit)
    # fmt: off
    if TYPE_CHECKING:  # the methods Client forwards to AsyncClient, blocking
        def login(self, username: str, password: str) -> UserFields: ...
        def register(self, username: str, email: str, password: str) -> UserFields: ...
        def me(self) -> UserFields | None: ...
        def tasks(self) -> list[TaskFields]: ...
        def task(self, code: str) -> TaskTask: ...
        def round(self, task: str, number: int | None = None) -> RoundFields: ...
        def stats(self, task: str) -> MyStatsTaskViewerStats: ...
        def datasets(self, task: str) -> list[DatasetFields]: ...
        def dataset_items(self, dataset: Any) -> list[DatasetItemsDatasetItemsNodes]: ...
        def create_round_datasets(self, task: str, round: int, *, seed: int = 0) -> list[DatasetFields]: ...
        def execute(self, query: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]: ...
        def next_context(
            self,
            task: str,
            *,
            tag: str | None = None,
            strategy: str | ContextStrategy | None = None,
        ) -> NextContextNextContext | None: ...
        def create_example(
            self,
            task: str,
            fields: Mapping[str, Any],
            *,
            context: Any = None,
            tag: str | None = None,
            time_taken_ms: int | None = None,
            suggestion: Any = None,
            on_reply: Callable[[str], None] | None = None,
            allow_near_duplicate: bool = False,
        ) -> ExampleFields: ...
        def overrule_verdict(self, example: Any, *, fooled: bool, reason: str) -> ExampleFields: ...
        def example(self, example: Any) -> ExampleFields: ...
        def example_to_validate(self, task: str, *, mode: str | ValidationMode = 'CROWD') -> ExampleFields | None: ...
        def validate(
            self,
            example: Any,
            label: str | ValidationLabel,
            *,
            corrected_target: Mapping[str, Any] | None = None,
            reason: str | None = None,
            time_taken_ms: int | None = None,
        ) -> ExampleFields: ...
        def withdraw_validation(self, example: Any) -> ExampleFields: ...
        def tutorial(self, task: str) -> TutorialFields: ...
        def answer_tutorial(
            self,
            item: Any,
            label: str | ValidationLabel,
        ) -> AnswerTutorialAnswerTutorialTutorialAnswered: ...
        def restart_tutorial(self, task: str) -> TutorialFields: ...
        def round_analytics(
            self,
            task: str,
            round: int,
            bucket: str | TimeBucket = TimeBucket.HOUR,
        ) -> RoundAnalyticsTaskRoundAnalytics: ...
        def validator_quality(self, task: str, round: int | None = None) -> ValidatorQualityFields: ...
        def set_validator_weights(self, task: str, weights: Mapping[str, float]) -> ValidatorQualityFields: ...
        def model_fooled(
            self,
            task: str,
            *,
            after: Any = None,
            max_attempts: int | None = None,
            max_backoff: float = 30.0,
        ) -> SyncEventStream[ExampleFields]: ...
        def adversaries(self, task: str) -> list[AdversariesTaskAdversaries]: ...
        def suggest_edits(
            self,
            task: str,
            draft: Mapping[str, Any],
            *,
            context: Any = None,
            adversary: str | None = None,
            limit: int = 3,
        ) -> SuggestEditsSuggestEditsEditsSuggested: ...
        def generate_candidates(
            self,
            task: str,
            adversary: str,
            budget: int,
            *,
            seed: int | None = None,
        ) -> AdversaryRunFields: ...
        def generation_run(self, run: Any) -> AdversaryRunFields: ...
        def wait_for_generation(
            self,
            run: Any,
            *,
            timeout: float | None = None,
            interval: float = 1.0,
        ) -> AdversaryRunFields: ...
        def cancel_generation(self, run: Any) -> AdversaryRunFields: ...
        def crowd_platforms(self) -> list[CrowdPlatformFields]: ...
        def crowd_studies(self, task: str) -> list[CrowdStudyFields]: ...
        def crowd_study(self, study: Any) -> CrowdStudyFields: ...
        def create_crowd_study(
            self,
            task: str,
            *,
            platform: str,
            external_id: str,
            name: str,
            completion_code: str,
            currency: str = 'GBP',
            pay_per_verified_fooling: int = 0,
            pay_per_agreeing_validation: int = 0,
            minimum_examples: int = 0,
            minimum_validations: int = 0,
        ) -> CrowdStudyFields: ...
        def set_crowd_study_open(self, study: Any, is_open: bool) -> CrowdStudyFields: ...
        def pay_crowd_bonuses(self, study: Any) -> PayCrowdBonusesPayCrowdBonusesCrowdBonusesPaid: ...
        def crowd_bonus_file(self, study: Any) -> str: ...
        def record_crowd_bonuses(
            self,
            study: Any,
            reference: str,
            bonuses: Mapping[str, int] | str,
        ) -> RecordCrowdBonusesRecordCrowdBonusesCrowdBonusesRecorded: ...
        def submit_model(
            self,
            task: str,
            *,
            path: str | Path | None = None,
            url: str | None = None,
            name: str | None = None,
            card: Mapping[str, Any] | None = None,
            options: Mapping[str, Any] | None = None,
            backend: str | None = None,
            config: Mapping[str, Any] | None = None,
            published: bool = False,
            anonymous: bool = False,
            progress: Progress | None = None,
        ) -> ModelFields: ...
        def upload_predictions(
            self,
            task: str,
            dataset: str,
            predictions: Iterable[Mapping[str, Any]],
            *,
            name: str,
            card: Mapping[str, Any] | None = None,
            published: bool = False,
            anonymous: bool = False,
        ) -> ModelFields: ...
        def results(self, model: Any) -> ModelResults: ...
        def evaluation_progress(
            self,
            model: Any,
            *,
            max_attempts: int | None = None,
        ) -> SyncEventStream[EvaluationProgressEvaluationProgress]: ...
        def wait_for_results(
            self,
            model: Any,
            *,
            timeout: float | None = None,
            on_progress: Callable[[EvaluationProgressEvaluationProgress], object] | None = None,
            on_results: Callable[[ModelResults], object] | None = None,
        ) -> ModelResults: ...
        def leaderboard(
            self,
            task: str,
            weights: Mapping[str, float] | None = None,
            *,
            dataset_weights: Mapping[str, float] | None = None,
            sort_metric: str | None = None,
        ) -> Leaderboard: ...
        def item_predictions(self, evaluation: Any) -> list[dict[str, Any]]: ...
        def paired_test(self, task: str, model: Any, against: Any, dataset: Any) -> PairedTestTaskPairedTest: ...
        def export(
            self,
            task: str,
            round: int | None = None,
            *,
            status: str | None = None,
            records: bool = False,
            progress: Progress | None = None,
        ) -> Any: ...
        def download_export(
            self,
            task: str,
            path: str | Path,
            round: int | None = None,
            *,
            status: str | None = None,
            format: str = 'jsonl',
            progress: Progress | None = None,
        ) -> Path: ...
        def stream_export(
            self,
            task: str,
            round: int | None = None,
            *,
            status: str | None = None,
            format: str = 'jsonl',
            progress: Progress | None = None,
        ) -> SyncIterator[bytes]: ...
    # fmt: on
    # surface: end
