"""Export of collected data: a round or a whole task, in any registered export format.

The formats are plugins (hook ``register_export_formats``, :mod:`dynaforge.exporters`); the core registers ``jsonl``
and ``hf`` (a Hugging Face ``datasets`` folder). This module decides what is exported and reads it: examples in
keyset pages by id (``col(Example.id) > last``, ``PAGE_SIZE`` at a time), the validations and contexts of a page in one
query each, each page turned into ``dynaforge.example/2`` records and handed to the format, which writes it out
before the next page is read, so memory stays flat in the number of examples. No user id leaves the server: authors
and validators appear as pseudonyms, an HMAC of the user id keyed on the round's secret (:func:`pseudonym`), stable
within a round and unrelated across rounds.

Use :func:`prepare_export` (authorisation, the rounds and how many examples there are; :func:`prepare_download`
for a download, which is rate limited) and then :func:`write` with a format's name (or :func:`write_jsonl`,
:func:`write_hf`, :func:`iter_jsonl` for the core formats), or :func:`export_of` to hand the export to a format
yourself (``format.stream(export)`` for an HTTP response).
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlmodel import col

from dynaforge.db.models import (
    Context,
    Dataset,
    DatasetAccess,
    DatasetItem,
    Example,
    ExampleStatus,
    Round,
    Validation,
    as_utc,
)
from dynaforge.errors import FieldError, Forbidden, InvalidInput, NotFound
from dynaforge.exporters import RECORD_FORMAT, Export, ExportFormat, ExportPage, ExportSplit
from dynaforge.ids import global_id, optional_id
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_user
from dynaforge.services.platform import Platform
from dynaforge.tasks.base import Task

PAGE_SIZE = 500
#: What owners get unless they ask for other statuses: withdrawn and not-yet-predicted examples stay out.
OWNER_DEFAULT_STATUSES = tuple(
    s for s in ExampleStatus.ALL if s not in (ExampleStatus.RETRACTED, ExampleStatus.PENDING_PREDICTION)
)
#: Everyone else sees accepted examples only.
PUBLIC_STATUSES = (ExampleStatus.ACCEPTED,)

Progress = Callable[[int], None]


def pseudonym(secret: str, user_id: int) -> str:
    """The pseudonym of a user in the round whose secret is ``secret``: 16 hex digits of an HMAC-SHA256."""
    return hmac.new(secret.encode(), f"user:{user_id}".encode(), hashlib.sha256).hexdigest()[:16]


@dataclass(frozen=True)
class RoundExport:
    """One round in an export: its row (with the secret that keys its pseudonyms) and where its examples start."""

    round: Round
    count: int
    first_id: int | None

    @property
    def split(self) -> str:
        return f"round{self.round.number}"


@dataclass(frozen=True)
class ExportPlan:
    """What :func:`prepare_export` decided: the task, the rounds, the statuses and a snapshot bound on ids.

    Examples created after the plan was made (``id > max_id``) are left out, so ``total`` matches what is written
    unless examples change status meanwhile.
    """

    task: Task
    task_id: int
    rounds: tuple[RoundExport, ...]
    statuses: tuple[str, ...]
    max_id: int
    whole_task: bool
    withhold_scored: bool = False  # leave out examples frozen into SCORING or HIDDEN data sets (their gold is secret)

    def where(self) -> list[Any]:
        """Conditions every exported example meets besides its round."""
        return _conditions(self.task_id, self.statuses, self.max_id, self.withhold_scored)

    @property
    def total(self) -> int:
        return sum(r.count for r in self.rounds)

    @property
    def code(self) -> str:
        return self.task.code

    @property
    def empty_reason(self) -> str | None:
        """Why the export holds no example, in words that say what to do; None when it holds some. Someone who does
        not own the task reads only what published splits hold, which is the usual reason."""
        if self.total:
            return None
        scope = "any round" if self.whole_task else f"round {self.rounds[0].round.number}"
        if self.withhold_scored:
            return (
                f"No example of {self.code} in {scope} is yours to export: those who do not own a task get the "
                "accepted examples that a published (STANDARD) data set holds, and a round's are published once its "
                "owners split it (createRoundDatasets); examples frozen into scoring sets stay with the owners"
            )
        return f"Task {self.code} has no examples with status {', '.join(self.statuses)} in {scope}"

    @property
    def basename(self) -> str:
        """A file name stem such as ``dynaforge-nli-round2`` or ``dynaforge-nli-all-rounds``."""
        scope = "all-rounds" if self.whole_task else self.rounds[0].split
        return f"dynaforge-{self.code}-{scope}"


@dataclass(frozen=True)
class ExportResult:
    """What was written: where, how many examples in all and per split, and the files."""

    path: Path
    total: int
    counts: dict[str, int]
    files: tuple[Path, ...] = field(default_factory=tuple)


async def prepare_export(
    p: Platform,
    actor: Actor,
    task_code: str,
    *,
    round_number: int | None = None,
    statuses: Iterable[str] | None = None,
) -> ExportPlan:
    """Check who may export what and fix the export's scope.

    Owners and admins may export examples of every status (default: :data:`OWNER_DEFAULT_STATUSES`); everyone
    else only accepted ones that a published (STANDARD) split holds: none of a round not split yet (its test set is
    drawn from them later) and none frozen into a SCORING or HIDDEN data set (whose gold stays with the owners).
    Hidden tasks exist only for their owners and admins. ``round_number=None`` exports
    every round of the task.
    """
    actor = require_user(actor)
    view = await task_service.get_task(p, actor, task_code)
    wanted = _check_statuses(statuses)
    async with p.db.session() as s:
        owner = await task_service.is_owner(s, actor, view.row.id)
        if wanted is None:
            wanted = OWNER_DEFAULT_STATUSES if owner else PUBLIC_STATUSES
        elif not owner and set(wanted) - set(PUBLIC_STATUSES):
            raise Forbidden(
                f"Only owners of {task_code} and admins can export examples that are not accepted; "
                "ask for ACCEPTED examples only (the default)"
            )
        query = select(Round).where(col(Round.task_id) == view.row.id).order_by(col(Round.number))
        if round_number is not None:
            query = query.where(col(Round.number) == round_number)
        rounds = list(await s.scalars(query))
        if not rounds:
            if round_number is None:
                raise NotFound(f"Task {task_code} has no rounds yet")
            numbers = list(
                await s.scalars(
                    select(col(Round.number)).where(col(Round.task_id) == view.row.id).order_by(col(Round.number))
                )
            )
            raise NotFound(f"Task {task_code} has no round {round_number}; its rounds are {_numbers(numbers)}")
        max_id = await s.scalar(select(func.max(col(Example.id))).where(col(Example.task_id) == view.row.id)) or 0
        where = [
            col(Example.round_id).in_([r.id for r in rounds]),
            *_conditions(view.row.id, wanted, max_id, not owner),
        ]
        stats = {
            round_id: (count, first)
            for round_id, count, first in await s.execute(
                select(col(Example.round_id), func.count(), func.min(col(Example.id)))
                .where(*where)
                .group_by(col(Example.round_id))
            )
        }
    parts = tuple(RoundExport(r, *stats.get(r.id, (0, None))) for r in rounds)
    return ExportPlan(
        view.task, view.row.id, parts, tuple(wanted), max_id, whole_task=round_number is None, withhold_scored=not owner
    )


async def prepare_download(
    p: Platform,
    actor: Actor,
    task_code: str,
    *,
    round_number: int | None = None,
    statuses: Iterable[str] | None = None,
) -> ExportPlan:
    """:func:`prepare_export` for a download over HTTP. Exports are heavy reads: each user may start
    ``exports_per_minute`` of them (an export refused for another reason does not count)."""
    plan = await prepare_export(p, actor, task_code, round_number=round_number, statuses=statuses)
    await p.limiter.hit(f"exports:{actor.user_id or 'system'}", p.settings.exports_per_minute, 60.0, "exports")
    return plan


def _conditions(task_id: int, statuses: Iterable[str], max_id: int, withhold_scored: bool) -> list[Any]:
    """The task's examples in ``statuses`` up to ``max_id``, less (``withhold_scored``) those whose gold is secret."""
    conditions = [col(Example.task_id) == task_id, col(Example.status).in_(list(statuses)), col(Example.id) <= max_id]
    if withhold_scored:
        # Only what a published (STANDARD) split holds: an accepted example of a round not split yet may be drawn
        # into its test set later, and one frozen into a scoring set keeps its gold with the owners.
        conditions.append(col(Example.id).in_(_published_examples()))
        conditions.append(col(Example.id).not_in(_scored_examples()))
    return conditions


