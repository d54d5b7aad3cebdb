"""Handing queued evaluations to the job system, for every service that queues them (submissions, data sets)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from sqlalchemy import func, select
from sqlmodel import col

from dynaforge.db.models import Evaluation, EvaluationStatus
from dynaforge.services import announce
from dynaforge.services.job_queue import BrokerUnavailable
from dynaforge.services.platform import Platform

log = logging.getLogger(__name__)


def enqueue(p: Platform, evaluation_ids: Sequence[int] | Sequence[Sequence[int]]) -> None:
    """Send the evaluations to the job system, if this process runs one: a flat list as one job (one model's sets:
    the model is loaded once for all of them), a list of groups (one per model) as a job each. A broker that is
    down is logged, not raised: the submission is stored, and queued evaluations are sent again when a server
    starts."""
    if p.jobs is None or not evaluation_ids:
        return
    try:
        p.jobs.enqueue(evaluation_ids)
    except BrokerUnavailable as exc:
        log.error("evaluations %s stay queued: %s", evaluation_ids, exc)


async def queue(p: Platform, task_id: int, evaluation_ids: Sequence[int] | Sequence[Sequence[int]]) -> None:
    """Newly queued evaluations of the task ``task_id`` (committed): :func:`enqueue` them, and tell the task's
    ``evaluationUpdated`` subscribers."""
    enqueue(p, evaluation_ids)
    flat = [i for item in evaluation_ids for i in (item if isinstance(item, Sequence) else [item])]
    await announce.updated(p, "evaluationUpdated", task_id, flat)


async def send_unsent(p: Platform, *, limit: int = 500) -> int:
    """Send the queued evaluations that no process sent to this process's job system (a server with the embedded
    worker sweeps for them: ``dynaforge datasets import`` run beside it queues evaluations in a process without
    jobs). The job system remembers what it sent, so a queued evaluation is sent once, whoever finds it first; at
    most ``limit`` are sent at a time, grouped by model (a job each, loading the model once). Returns how many."""
    if p.jobs is None:
        return 0
    began = time.monotonic()
    async with p.db.session() as s:
        rows = (
            await s.execute(
                select(col(Evaluation.id), col(Evaluation.model_id))
                .where(col(Evaluation.status) == EvaluationStatus.QUEUED)
                .order_by(col(Evaluation.id))
            )
        ).all()
    p.jobs.forget_sent({evaluation_id for evaluation_id, _ in rows}, began)
    unsent = [(evaluation_id, model_id) for evaluation_id, model_id in rows if evaluation_id not in p.jobs.sent]
    by_model: dict[int, list[int]] = {}
    for evaluation_id, model_id in unsent[:limit]:
        by_model.setdefault(model_id, []).append(evaluation_id)
    if by_model:
        log.info("sending %d queued evaluations that no process sent", min(len(unsent), limit))
        enqueue(p, list(by_model.values()))
    return min(len(unsent), limit)


async def queued_on(p: Platform, dataset_ids: list[int]) -> int:
    """How many evaluations on the data sets wait for a worker."""
    if not dataset_ids:
        return 0
    async with p.db.session() as s:
        count = await s.scalar(
            select(func.count())
            .select_from(Evaluation)
            .where(col(Evaluation.dataset_id).in_(dataset_ids), col(Evaluation.status) == EvaluationStatus.QUEUED)
        )
    return int(count or 0)
