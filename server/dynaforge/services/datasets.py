"""Data sets that models are evaluated on: frozen copies of examples, with an access level.

A round's accepted examples become ``r{N}-train``, ``r{N}-dev`` and ``r{N}-test`` (a seeded shuffle, so the same
seed gives the same split). ``SCORING`` sets rank models on the leaderboard, ``STANDARD`` sets may be downloaded
whole, ``HIDDEN`` sets are scored for owners only. The gold targets of ``SCORING`` and ``HIDDEN`` sets never leave
the server except to the task's owners and admins: ``items`` strips them for everyone else.
"""

from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from sqlalchemy import delete, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from dynaforge import files
from dynaforge.db.models import (
    Context,
    Dataset,
    DatasetAccess,
    DatasetItem,
    Evaluation,
    EvaluationStatus,
    Example,
    ExampleStatus,
    ModelRow,
    ModelStatus,
    Round,
    TaskRow,
)
from dynaforge.errors import AlreadyExists, Conflict, FieldError, Forbidden, InvalidInput, NotFound
from dynaforge.evaluation.variants import iter_variants
from dynaforge.files import Problems
from dynaforge.services import cursors, visibility
from dynaforge.services import imports as import_service
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_user
from dynaforge.services.evaluation_jobs import queue
from dynaforge.services.evaluation_runner import Runner
from dynaforge.services.platform import Platform
from dynaforge.tasks.fields import Role

DEFAULT_SPLITS = (
    ("train", 0.8, DatasetAccess.STANDARD),
    ("dev", 0.1, DatasetAccess.STANDARD),
    ("test", 0.1, DatasetAccess.SCORING),
)
NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,99}$")
MAX_PAGE = 500


@dataclass(frozen=True)
class ItemPage:
    items: list[DatasetItem]
    gold_visible: bool
    listing: cursors.Listing  # where the page sits (its cursors are positions), and the set's size


def split_sizes(n: int, fractions: list[float]) -> list[int]:
    """Sizes that add up to ``n`` exactly: floors of the fractions, the remainder to the largest remainders."""
    raw = [n * f for f in fractions]
    sizes = [int(x) for x in raw]
    order = sorted(range(len(raw)), key=lambda i: (raw[i] - sizes[i], -i), reverse=True)
    for i in order[: n - sum(sizes)]:
        sizes[i] += 1
    return sizes


async def _owned_task(p: Platform, actor: Actor, code: str):
    actor = require_user(actor)
    view = await task_service.get_task(p, actor, code)
    async with p.db.session() as s:
        if not await task_service.is_owner(s, actor, view.row.id):
            raise Forbidden(f"Only owners of {code} and admins manage its data sets")
    return actor, view


