"""The job system as the services see it: what a process that runs background work offers (:class:`JobQueue`), and
the one error a send may raise. ``dynaforge.jobs.Jobs`` (dramatiq) is the implementation; the services never import
it (it sits above them: its actors run the services' evaluations, trainings and deliveries)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class BrokerUnavailable(RuntimeError):
    """The job broker could not be reached; the message was not sent (what was asked stays queued in the
    database, and is sent again when a server starts)."""


class JobQueue(Protocol):
    """Background work of this process. Every send raises :class:`BrokerUnavailable` when the broker is down."""

    #: evaluation id -> when it was sent (``time.monotonic()``), so a queued evaluation is sent once
    sent: dict[int, float]

    @property
    def embedded(self) -> bool:
        """The worker runs in this process (the embedded default), not in ``dynaforge worker`` processes."""
        ...

    def enqueue(self, evaluation_ids: Sequence[int] | Sequence[Sequence[int]]) -> None:
        """Evaluations: a flat list as one message (its model loaded once), a list of groups as one per group."""
        ...

    def forget_sent(self, still_queued: set[int], before: float) -> None:
        """Forget the evaluations sent before ``before`` that are no longer queued."""
        ...

    def train(self, job_id: int) -> None:
        """A training job."""
        ...

    def generate(self, run_id: int) -> None:
        """A generation run (where the worker is not in this process)."""
        ...

    def send_webhooks(self, delivery_ids: list[int]) -> None:
        """One message per webhook delivery."""
        ...

    def collect_artifacts(self) -> None:
        """Delete the model artifacts nothing names."""
        ...

    def start_worker(self, threads: int = 1) -> None:
        """Consume in this process."""
        ...

    def stop(self) -> None:
        """Stop consuming and close the broker."""
        ...
