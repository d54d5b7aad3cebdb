"""Micro-batching of single predictions from concurrent annotators.

Each loaded model has a :class:`MicroBatcher`. Requests wait in its queue; one loop per model takes a batch and
runs it on the inference thread. A batch closes when ``max_batch`` items are waiting or ``window_s`` has passed
since its first item, whichever comes first. The window is adaptive: when the model is idle and a lone request
arrives after lone requests (one annotator at a time), it runs at once, so batching never adds latency without
concurrency; as soon as requests overlap, the batcher waits up to the window to gather more.

Within a batch, items are sorted by length and split into groups whose longest item is at most ``spread`` times
their shortest, so a short sentence is not padded to the length of a long passage. Items whose deadline has
passed before their group runs are answered with a timeout instead of spending model time on them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from dynaforge.inference.backends import InferenceError, InferenceTimeout

log = logging.getLogger(__name__)

# The most inputs in one forward pass, unless configured. On a CPU the cost per input stops falling at about 8
# (MiniLM-L6, one thread, 2-core EPYC: 11.8 ms for one input alone, 7.3 ms per input at 8 and at 32), so larger passes
# only hold every answer until the slowest is done; a GPU gains from larger ones (DYNAFORGE_BATCH_MAX_SIZE).
DEFAULT_MAX_BATCH = 8


@dataclass
class _Item:
    model_input: dict[str, Any]
    length: int
    deadline: float
    future: asyncio.Future = field(repr=False)


@dataclass
class BatchStats:
    batches: int = 0
    items: int = 0
    forward_passes: int = 0
    expired: int = 0
    largest: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "batches": self.batches,
            "items": self.items,
            "forward_passes": self.forward_passes,
            "expired": self.expired,
            "largest": self.largest,
            "mean_batch": round(self.items / self.batches, 2) if self.batches else 0.0,
        }


def group_by_length(lengths: list[int], spread: float) -> list[list[int]]:
    """Indices grouped so that, within a group (sorted by length), longest <= spread * shortest."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    groups: list[list[int]] = []
    for i in order:
        if groups and lengths[i] <= spread * max(1, lengths[groups[-1][0]]):
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def default_length(model_input: dict[str, Any]) -> int:
    """A tokenizer-free estimate of an input's length in tokens: about four characters per token."""
    chars = sum(len(v) for v in model_input.values() if isinstance(v, str))
    return chars // 4 + 2


class MicroBatcher:
    """Collects single predictions for one model and runs them in batches on ``executor``."""

    def __init__(
        self,
        name: str,
        predict: Callable[[list[dict[str, Any]]], list[dict[str, Any]]],
        executor: Executor,
        *,
        length: Callable[[dict[str, Any]], int] | None = None,
        max_batch: int = DEFAULT_MAX_BATCH,
        window_s: float = 0.002,
        spread: float = 2.0,
    ):
        self.name = name
        self._predict = predict
        self._executor = executor
        self._length = length or default_length
        self.max_batch = max(1, max_batch)
        self.window_s = max(0.0, window_s)
        self.spread = max(1.0, spread)
        self._queue: list[_Item] = []
        self._arrived = asyncio.Event()
        self._last_batch = 1
        self._task: asyncio.Task | None = None
        self.stats = BatchStats()

    async def predict(self, inputs: list[dict[str, Any]], timeout_s: float) -> tuple[list[dict[str, Any]], int, float]:
        """Predict ``inputs`` (queued individually). Returns the outputs in order, the largest forward pass they
        shared, and the longest forward pass in milliseconds (model time, not queueing)."""
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + timeout_s
        items = []
        for model_input in inputs:
            try:
                length = int(self._length(model_input))
            except Exception:
                length = default_length(model_input)
            items.append(_Item(model_input, length, deadline, loop.create_future()))
        self._queue.extend(items)
        self._arrived.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=f"batcher:{self.name}")
        results = await asyncio.gather(*(item.future for item in items))
        return [r[0] for r in results], max(r[1] for r in results), max(r[2] for r in results)

    async def _gather(self) -> list[_Item]:
        """Wait for a first item, then (under concurrency) for more, up to the window or the cap."""
        while not self._queue:
            self._arrived.clear()
            await self._arrived.wait()
        concurrent = len(self._queue) > 1 or self._last_batch > 1
        if concurrent and self.window_s > 0 and len(self._queue) < self.max_batch:
            closes = time.monotonic() + self.window_s
            while len(self._queue) < self.max_batch:
                remaining = closes - time.monotonic()
                if remaining <= 0:
                    break
                self._arrived.clear()
                try:
                    await asyncio.wait_for(self._arrived.wait(), remaining)
                except TimeoutError:
                    break
        batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
        return batch

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = await self._gather()
            self._last_batch = len(batch)
            self.stats.batches += 1
            self.stats.items += len(batch)
            self.stats.largest = max(self.stats.largest, len(batch))
            for group in group_by_length([item.length for item in batch], self.spread):
                now = time.monotonic()
                items = []
                for i in group:
                    item = batch[i]
                    if item.future.done():
                        continue
                    if item.deadline <= now:
                        self.stats.expired += 1
                        item.future.set_exception(
                            InferenceTimeout(f"model {self.name!r} was busy; the request waited past its timeout")
                        )
                    else:
                        items.append(item)
                if not items:
                    continue
                self.stats.forward_passes += 1
                started = time.perf_counter()
                try:
                    outputs = await loop.run_in_executor(
                        self._executor, self._predict, [item.model_input for item in items]
                    )
                    if not isinstance(outputs, list) or len(outputs) != len(items):
                        raise InferenceError(
                            f"model {self.name!r} returned {type(outputs).__name__} of "
                            f"{len(outputs) if isinstance(outputs, list) else '?'} outputs for {len(items)} inputs"
                        )
                except Exception as exc:
                    error = (
                        exc
                        if isinstance(exc, InferenceError)
                        else InferenceError(f"model {self.name!r} failed: {type(exc).__name__}: {exc}")
                    )
                    for item in items:
                        if not item.future.done():
                            item.future.set_exception(error)
                    continue
                elapsed_ms = (time.perf_counter() - started) * 1000
                for item, output in zip(items, outputs, strict=True):
                    if not item.future.done():
                        item.future.set_result((output, len(items), elapsed_ms))

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        for item in self._queue:
            if not item.future.done():
                item.future.set_exception(InferenceError(f"model {self.name!r} is shutting down"))
        self._queue.clear()