async def build_from_round(
    p: Platform,
    actor: Actor,
    task_code: str,
    round_number: int,
    *,
    seed: int = 0,
    splits: tuple[tuple[str, float, str], ...] = DEFAULT_SPLITS,
) -> list[Dataset]:
    """Owners turn a round's accepted examples into train/dev/test data sets (by default the test split scores).

    A split of no example is not made. A scoring split of fewer than ``MIN_SCORING_SET_SIZE`` examples is made
    HIDDEN instead (its gold kept, nobody ranked on it): a handful of items decides nothing but the noise of its
    figures, and an empty scoring set would leave every model without figures."""
    actor, view = await _owned_task(p, actor, task_code)
    if abs(sum(f for _, f, _ in splits) - 1.0) > 1e-9 or any(f < 0 for _, f, _ in splits):
        raise InvalidInput.from_errors(
            [FieldError("splits", "fractions", "fractions must be at least 0 and add up to 1")]
        )
    if any(access not in DatasetAccess.ALL for _, _, access in splits):
        raise InvalidInput.from_errors(
            [FieldError("splits", "access", f"access must be one of {', '.join(DatasetAccess.ALL)}")]
        )
    async with p.db.write() as s:
        round_ = await s.scalar(
            select(Round).where(col(Round.task_id) == view.row.id, col(Round.number) == round_number)
        )
        if round_ is None:
            raise NotFound(f"Task {task_code} has no round {round_number}")
        names = [f"r{round_number}-{name}" for name, _, _ in splits]
        taken = list(
            await s.scalars(
                select(col(Dataset.name)).where(col(Dataset.task_id) == view.row.id, col(Dataset.name).in_(names))
            )
        )
        if taken:
            raise AlreadyExists(f"Data sets {', '.join(taken)} exist already; delete them first or use another round")
        rows = (
            await s.execute(
                select(col(Example.id), col(Example.fields), col(Context.fields))
                .outerjoin(Context, col(Context.id) == col(Example.context_id))
                .where(col(Example.round_id) == round_.id, col(Example.status) == ExampleStatus.ACCEPTED)
                .order_by(col(Example.id))
            )
        ).all()
        if not rows:
            raise InvalidInput.from_errors(
                [
                    FieldError(
                        "round",
                        "empty",
                        f"round {round_number} has no accepted examples yet; validate some first",
                    )
                ]
            )
        order = list(range(len(rows)))
        random.Random(seed).shuffle(order)
        sizes = split_sizes(len(rows), [f for _, f, _ in splits])
        made, start = [], 0
        minimum = p.settings.min_scoring_set_size
        for (name, _, access), size in zip(splits, sizes, strict=True):
            chosen = order[start : start + size]
            start += size
            if not size:
                continue
            description = f"Accepted examples of round {round_number}, {name} split (seed {seed})"
            if access == DatasetAccess.SCORING and size < minimum:
                access = DatasetAccess.HIDDEN
                description += (
                    f"; {size} examples are too few to rank models on (MIN_SCORING_SET_SIZE is {minimum}), so it is "
                    "hidden, not scoring"
                )
            dataset = Dataset(
                task_id=view.row.id,
                name=f"r{round_number}-{name}",
                description=description,
                access=access,
                source="round",
                round_id=round_.id,
                split=name,
                seed=seed,
                size=size,
                created_by=actor.user_id,
            )
            s.add(dataset)
            await s.flush()
            frozen = [(rows[i][0], {**(rows[i][2] or {}), **rows[i][1]}) for i in sorted(chosen)]
            await _add_items(s, dataset.id, frozen)
            made.append(dataset)
            if access == DatasetAccess.SCORING:
                made.extend(await _add_perturbed_copies(p, s, view.task, dataset, [f for _, f in frozen], actor))
        queued = await _evaluate_existing_models(s, view.row.id, [d.id for d in made if _scored(d, made) and d.size])
    await queue(p, view.row.id, queued)
    p.caches.boards.pop(view.row.id)  # the board's cached inputs (services.leaderboard.BoardData)
    return made


def _scored(dataset: Dataset, batch: list[Dataset]) -> bool:
    """A SCORING set, or a copy of one in the same batch: the sets every model of the task is evaluated on."""
    if dataset.access == DatasetAccess.SCORING and dataset.parent_id is None:
        return True
    return any(d.id == dataset.parent_id and d.access == DatasetAccess.SCORING for d in batch)


async def scoring_dataset_ids(s: AsyncSession, task_id: int) -> list[int]:
    """The data sets every model of the task is evaluated on: its scoring sets and their perturbed copies (not an
    empty one, such as the test split of a round with few examples: there is nothing to score)."""
    return list(
        await s.scalars(
            select(col(Dataset.id))
            .where(col(Dataset.task_id) == task_id, col(Dataset.size) > 0)
            .where(
                or_(
                    col(Dataset.access) == DatasetAccess.SCORING,
                    col(Dataset.parent_id).in_(
                        select(col(Dataset.id)).where(col(Dataset.access) == DatasetAccess.SCORING)
                    ),
                )
            )
            .order_by(col(Dataset.id))
        )
    )


async def _evaluate_existing_models(s: AsyncSession, task_id: int, dataset_ids: list[int]) -> list[list[int]]:
    """Queue an evaluation of every model of the task that has a backend (uploaded predictions cannot be run) on
    new scoring sets, so that a new round's test set or a new copy ranks the models already on the board; returns
    the new evaluations' ids by model (a job each, loading its model once), to be sent to the jobs once the
    transaction has committed."""
    if not dataset_ids:
        return []
    models = list(
        await s.scalars(
            select(col(ModelRow.id)).where(col(ModelRow.task_id) == task_id, col(ModelRow.backend).is_not(None))
        )
    )
    if not models:
        return []
    evaluations = [Evaluation(model_id=m, dataset_id=d) for m in models for d in dataset_ids]
    s.add_all(evaluations)
    await s.flush()
    await s.execute(update(ModelRow).where(col(ModelRow.id).in_(models)).values(status=ModelStatus.EVALUATING))
    return [[e.id for e in evaluations if e.model_id == m] for m in models]


