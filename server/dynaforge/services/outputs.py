"""What an evaluation's model answered, item by item: the outputs its job stored, read by the task.

Evaluation jobs keep every raw output (``EvaluationChunk.outputs``, one chunk after another, in the data set's item
order). The runner scores them; the paired tests (:mod:`dynaforge.services.paired`) and the per-item predictions'
download read them again, the same way.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from sqlmodel import col, select

from dynaforge.db.engine import Database
from dynaforge.db.models import DatasetItem, EvaluationChunk
from dynaforge.tasks.base import Task


def unusable_reason(exc: Exception) -> str:
    """Why the task could not read an output, as one line of at most 300 characters (outputs that fail alike share
    their reason)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:299] + "…"


@dataclass(frozen=True)
class Outputs:
    """What :func:`read_outputs` reads of an evaluation: its set's items, the task's reading of each output (None:
    unusable), the seconds spent predicting, the unusable ones' reasons with how many had each, and the outputs as
    the model gave them."""

    items: list[DatasetItem]
    predictions: list[dict[str, Any] | None]
    seconds: float
    reasons: Counter[str]
    raw: list[Any]
    #: why each unusable output was (None where the task read it)
    why: list[str | None]


async def read_outputs(db: Database, evaluation_id: int, task: Task, dataset_id: int) -> Outputs:
    """The data set's items, the task's reading of every stored output (None where the task could not read it: an
    unusable answer, which counts as wrong and as inconsistent), the seconds spent predicting, and why the unusable
    ones were, by reason. RuntimeError when the stored outputs do not cover the items (the run was cut short)."""
    from dynaforge.tasks.outputs import read_output

    async with db.session() as s:
        chunks = list(
            await s.scalars(
                select(EvaluationChunk)
                .where(col(EvaluationChunk.evaluation_id) == evaluation_id)
                .order_by(col(EvaluationChunk.chunk))
            )
        )
        items = list(
            await s.scalars(
                select(DatasetItem).where(col(DatasetItem.dataset_id) == dataset_id).order_by(col(DatasetItem.position))
            )
        )
    outputs = [o for c in chunks for o in c.outputs]
    if len(outputs) != len(items):
        raise RuntimeError(f"{len(outputs)} stored outputs for {len(items)} items; run the evaluation again")
    predictions: list[dict[str, Any] | None] = []
    why: list[str | None] = []
    reasons: Counter[str] = Counter()
    for item, output in zip(items, outputs, strict=True):
        model_input = task.build_model_input(*task.split_fields(item.fields))
        try:
            predictions.append(read_output(task, output, model_input))
            why.append(None)
        except (ValueError, TypeError) as exc:
            predictions.append(None)  # an unusable answer counts as wrong
            reason = unusable_reason(exc)
            reasons[reason] += 1
            why.append(reason)
    return Outputs(items, predictions, sum(c.seconds for c in chunks), reasons, outputs, why)