def _published_examples():
    """Ids of examples frozen into a STANDARD data set (a round's train or dev split): what non-owners export."""
    return (
        select(col(DatasetItem.example_id))
        .join(Dataset, col(Dataset.id) == col(DatasetItem.dataset_id))
        .where(col(Dataset.access) == DatasetAccess.STANDARD, col(DatasetItem.example_id).is_not(None))
    )


def _scored_examples():
    """Ids of examples frozen into a SCORING or HIDDEN data set: their gold targets stay with the owners."""
    return (
        select(col(DatasetItem.example_id))
        .join(Dataset, col(Dataset.id) == col(DatasetItem.dataset_id))
        .where(col(Dataset.access) != DatasetAccess.STANDARD, col(DatasetItem.example_id).is_not(None))
    )


def published_examples():
    """Ids of examples whose gold anyone who sees the task may read: those a published (STANDARD) split holds and no
    SCORING or HIDDEN set does, exactly what non-owners export."""
    return _published_examples().where(col(DatasetItem.example_id).not_in(_scored_examples()))


def _check_statuses(statuses: Iterable[str] | None) -> tuple[str, ...] | None:
    if statuses is None:
        return None
    wanted = tuple(dict.fromkeys(str(s).upper() for s in statuses))
    unknown = [s for s in wanted if s not in ExampleStatus.ALL]
    if unknown or not wanted:
        raise InvalidInput.from_errors(
            [FieldError("status", "choice", f"each status must be one of {', '.join(ExampleStatus.ALL)}")]
        )
    return wanted