async def _add_perturbed_copies(
    p: Platform, s: AsyncSession, task, parent: Dataset, fields: list[dict[str, Any]], actor: Actor
) -> list[Dataset]:
    """One copy of a scoring set per perturbation the task declares (robustness and fairness), seeded by the
    parent's seed; each item points at the item it was made from. Items a perturbation leaves unchanged have no
    copy, and a perturbation that changes nothing makes no data set. A copy's items are what
    :meth:`Task.perturb` made: an example-wide perturbation changes the context fields too, and one whose gold is
    ``dropped`` leaves the gold fields out (the description says when the gold is not kept)."""
    by_name: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    kinds: dict[str, str] = {}
    golds: dict[str, str] = {}
    variants = iter_variants(task, enumerate(fields), seed=parent.seed or 0, registry=p.plugins.registry)
    for variant in variants:
        by_name.setdefault(variant.perturbation, []).append((variant.original_id, variant.fields))
        kinds[variant.perturbation] = variant.kind
        golds[variant.perturbation] = variant.gold
    copies = []
    for name, items in sorted(by_name.items()):
        gold = "" if golds[name] == "kept" else f"; gold {golds[name]}: scored for consistency with the original only"
        copy = _copy_of(
            parent,
            name,
            kinds[name],
            len(items),
            actor,
            source="perturbed",
            description=f"{parent.name} perturbed by {name} ({kinds[name]}; seed {parent.seed}{gold})",
            gold=golds[name],
        )
        s.add(copy)
        await s.flush()
        await _add_items(s, copy.id, [(None, values) for _, values in items], [original for original, _ in items])
        copies.append(copy)
    return copies


def _copy_name(parent: Dataset, perturbation: str) -> str:
    return f"{parent.name}~{perturbation}"


def _copy_of(
    parent: Dataset,
    perturbation: str,
    kind: str,
    size: int,
    actor: Actor,
    *,
    source: str,
    description: str,
    gold: str | None = None,
) -> Dataset:
    """A perturbed copy's row: the parent's task, access, round, split and seed, linked to it; ``gold`` is what the
    perturbation does to the gold (None: kept)."""
    return Dataset(
        task_id=parent.task_id,
        name=_copy_name(parent, perturbation),
        description=description,
        access=parent.access,
        source=source,
        round_id=parent.round_id,
        split=parent.split,
        seed=parent.seed,
        public_share=parent.public_share,  # what it shows follows its original (visibility.public_part)
        parent_id=parent.id,
        perturbation=perturbation,
        perturbation_kind=kind,
        perturbation_gold=gold,
        size=size,
        created_by=actor.user_id,
    )


async def _add_items(
    s: AsyncSession,
    dataset_id: int,
    items: list[tuple[int | None, dict[str, Any]]],
    originals: list[int] | None = None,
) -> None:
    """Insert ``(example_id, fields)`` items at positions 0, 1, ... in batches of 500; ``originals`` gives a
    perturbed copy's item the position of the item it was made from."""
    for start in range(0, len(items), 500):
        await s.execute(
            insert(DatasetItem),
            [
                {
                    "dataset_id": dataset_id,
                    "position": position,
                    "example_id": example_id,
                    "fields": fields,
                    "original_position": originals[position] if originals is not None else None,
                }
                for position, (example_id, fields) in enumerate(items[start : start + 500], start)
            ],
        )


async def list_datasets(p: Platform, actor: Actor, task_code: str) -> list[Dataset]:
    """A task's data sets; HIDDEN ones only for its owners and admins."""
    view = await task_service.get_task(p, actor, task_code)
    async with p.db.session() as s:
        owner = await task_service.is_owner(s, actor, view.row.id)
        where = [col(Dataset.task_id) == view.row.id]
        if not owner:
            where.append(col(Dataset.access) != DatasetAccess.HIDDEN)
        return list(await s.scalars(select(Dataset).where(*where).order_by(col(Dataset.name))))


