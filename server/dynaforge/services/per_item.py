"""Evaluations item by item: what a model answered on each item of a data set, and paired tests between two models.

Every evaluation keeps its model's raw outputs (:mod:`dynaforge.services.outputs`); these read them back with the
set's items, judged by the task's own rule (``Task.is_fooled``, what decided ``fooled`` when the items were written
and what the evaluation's fooling rate counts), so that a "better" on a board can be checked:

* :func:`item_predictions` is every item with its gold, the model's output, the task's reading of it and whether the
  model was right: for those who may see both the set's gold and the model's evaluations (the task's owners and
  admins always; the model's submitter on a STANDARD set, whose gold everyone who sees the task reads).
* :func:`paired_test` compares two models on the same items: McNemar's exact test on who was right where, and a
  paired bootstrap of the principal metric. The task's owners and admins (it names unpublished candidates).
* :func:`adjacent_tests` runs McNemar's test between each two neighbours of a board, on the items the board's
  figures come from: whether a rank above another means more than chance. Anyone who sees the board.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from sqlmodel import col, select

from dynaforge.db.models import Dataset, DatasetAccess, DatasetItem, Evaluation, EvaluationStatus, ModelRow
from dynaforge.errors import Conflict, Forbidden, InvalidInput, NotFound
from dynaforge.evaluation import scoring
from dynaforge.evaluation.variants import copy_gold
from dynaforge.services import tasks as task_service
from dynaforge.services import visibility
from dynaforge.services.actor import Actor, require_user
from dynaforge.services.outputs import Outputs, read_outputs
from dynaforge.services.platform import Platform
from dynaforge.tasks.base import Task


@dataclass(frozen=True)
class ItemResult:
    """One item of an evaluated set: its gold, the model's output as given, the task's reading of it (None: the
    task could not read it, ``unusable`` says why), and whether the model was fooled there (an unusable output
    counts as fooled, as in the evaluation's figures)."""

    item: DatasetItem
    output: Any
    prediction: dict[str, Any] | None
    unusable: str | None
    fooled: bool

    @property
    def right(self) -> bool:
        return not self.fooled


@dataclass(frozen=True)
class ItemPredictions:
    """An evaluation's items, judged: see :func:`item_predictions`."""

    evaluation: Evaluation
    model: ModelRow
    dataset: Dataset
    task: Task
    results: list[ItemResult]

    @property
    def basename(self) -> str:
        """A file name without extension: the task, the model and the set."""
        return f"{self.task.code}-model{self.model.id}-{self.dataset.name}-predictions".replace("/", "_")


def judge(task: Task, read: Outputs) -> list[ItemResult]:
    """Each item with the task's verdict on the model's output (:func:`dynaforge.evaluation.scoring.fooled_flags`,
    what the evaluation's fooling rate counts)."""
    flags = scoring.fooled_flags(task, [i.fields for i in read.items], read.predictions)
    return [
        ItemResult(item, output, prediction, why, fooled)
        for item, output, prediction, why, fooled in zip(
            read.items, read.raw, read.predictions, read.why, flags, strict=True
        )
    ]


async def _done_evaluation(p: Platform, model_id: int, dataset_id: int) -> Evaluation:
    async with p.db.session() as s:
        evaluation = await s.scalar(
            select(Evaluation).where(col(Evaluation.model_id) == model_id, col(Evaluation.dataset_id) == dataset_id)
        )
    if evaluation is None:
        raise NotFound(f"Model {model_id} has no evaluation on data set {dataset_id}")
    return _require_done(evaluation)


def _require_done(evaluation: Evaluation) -> Evaluation:
    if evaluation.status != EvaluationStatus.DONE:
        raise Conflict(
            f"Model {evaluation.model_id}'s evaluation on data set {evaluation.dataset_id} is {evaluation.status}, "
            "not DONE: wait for it (evaluationUpdated says when)"
        )
    return evaluation


def _gold_kept(p: Platform, dataset: Dataset) -> None:
    effect = copy_gold(dataset, p.plugins.registry)
    if effect != "kept":
        raise InvalidInput(
            f"Data set {dataset.name} is a perturbed copy whose gold its perturbation does not keep ({effect}): "
            "nothing on it is right or wrong; use its original"
        )


async def _read(p: Platform, task: Task, evaluation: Evaluation) -> Outputs:
    try:
        return await read_outputs(p.db, evaluation.id, task, evaluation.dataset_id)
    except RuntimeError as exc:  # outputs of an evaluation recorded before they were all kept, or cut short
        raise Conflict(f"Evaluation {evaluation.id}'s outputs are incomplete ({exc})") from None


async def item_predictions(p: Platform, actor: Actor, evaluation_id: int) -> ItemPredictions:
    """An evaluation's items with the model's outputs, judged (:class:`ItemResult`), in the set's order.

    For signed-in users who may see the set's gold and the model's evaluations: the task's owners and admins, and
    the model's submitter where the set is STANDARD (its gold is public); NotFound for an evaluation the caller
    cannot see at all, Forbidden for one whose gold they may not read (a SCORING or HIDDEN set's stays secret),
    Conflict while it is not DONE."""
    actor = require_user(actor)
    async with p.db.session() as s:
        evaluation = await s.get(Evaluation, evaluation_id)
        model = None if evaluation is None else await s.get(ModelRow, evaluation.model_id)
        dataset = None if evaluation is None else await s.get(Dataset, evaluation.dataset_id)
        owner = model is not None and await task_service.is_owner(s, actor, model.task_id)
    missing = NotFound(f"No evaluation {evaluation_id} that you can see")
    if evaluation is None or model is None or dataset is None:
        raise missing
    submitter = model.user_id == actor.user_id
    if not (owner or submitter):
        raise missing
    view = await task_service.visible_task(p, actor, model.task_id)
    if not owner and dataset.access != DatasetAccess.STANDARD:
        raise Forbidden(
            f"Data set {dataset.name} is {dataset.access}: its gold is for the task's owners and admins, so are its "
            "per-item results"
        )
    _gold_kept(p, dataset)
    done = _require_done(evaluation)
    # a download reads every output of the set: counted with the exports (DYNAFORGE_EXPORTS_PER_MINUTE)
    await p.limiter.hit(f"exports:{actor.user_id}", p.settings.exports_per_minute, 60.0, "exports")
    task = p.plugins.task(view.task.code) or view.task  # scored as the evaluation job scores: the plugin's rule
    read = await _read(p, task, done)
    return ItemPredictions(done, model, dataset, task, judge(task, read))


@dataclass(frozen=True)
class PairedTest:
    """Two models on the same data set: McNemar's exact test on the items each got right, and a paired bootstrap
    of the task's principal metric (first minus second)."""

    dataset: Dataset
    first: ModelRow
    second: ModelRow
    mcnemar: scoring.McNemar
    difference: scoring.PairedDifference


async def paired_test(
    p: Platform, actor: Actor, task_code: str, first_id: int, second_id: int, dataset_id: int
) -> PairedTest:
    """McNemar's exact test and a paired bootstrap of the principal metric between two models' evaluations on one of
    the task's data sets (the bootstrap seeded by the set's id, as its intervals are). The task's owners and admins.
    InvalidInput for the same model twice, or a model or set of another task; Conflict until both are DONE."""
    actor = require_user(actor)
    view = await task_service.get_task(p, actor, task_code)
    async with p.db.session() as s:
        if not await task_service.is_owner(s, actor, view.row.id):
            raise Forbidden(f"Only owners of {task_code} and admins can compare models item by item")
        first, second = await s.get(ModelRow, first_id), await s.get(ModelRow, second_id)
        dataset = await s.get(Dataset, dataset_id)
    for name, row, value in (("model", first, first_id), ("against", second, second_id)):
        if row is None or row.task_id != view.row.id:
            raise NotFound(f"No model {value} of task {task_code} ({name})")
    if dataset is None or dataset.task_id != view.row.id:
        raise NotFound(f"No data set {dataset_id} of task {task_code}")
    assert first is not None and second is not None
    if first.id == second.id:
        raise InvalidInput("A paired test compares two different models: `model` and `against` are the same")
    _gold_kept(p, dataset)
    task = p.plugins.task(view.task.code) or view.task
    reads = [await _read(p, task, await _done_evaluation(p, m.id, dataset.id)) for m in (first, second)]
    judged = [judge(task, r) for r in reads]
    golds = [i.fields for i in reads[0].items]
    resamples = p.settings.eval_bootstrap_resamples

    def compute() -> tuple[scoring.McNemar, scoring.PairedDifference]:
        tested = scoring.mcnemar([r.right for r in judged[0]], [r.right for r in judged[1]])
        difference = scoring.paired_bootstrap(
            task,
            None,
            golds,
            reads[0].predictions,
            reads[1].predictions,
            metrics=p.plugins.registry.metrics,
            seed=dataset.id,
            resamples=resamples,
        )
        return tested, difference

    tested, difference = await asyncio.to_thread(compute)  # a thousand resamples: off the event loop
    return PairedTest(dataset, first, second, tested, difference)


@dataclass(frozen=True)
class AdjacentTest:
    """McNemar's exact test between two models next to each other on a board (``upper`` ranked above ``lower``),
    on the items of the board's scoring sets both were evaluated on: the items whose figures the board shows (the
    public part of a scoring set until its round ends, its private part after). ``test`` is None when the two share
    no such item (an evaluation not DONE, or its outputs not kept)."""

    upper: int
    lower: int
    datasets: list[str]
    test: scoring.McNemar | None


async def adjacent_tests(
    p: Platform, actor: Actor, task_code: str, model_ids: list[int], dataset_names: list[str]
) -> list[AdjacentTest]:
    """One :class:`AdjacentTest` per pair of consecutive models of ``model_ids`` (a board's ranked rows, best
    first) on the task's scoring sets named ``dataset_names`` (the board's weighted sets). Anyone who sees the task
    and the board: the test reads only who was right where on the items whose figures the board already shows, not
    which items those are or their gold. Each model's outputs on a set are read once."""
    view = await task_service.get_task(p, actor, task_code)
    task = p.plugins.task(view.task.code) or view.task
    if len(model_ids) < 2 or not dataset_names:
        return []
    async with p.db.session() as s:
        sets = list(
            await s.scalars(
                select(Dataset).where(
                    col(Dataset.task_id) == view.row.id,
                    col(Dataset.name).in_(dataset_names),
                    col(Dataset.parent_id).is_(None),
                    col(Dataset.access) == DatasetAccess.SCORING,
                )
            )
        )
        evaluations = {
            (e.model_id, e.dataset_id): e
            for e in await s.scalars(
                select(Evaluation).where(
                    col(Evaluation.model_id).in_(model_ids),
                    col(Evaluation.dataset_id).in_([d.id for d in sets]),
                    col(Evaluation.status) == EvaluationStatus.DONE,
                )
            )
        }
        ended = await visibility.ended_rounds(s, sets)
    sets.sort(key=lambda d: dataset_names.index(d.name))
    shown: dict[int, list[bool]] = {}
    for dataset in sets:
        share = visibility.public_share(dataset, p.settings.scoring_public_share)
        public = visibility.public_part(dataset, share) if share < 1 else [True] * dataset.size
        released = visibility.held_released(dataset, dataset.round_id in ended)
        shown[dataset.id] = [not flag for flag in public] if released and share < 1 else public
    rights: dict[tuple[int, int], list[bool] | None] = {}

    async def right(model_id: int, dataset: Dataset) -> list[bool] | None:
        key = (model_id, dataset.id)
        if key not in rights:
            evaluation = evaluations.get(key)
            judged = None
            if evaluation is not None:
                try:
                    judged = judge(task, await _read(p, task, evaluation))
                except Conflict:  # outputs not kept (an older evaluation): no item to pair
                    judged = None
            flags = shown[dataset.id]
            rights[key] = (
                None
                if judged is None or len(judged) != len(flags)
                else [r.right for r, keep in zip(judged, flags, strict=True) if keep]
            )
        return rights[key]

    out = []
    for upper, lower in zip(model_ids, model_ids[1:], strict=False):
        first: list[bool] = []
        second: list[bool] = []
        used = []
        for dataset in sets:
            a, b = await right(upper, dataset), await right(lower, dataset)
            if a is None or b is None:
                continue
            first += a
            second += b
            used.append(dataset.name)
        out.append(AdjacentTest(upper, lower, used, scoring.mcnemar(first, second) if first else None))
    return out