def _numbers(numbers: list[int]) -> str:
    return ", ".join(map(str, numbers)) or "none"


# --------------------------------------------------------------------------- reading pages


@dataclass(frozen=True)
class _Page:
    """A page of examples of one round with what their records need."""

    part: RoundExport
    examples: list[Example]
    contexts: dict[int, dict[str, Any]]
    validations: dict[int, list[Validation]]


async def _pages(p: Platform, plan: ExportPlan, part: RoundExport, page_size: int) -> AsyncIterator[_Page]:
    """Keyset pages of one round's examples in id order; no session stays open between pages."""
    if page_size < 1:
        raise ValueError(f"page_size must be at least 1, got {page_size}")
    if part.count == 0 or part.first_id is None:
        return
    last = part.first_id - 1
    while True:
        async with p.db.session() as s:
            examples = list(
                await s.scalars(
                    select(Example)
                    .where(*plan.where(), col(Example.round_id) == part.round.id, col(Example.id) > last)
                    .order_by(col(Example.id))
                    .limit(page_size)
                )
            )
            if not examples:
                return
            ids = [e.id for e in examples]
            validations: dict[int, list[Validation]] = {}
            for v in await s.scalars(
                select(Validation)
                .where(col(Validation.example_id).in_(ids))
                .order_by(col(Validation.example_id), col(Validation.id))
            ):
                validations.setdefault(v.example_id, []).append(v)
            context_ids = {e.context_id for e in examples if e.context_id is not None}
            contexts: dict[int, dict[str, Any]] = {}
            if context_ids:
                contexts = dict(
                    (
                        await s.execute(
                            select(col(Context.id), col(Context.fields)).where(col(Context.id).in_(context_ids))
                        )
                    ).all()
                )
        yield _Page(part, examples, contexts, validations)
        if len(examples) < page_size:
            return
        last = examples[-1].id


def _iso(value) -> str | None:
    value = as_utc(value)
    return value.isoformat() if value is not None else None