async def datasets_page(
    p: Platform,
    actor: Actor,
    task_code: str,
    *,
    first: int | None = None,
    after: str | None = None,
    last: int | None = None,
    before: str | None = None,
) -> cursors.Listing:
    """A page of a task's data sets, oldest first (a round's sets and their perturbed copies together); HIDDEN ones
    only for its owners and admins. Up to 100 a page, 100 by default."""
    request = cursors.PageRequest.of(
        "dataset", first=first, after=after, last=last, before=before, max_size=p.settings.page_max_size, default=100
    )
    view = await task_service.get_task(p, actor, task_code)
    async with p.db.session() as s:
        where = [col(Dataset.task_id) == view.row.id]
        if not await task_service.is_owner(s, actor, view.row.id):
            where.append(col(Dataset.access) != DatasetAccess.HIDDEN)
        statement = select(Dataset).where(*where)
        page = await cursors.window(s, statement, col(Dataset.id), "dataset", request, descending=False)
    return cursors.Listing(page, cursors.counter(p, select(col(Dataset.id)).where(*where)))


async def get_dataset(p: Platform, actor: Actor, dataset_id: int) -> tuple[Dataset, bool]:
    """A data set and whether ``actor`` may see its gold targets."""
    async with p.db.session() as s:
        dataset = await s.get(Dataset, dataset_id)
        owner = dataset is not None and await task_service.is_owner(s, actor, dataset.task_id)
        code = (
            None
            if dataset is None
            else await s.scalar(select(col(TaskRow.code)).where(col(TaskRow.id) == dataset.task_id))
        )
    if dataset is None or code is None or (dataset.access == DatasetAccess.HIDDEN and not owner):
        raise NotFound(f"No data set {dataset_id} that you can see")
    if not owner:
        try:
            await task_service.get_task(p, actor, code)  # a hidden task's data sets stay hidden with it
        except NotFound:
            raise NotFound(f"No data set {dataset_id} that you can see") from None
    return dataset, owner or dataset.access == DatasetAccess.STANDARD


async def _managed(p: Platform, actor: Actor, dataset_id: int, verb: str) -> tuple[Dataset, str]:
    """The data set, for its task's owners and admins (NotFound for those who may not see it, Forbidden for those
    who see it but may not manage it), and its task's code."""
    actor = require_user(actor)
    dataset, _ = await get_dataset(p, actor, dataset_id)
    async with p.db.session() as s:
        if not await task_service.is_owner(s, actor, dataset.task_id):
            raise Forbidden(f"Only owners of the task and admins {verb} its data sets")
        code = await s.scalar(select(col(TaskRow.code)).where(col(TaskRow.id) == dataset.task_id))
    return dataset, str(code)


async def update_dataset(
    p: Platform,
    actor: Actor,
    dataset_id: int,
    *,
    access: str | None = None,
    name: str | None = None,
    description: str | None = None,
) -> Dataset:
    """Owners and admins change a data set's access, name or description (what is left out stays). A perturbed
    copy follows its parent's access: change the parent's, and its copies change with it. A set made SCORING (with
    its copies) queues an evaluation of every model of the task that has none on it, so that the board ranks them
    all on it; a set that stops being SCORING leaves the board, and its evaluations stay on the models' pages.
    Making a SCORING or HIDDEN set STANDARD shows its gold to everyone who can see the task."""
    dataset, code = await _managed(p, actor, dataset_id, "change")
    problems: list[FieldError] = []
    minimum = p.settings.min_scoring_set_size
    if access == DatasetAccess.SCORING and dataset.parent_id is None and 0 < dataset.size < minimum:
        problems.append(
            FieldError(
                "access",
                "min_size",
                f"a scoring set needs at least {minimum} items to rank models on (MIN_SCORING_SET_SIZE), not "
                f"{dataset.size}",
            )
        )
    if access is not None and access not in DatasetAccess.ALL:
        problems.append(FieldError("access", "choice", f"must be one of {', '.join(DatasetAccess.ALL)}"))
    if access is not None and access != dataset.access and dataset.parent_id is not None:
        problems.append(FieldError("access", "copy", "a perturbed copy follows its parent: change the parent's access"))
    if name is not None:
        name = name.strip()
        if not NAME.match(name):
            problems.append(FieldError("name", "format", "use 1 to 100 lowercase letters, digits, '_', '.' or '-'"))
    if description is not None and len(description) > 5000:
        problems.append(FieldError("description", "length", "must be at most 5000 characters"))
    if problems:
        raise InvalidInput.from_errors(problems)
    queued: list[list[int]] = []
    async with p.db.write() as s:
        row = await s.get(Dataset, dataset.id)
        if row is None:
            raise NotFound(f"No data set {dataset_id} that you can see")
        if name is not None and name != row.name:
            taken = await s.scalar(
                select(col(Dataset.id)).where(col(Dataset.task_id) == row.task_id, col(Dataset.name) == name)
            )
            if taken is not None:
                raise AlreadyExists(f"The task already has a data set named {name!r}; choose another name")
            row.name = name
        if description is not None:
            row.description = description
        if access is not None and access != row.access:
            family = [row.id, *await s.scalars(select(col(Dataset.id)).where(col(Dataset.parent_id) == row.id))]
            await s.execute(update(Dataset).where(col(Dataset.id).in_(family)).values(access=access))
            row.access = access
            if access == DatasetAccess.SCORING:
                if len(family) == 1:  # a scoring set has its perturbed copies (robustness, fairness)
                    view = await task_service.get_task(p, actor, code)
                    fields = list(
                        await s.scalars(
                            select(col(DatasetItem.fields))
                            .where(col(DatasetItem.dataset_id) == row.id)
                            .order_by(col(DatasetItem.position))
                        )
                    )
                    family += [c.id for c in await _add_perturbed_copies(p, s, view.task, row, fields, actor)]
                queued = await _evaluate_unevaluated(s, row.task_id, family)
        await s.flush()
        await s.refresh(row)
    await queue(p, row.task_id, queued)
    p.caches.boards.pop(row.task_id)
    return row


async def _evaluate_unevaluated(s: AsyncSession, task_id: int, dataset_ids: list[int]) -> list[list[int]]:
    """Queue an evaluation of each model of the task with a backend on each of ``dataset_ids`` (not empty) that it
    has none on; returns their ids by model."""
    sets = list(await s.scalars(select(col(Dataset.id)).where(col(Dataset.id).in_(dataset_ids), col(Dataset.size) > 0)))
    models = list(
        await s.scalars(
            select(col(ModelRow.id)).where(col(ModelRow.task_id) == task_id, col(ModelRow.backend).is_not(None))
        )
    )
    if not sets or not models:
        return []
    existing = set(
        (
            await s.execute(
                select(col(Evaluation.model_id), col(Evaluation.dataset_id)).where(
                    col(Evaluation.model_id).in_(models), col(Evaluation.dataset_id).in_(sets)
                )
            )
        ).all()
    )
    evaluations = [Evaluation(model_id=m, dataset_id=d) for m in models for d in sets if (m, d) not in existing]
    if not evaluations:
        return []
    s.add_all(evaluations)
    await s.flush()
    touched = sorted({e.model_id for e in evaluations})
    await s.execute(update(ModelRow).where(col(ModelRow.id).in_(touched)).values(status=ModelStatus.EVALUATING))
    return [[e.id for e in evaluations if e.model_id == m] for m in touched]