def _fields(example: Example, contexts: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """The example's fields with its context's merged in first, so that each record stands alone."""
    context = contexts.get(example.context_id) if example.context_id is not None else None
    return {**(context or {}), **(example.fields or {})}


def record(plan: ExportPlan, page: _Page, example: Example) -> dict[str, Any]:
    """One example in the ``dynaforge.example/2`` format (the importer reads exactly this); its ids are the API's."""
    secret = page.part.round.secret
    return {
        "format": RECORD_FORMAT,
        "id": global_id("Example", example.id),
        "task": plan.code,
        "round": page.part.round.number,
        "status": example.status,
        "fields": _fields(example, page.contexts),
        "tag": example.tag,
        "context_id": optional_id("Context", example.context_id),
        "fooled": example.fooled,
        "prediction": example.prediction,
        "model_predictions": example.model_predictions or [],
        "author": pseudonym(secret, example.user_id),
        "time_taken_ms": example.time_taken_ms,
        "source": example.source,
        "adversary": example.adversary,
        "created_at": _iso(example.created_at),
        "votes": {
            "correct": example.validations_correct,
            "incorrect": example.validations_incorrect,
            "flagged": example.validations_flagged,
        },
        "flag_reason": example.flag_reason,
        "validations": [
            {
                "validator": pseudonym(secret, v.user_id),
                "label": v.label,
                "corrected_target": v.corrected_target,
                "reason": v.reason,
                "by_owner": v.by_owner,
                "created_at": _iso(v.created_at),
            }
            for v in page.validations.get(example.id, [])
        ],
    }


# --------------------------------------------------------------------------- formats (registered by plugins)


def export_formats(p: Platform) -> list[ExportFormat]:
    """The registered export formats, in the order they were registered (the core's ``jsonl`` and ``hf`` first)."""
    return list(p.plugins.registry.export_formats.values())


def choose_format(p: Platform, name: str | ExportFormat) -> ExportFormat:
    """The export format called ``name``; else InvalidInput (field ``format``) listing the registered ones."""
    if isinstance(name, ExportFormat):
        return name
    registered = p.plugins.registry.export_formats
    found = registered.get(str(name or "").strip().lower())
    if found is None:
        raise InvalidInput.from_errors(
            [
                FieldError(
                    "format",
                    "choice",
                    f"{name!r} is not an export format; the registered formats are: {', '.join(registered) or 'none'}",
                )
            ]
        )
    return found


def export_of(p: Platform, plan: ExportPlan, *, page_size: int = PAGE_SIZE, progress: Progress | None = None) -> Export:
    """What a format writes for ``plan``: its splits, and its records read page by page (``page_size`` examples)."""
    if page_size < 1:
        raise ValueError(f"page_size must be at least 1, got {page_size}")

    async def read_pages() -> AsyncIterator[ExportPage]:
        for part in plan.rounds:
            async for page in _pages(p, plan, part, page_size):
                yield ExportPage(part.split, part.round.number, [record(plan, page, e) for e in page.examples])

    return Export(
        task=plan.task,
        basename=plan.basename,
        splits=tuple(ExportSplit(part.split, part.round.number, part.count) for part in plan.rounds),
        statuses=plan.statuses,
        whole_task=plan.whole_task,
        read_pages=read_pages,
        progress=progress,
        empty_reason=plan.empty_reason,
    )


async def write(
    p: Platform,
    plan: ExportPlan,
    fmt: str | ExportFormat,
    out: str | os.PathLike,
    *,
    page_size: int = PAGE_SIZE,
    progress: Progress | None = None,
) -> ExportResult:
    """Write the export in the format ``fmt`` (a registered name) to ``out`` and say what was written."""
    chosen = choose_format(p, fmt)
    written = await chosen.write(export_of(p, plan, page_size=page_size, progress=progress), Path(out))
    return ExportResult(Path(out), sum(written.counts.values()), dict(written.counts), tuple(written.files))


async def write_jsonl(
    p: Platform,
    plan: ExportPlan,
    path: str | os.PathLike,
    *,
    page_size: int = PAGE_SIZE,
    progress: Progress | None = None,
) -> ExportResult:
    """Write the export as JSON Lines to ``path`` (replaced only once it is complete)."""
    return await write(p, plan, "jsonl", path, page_size=page_size, progress=progress)


async def iter_jsonl(
    p: Platform, plan: ExportPlan, *, page_size: int = PAGE_SIZE, progress: Progress | None = None
) -> AsyncIterator[bytes]:
    """The export as JSON Lines, one chunk of bytes per page (rounds in order, examples by id)."""
    chunks = choose_format(p, "jsonl").stream(export_of(p, plan, page_size=page_size, progress=progress))
    assert chunks is not None  # the jsonl format streams
    async for chunk in chunks:
        yield chunk


async def write_hf(
    p: Platform,
    plan: ExportPlan,
    folder: str | os.PathLike,
    *,
    page_size: int = PAGE_SIZE,
    progress: Progress | None = None,
) -> ExportResult:
    """Write a Hugging Face ``datasets`` folder (see ``dynaforge.defaults.exports.HfFormat``)."""
    return await write(p, plan, "hf", folder, page_size=page_size, progress=progress)