async def delete_dataset(p: Platform, actor: Actor, dataset_id: int) -> tuple[int, list[int]]:
    """Owners and admins delete a data set with its items, its perturbed copies and every evaluation on them (the
    board forgets them; the models' other evaluations stay). Refused (Conflict) while an evaluation on it runs.
    Returns the ids deleted: the set's, then its copies'."""
    dataset, code = await _managed(p, actor, dataset_id, "delete")
    async with p.db.write() as s:
        family = [dataset.id, *await s.scalars(select(col(Dataset.id)).where(col(Dataset.parent_id) == dataset.id))]
        running = await s.scalar(
            select(func.count())
            .select_from(Evaluation)
            .where(col(Evaluation.dataset_id).in_(family), col(Evaluation.status) == EvaluationStatus.RUNNING)
        )
        if running:
            raise Conflict(
                f"{running} evaluation(s) on data set {dataset.name!r} of {code} are running; delete it when they end"
            )
        models = list(
            await s.scalars(select(col(Evaluation.model_id)).distinct().where(col(Evaluation.dataset_id).in_(family)))
        )
        await s.execute(delete(Evaluation).where(col(Evaluation.dataset_id).in_(family)))
        await s.execute(delete(DatasetItem).where(col(DatasetItem.dataset_id).in_(family)))
        await s.execute(delete(Dataset).where(col(Dataset.id).in_(family[1:])))
        await s.execute(delete(Dataset).where(col(Dataset.id) == dataset.id))
    runner = Runner(p.settings, p.plugins, db=p.db)
    for model_id in models:  # a model whose last queued evaluation was on it is evaluated now
        await runner.refresh_model(model_id)
    p.caches.boards.pop(dataset.task_id)
    return dataset.id, family[1:]


async def items(
    p: Platform,
    actor: Actor,
    dataset_id: int,
    *,
    first: int | None = None,
    after: str | None = None,
    last: int | None = None,
    before: str | None = None,
) -> ItemPage:
    """A page of a data set's items in position order (cursors: ``first``/``after`` forward, ``last``/``before``
    back). Gold targets are stripped unless the set is STANDARD or the actor owns the task."""
    request = cursors.PageRequest.of(
        "item", first=first, after=after, last=last, before=before, max_size=MAX_PAGE, default=100, minimum=-1
    )
    dataset, gold_visible = await get_dataset(p, actor, dataset_id)
    task = None
    if not gold_visible:
        async with p.db.session() as s:
            code = await s.scalar(select(col(TaskRow.code)).where(col(TaskRow.id) == dataset.task_id))
        task = None if code is None else p.plugins.task(code)
    statement = select(DatasetItem).where(col(DatasetItem.dataset_id) == dataset_id)
    async with p.db.session() as s:
        page = await cursors.window(
            s,
            statement,
            col(DatasetItem.position),
            "item",
            request,
            key=lambda item: int(item.position),
            descending=False,
        )
    rows = page.rows
    if not gold_visible:
        rows = [
            DatasetItem(
                id=r.id,
                dataset_id=r.dataset_id,
                position=r.position,
                example_id=None,
                original_position=r.original_position,
                fields=visibility.without_gold(task, r.fields),
            )
            for r in rows
        ]
    return ItemPage(rows, gold_visible, cursors.Listing(page, cursors.counter(p, statement)))


MAX_REPORTED = files.MAX_REPORTED


def _record_problems() -> Problems:
    """The problems of a batch of records, named by location (``line 3.label``): listed up to MAX_REPORTED."""
    return Problems(more_field="records", more_rule="more", again="send them again")


async def create_dataset(
    p: Platform,
    actor: Actor,
    task_code: str,
    name: str,
    records: list[tuple[str, dict[str, Any]]],
    *,
    access: str = DatasetAccess.SCORING,
    description: str = "",
    seed: int = 0,
    public_share: float | None = None,
) -> list[Dataset]:
    """Owners add a data set of complete examples (``(location, fields)`` pairs, e.g. read by an importer): each is
    validated by the task, all or nothing, errors named by location. A SCORING set gets its perturbed copies.
    ``public_share``: the share of a SCORING set's items whose figures every model shows before its round ends
    (None: ``SCORING_PUBLIC_SHARE``; 1 for a set whose gold is public anyway, a published benchmark)."""
    actor, view = await _owned_task(p, actor, task_code)
    problems = _record_problems()
    if not NAME.match(name or ""):
        problems.add("name", None, "format", "use 1 to 100 lowercase letters, digits, '_', '.' or '-'")
    if public_share is not None and not 0 < public_share <= 1:
        problems.add("publicShare", None, "range", "must be more than 0 and at most 1 (1: every item public)")
    minimum = p.settings.min_scoring_set_size
    if access == DatasetAccess.SCORING and 0 < len(records) < minimum:
        problems.add(
            "access",
            None,
            "min_size",
            f"a scoring set needs at least {minimum} items to rank models on (MIN_SCORING_SET_SIZE), not "
            f"{len(records)}: add items, or make it HIDDEN (owners only) or STANDARD",
        )
    if access not in DatasetAccess.ALL:
        problems.add("access", None, "choice", f"must be one of {', '.join(DatasetAccess.ALL)}")
    if not records:
        problems.add("records", None, "empty", "a data set needs at least one example")
    cleaned = []
    for location, fields in records:
        try:
            cleaned.append(view.task.validate_example(fields, None))
        except InvalidInput as exc:
            problems.extend(exc.field_errors, under=location)
    problems.raise_if_any()
    async with p.db.write() as s:
        if (
            await s.scalar(
                select(col(Dataset.id)).where(col(Dataset.task_id) == view.row.id, col(Dataset.name) == name)
            )
            is not None
        ):
            raise AlreadyExists(f"Task {task_code} already has a data set named {name!r}")
        dataset = Dataset(
            task_id=view.row.id,
            name=name,
            description=description,
            access=access,
            source="upload",
            seed=seed,
            size=len(cleaned),
            public_share=public_share,
            created_by=actor.user_id,
        )
        s.add(dataset)
        await s.flush()
        await _add_items(s, dataset.id, [(None, fields) for fields in cleaned])
        made = [dataset]
        if access == DatasetAccess.SCORING:
            made.extend(await _add_perturbed_copies(p, s, view.task, dataset, cleaned, actor))
        # an empty split (a round with few accepted examples) is made, but has nothing to score
        queued = await _evaluate_existing_models(s, view.row.id, [d.id for d in made if _scored(d, made) and d.size])
    await queue(p, view.row.id, queued)
    p.caches.boards.pop(view.row.id)  # the board's cached inputs (services.leaderboard.BoardData)
    return made


PERTURBATION_KINDS = ("robustness", "fairness")
PERTURBATION_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,59}$")
ORIGINAL = "original_position"


def read_jsonl(source: BinaryIO, max_bytes: int, name: str = "the file") -> list[tuple[str, dict[str, Any]]]:
    """The objects of a perturbed copy's JSONL file as ``("line N", object)`` pairs (:func:`dynaforge.files.read_jsonl`:
    every unreadable line reported by number, the first 50 listed and the rest counted; a file larger than
    ``max_bytes`` refused before it is read whole)."""
    return files.read_jsonl(source, max_bytes=max_bytes, example='{"original_position": 0, ...}', name=name)


async def attach_perturbed_copy(
    p: Platform,
    actor: Actor,
    dataset_id: int,
    perturbation: str,
    kind: str,
    records: list[tuple[str, dict[str, Any]]],
    *,
    replace: bool = False,
    description: str = "",
) -> Dataset:
    """Owners attach their own perturbed copy of a scoring set instead of (or beside) the platform's.

    Each record is ``(location, object)``: the object names the item it was made from in ``original_position``
    (the parent's ``position``; several variants of one item are allowed) and carries the task's fields. Target
    fields left out are copied from the original item, since a perturbation keeps the label; a record that gives
    them is checked like any example. ``kind`` says whether the copy counts towards robustness or fairness. A copy
    with the same perturbation name is refused unless ``replace``; replacing deletes the old copy with its
    evaluations. Every model of the task that has a backend is queued on the new copy, and the original's
    robustness and fairness are recomputed when those evaluations are done. All or nothing; problems are named by
    location (``line 3.original_position``).
    """
    actor = require_user(actor)
    async with p.db.session() as s:
        parent = await s.get(Dataset, dataset_id)
        code = (
            None
            if parent is None
            else await s.scalar(select(col(TaskRow.code)).where(col(TaskRow.id) == parent.task_id))
        )
    if parent is None or code is None:
        raise NotFound(f"No data set {dataset_id}")
    actor, view = await _owned_task(p, actor, code)
    errors = []
    if parent.parent_id is not None:
        errors.append(
            FieldError(
                "datasetId",
                "original",
                f"{parent.name} is itself a perturbed copy; attach the copy to the data set it was made from",
            )
        )
    elif parent.access != DatasetAccess.SCORING:
        errors.append(
            FieldError(
                "datasetId",
                "scoring",
                f"{parent.name} is {parent.access}; only SCORING sets are evaluated with their perturbed copies",
            )
        )
    if not PERTURBATION_NAME.match(perturbation or ""):
        errors.append(FieldError("perturbation", "format", "use 1 to 60 lowercase letters, digits, '_', '.' or '-'"))
    if kind not in PERTURBATION_KINDS:
        errors.append(FieldError("kind", "choice", f"must be one of {', '.join(PERTURBATION_KINDS)}"))
    if not records:
        errors.append(FieldError("records", "empty", "a perturbed copy needs at least one item"))
    if errors:
        raise InvalidInput.from_errors(errors)
    async with p.db.session() as s:
        originals = {
            position: fields
            for position, fields in (
                await s.execute(
                    select(col(DatasetItem.position), col(DatasetItem.fields)).where(
                        col(DatasetItem.dataset_id) == parent.id
                    )
                )
            ).all()
        }
    targets = view.task.field_names(Role.TARGET)
    cleaned: list[tuple[int, dict[str, Any]]] = []
    problems = _record_problems()
    for location, record in records:
        position = record.get(ORIGINAL)
        if isinstance(position, bool) or not isinstance(position, int) or position not in originals:
            problems.add(
                location,
                ORIGINAL,
                "original",
                f"must be the position of an item of {parent.name}, from 0 to {parent.size - 1}",
            )
            continue
        fields = {k: v for k, v in record.items() if k != ORIGINAL}
        for name in targets:
            if name not in fields and name in originals[position]:
                fields[name] = originals[position][name]
        try:
            cleaned.append((position, view.task.validate_example(fields, None)))
        except InvalidInput as exc:
            problems.extend(exc.field_errors, under=location)
    problems.raise_if_any()
    name = _copy_name(parent, perturbation)
    async with p.db.write() as s:
        old = await s.scalar(select(Dataset).where(col(Dataset.task_id) == parent.task_id, col(Dataset.name) == name))
        if old is not None and not replace:
            raise AlreadyExists(
                f"{parent.name} already has a copy perturbed by {perturbation} ({name}); pass "
                "replace: true to put yours in its place"
            )
        if old is not None:
            await s.execute(delete(Dataset).where(col(Dataset.id) == old.id))
            # The original's figure of the old copy's kind (and of the new one's) came partly from the old copy:
            # it is recomputed when the new copy's evaluations are done, and not shown stale meanwhile.
            registered = p.plugins.registry.perturbations.get(perturbation)
            stale = {kind, old.perturbation_kind or (registered.kind if registered else "robustness")}
            for evaluation in await s.scalars(select(Evaluation).where(col(Evaluation.dataset_id) == parent.id)):
                evaluation.metrics = {k: v for k, v in evaluation.metrics.items() if k not in stale}
        copy = _copy_of(
            parent,
            perturbation,
            kind,
            len(cleaned),
            actor,
            source="upload",
            description=description or f"{parent.name} perturbed by {perturbation} ({kind}; uploaded by an owner)",
        )
        s.add(copy)
        await s.flush()
        await _add_items(s, copy.id, [(None, fields) for _, fields in cleaned], [position for position, _ in cleaned])
        queued = await _evaluate_existing_models(s, parent.task_id, [copy.id])
    await queue(p, parent.task_id, queued)
    p.caches.boards.pop(parent.task_id)
    return copy


async def import_dataset(
    p: Platform,
    actor: Actor,
    task_code: str,
    name: str,
    *,
    format: str,
    path: Path,
    access: str = DatasetAccess.SCORING,
    description: str = "",
    public_share: float | None = None,
) -> list[Dataset]:
    """Owners add a data set from a file one of the task's importers reads (``format``): the owner is checked before
    the file is read; then as :func:`create_dataset` (all or nothing, SCORING sets get their perturbed copies)."""
    actor, view = await _owned_task(p, actor, task_code)
    importer = import_service.choose_importer(p, view.task, format)
    records = await asyncio.to_thread(import_service.records_of, importer, path, view.task)
    return await create_dataset(
        p, actor, task_code, name, records, access=access, description=description, public_share=public_share
    )
