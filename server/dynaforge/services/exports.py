"""Export of collected data: a round or a whole task as JSON Lines or as a Hugging Face ``datasets`` folder.

Both formats stream: examples are read in keyset pages by id (``Example.id > last``, ``PAGE_SIZE`` at a time), the
validations and contexts of a page come in one query each, and each page is written out before the next is read,
so memory stays flat in the number of examples. No user id leaves the server: authors and validators appear as
pseudonyms, an HMAC of the user id keyed on the round's secret (:func:`pseudonym`), stable within a round and
unrelated across rounds.

Use :func:`prepare_export` (authorisation, the rounds and how many examples there are; :func:`prepare_download` for
a download, which is rate limited) and then one of
:func:`write_jsonl`, :func:`iter_jsonl` (chunks of bytes, for an HTTP response) or :func:`write_hf`.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import re
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

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
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_user
from dynaforge.services.platform import Platform
from dynaforge.tasks.base import Task
from dynaforge.tasks.fields import BooleanField, ChoiceField, Field, NumberField, SpanField, TextField

RECORD_FORMAT = "dynaforge.example/1"
PAGE_SIZE = 500
FORMATS = ("jsonl", "hf")
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
    else only accepted ones, less those frozen into a SCORING or HIDDEN data set (whose gold stays with the owners).
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
        query = select(Round).where(Round.task_id == view.row.id).order_by(Round.number)
        if round_number is not None:
            query = query.where(Round.number == round_number)
        rounds = list(await s.scalars(query))
        if not rounds:
            if round_number is None:
                raise NotFound(f"Task {task_code} has no rounds yet")
            numbers = list(
                await s.scalars(select(Round.number).where(Round.task_id == view.row.id).order_by(Round.number))
            )
            raise NotFound(f"Task {task_code} has no round {round_number}; its rounds are {_numbers(numbers)}")
        max_id = await s.scalar(select(func.max(Example.id)).where(Example.task_id == view.row.id)) or 0
        where = [Example.round_id.in_([r.id for r in rounds]), *_conditions(view.row.id, wanted, max_id, not owner)]
        stats = {
            round_id: (count, first)
            for round_id, count, first in await s.execute(
                select(Example.round_id, func.count(), func.min(Example.id)).where(*where).group_by(Example.round_id)
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
    p.limiter.hit(f"exports:{actor.user_id or 'system'}", p.settings.exports_per_minute, 60.0, "exports")
    return plan


def _conditions(task_id: int, statuses: Iterable[str], max_id: int, withhold_scored: bool) -> list[Any]:
    """The task's examples in ``statuses`` up to ``max_id``, less (``withhold_scored``) those whose gold is secret."""
    conditions = [Example.task_id == task_id, Example.status.in_(list(statuses)), Example.id <= max_id]
    if withhold_scored:
        conditions.append(Example.id.not_in(_scored_examples()))
    return conditions


def _scored_examples():
    """Ids of examples frozen into a SCORING or HIDDEN data set: their gold targets stay with the owners."""
    return (
        select(DatasetItem.example_id)
        .join(Dataset, Dataset.id == DatasetItem.dataset_id)
        .where(Dataset.access != DatasetAccess.STANDARD, DatasetItem.example_id.is_not(None))
    )


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
                    .where(*plan.where(), Example.round_id == part.round.id, Example.id > last)
                    .order_by(Example.id)
                    .limit(page_size)
                )
            )
            if not examples:
                return
            ids = [e.id for e in examples]
            validations: dict[int, list[Validation]] = {}
            for v in await s.scalars(
                select(Validation).where(Validation.example_id.in_(ids)).order_by(Validation.example_id, Validation.id)
            ):
                validations.setdefault(v.example_id, []).append(v)
            context_ids = {e.context_id for e in examples if e.context_id is not None}
            contexts = {}
            if context_ids:
                contexts = dict(
                    (await s.execute(select(Context.id, Context.fields).where(Context.id.in_(context_ids)))).all()
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
    """One example in the ``dynaforge.example/1`` format (the importer reads exactly this)."""
    secret = page.part.round.secret
    return {
        "format": RECORD_FORMAT,
        "id": example.id,
        "task": plan.code,
        "round": page.part.round.number,
        "status": example.status,
        "fields": _fields(example, page.contexts),
        "tag": example.tag,
        "context_id": example.context_id,
        "fooled": example.fooled,
        "prediction": example.prediction,
        "model_predictions": example.model_predictions or [],
        "author": pseudonym(secret, example.user_id),
        "time_taken_ms": example.time_taken_ms,
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


# --------------------------------------------------------------------------- JSON Lines


def _jsonl_chunk(plan: ExportPlan, page: _Page) -> bytes:
    lines = [
        json.dumps(record(plan, page, e), ensure_ascii=False, separators=(",", ":"), default=str) for e in page.examples
    ]
    return ("\n".join(lines) + "\n").encode()


async def iter_jsonl(
    p: Platform, plan: ExportPlan, *, page_size: int = PAGE_SIZE, progress: Progress | None = None
) -> AsyncIterator[bytes]:
    """The export as JSON Lines, one chunk of bytes per page (rounds in order, examples by id)."""
    for part in plan.rounds:
        async for page in _pages(p, plan, part, page_size):
            yield _jsonl_chunk(plan, page)
            if progress is not None:
                progress(len(page.examples))


async def write_jsonl(
    p: Platform,
    plan: ExportPlan,
    path: str | os.PathLike,
    *,
    page_size: int = PAGE_SIZE,
    progress: Progress | None = None,
) -> ExportResult:
    """Write the export to ``path`` (replaced only once it is complete) and say what was written."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    counts = {part.split: 0 for part in plan.rounds}
    try:
        out = await asyncio.to_thread(partial.open, "wb")
        try:
            for part in plan.rounds:
                async for page in _pages(p, plan, part, page_size):
                    await asyncio.to_thread(out.write, _jsonl_chunk(plan, page))
                    counts[part.split] += len(page.examples)
                    if progress is not None:
                        progress(len(page.examples))
        finally:
            await asyncio.to_thread(out.close)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return ExportResult(path, sum(counts.values()), counts, (path,))


# --------------------------------------------------------------------------- Hugging Face datasets folder

#: Columns every export has besides the task's fields (a task field with one of these names gets a ``field_`` prefix).
META_COLUMNS = (
    "id",
    "round",
    "status",
    "fooled",
    "prediction",
    "author",
    "tag",
    "context_id",
    "time_taken_ms",
    "created_at",
    "votes",
    "flag_reason",
    "validations",
)
_META_DTYPES = {
    "id": "int64",
    "round": "int64",
    "status": "string",
    "fooled": "bool",
    "prediction": "string",
    "author": "string",
    "tag": "string",
    "context_id": "int64",
    "time_taken_ms": "int64",
    "created_at": "string",
    "flag_reason": "string",
}
_VOTES = [{"name": n, "dtype": "int64"} for n in ("correct", "incorrect", "flagged")]
_VALIDATION = [
    {"name": "validator", "dtype": "string"},
    {"name": "label", "dtype": "string"},
    {"name": "corrected_target", "dtype": "string"},
    {"name": "reason", "dtype": "string"},
    {"name": "by_owner", "dtype": "bool"},
    {"name": "created_at", "dtype": "string"},
]
_SPAN = [{"name": "text", "dtype": "string"}, {"name": "start", "dtype": "int64"}]
# Column order of every split: what the example is first, then the task's fields, then the model and the votes.
_BEFORE = ("id", "round", "status")


@dataclass(frozen=True)
class _Column:
    """How one task field becomes a dataset column."""

    name: str
    field: Field
    feature: dict[str, Any]  # the column in the card's ``dataset_info.features`` (datasets' YAML form)
    names: tuple[str, ...] = ()  # class label names, for a choice field

    def value(self, value: Any) -> Any:
        if value is None:
            return None
        f = self.field
        if isinstance(f, SpanField):
            if isinstance(value, dict) and isinstance(value.get("text"), str) and isinstance(value.get("start"), int):
                return {"text": value["text"], "start": value["start"]}
            return None
        if isinstance(f, ChoiceField):
            return self.names.index(value) if value in self.names else -1
        if isinstance(f, NumberField):
            return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if isinstance(f, BooleanField):
            return value if isinstance(value, bool) else None
        if isinstance(f, TextField):
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _column(task: Task, f: Field) -> _Column:
    name = f"field_{f.name}" if f.name in META_COLUMNS else f.name
    if isinstance(f, SpanField):
        return _Column(name, f, {"name": name, "struct": _SPAN})
    if isinstance(f, ChoiceField):
        names = f.options(task)
        label = {"class_label": {"names": {str(i): n for i, n in enumerate(names)}}}
        return _Column(name, f, {"name": name, "dtype": label}, tuple(names))
    if isinstance(f, NumberField):
        return _Column(name, f, {"name": name, "dtype": "float64"})
    if isinstance(f, BooleanField):
        return _Column(name, f, {"name": name, "dtype": "bool"})
    # Text, and any other field type as a JSON string.
    return _Column(name, f, {"name": name, "dtype": "string"})


def _meta_feature(name: str) -> dict[str, Any]:
    if name == "votes":
        return {"name": name, "struct": _VOTES}
    if name == "validations":
        return {"name": name, "list": _VALIDATION}
    return {"name": name, "dtype": _META_DTYPES[name]}


def _arrow_type(feature: dict[str, Any]):
    """The Arrow type that stores a feature given in datasets' YAML form (a class label is an int64 index)."""
    import pyarrow as pa  # imported on use: it costs the API process ~40 MB it does not otherwise need

    if "struct" in feature:
        return pa.struct([(f["name"], _arrow_type(f)) for f in feature["struct"]])
    if "list" in feature:
        return pa.list_(pa.struct([(f["name"], _arrow_type(f)) for f in feature["list"]]))
    dtype = feature["dtype"]
    if isinstance(dtype, dict):  # class_label
        return pa.int64()
    return {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}[dtype]


@dataclass(frozen=True)
class _Layout:
    """The columns of every split: the task's field columns and every column's feature, in order."""

    columns: list[_Column]
    features: list[dict[str, Any]]

    def arrow_schema(self):
        import pyarrow as pa

        return pa.schema([(f["name"], _arrow_type(f)) for f in self.features])


def _layout(task: Task) -> _Layout:
    columns = [_column(task, f) for f in task.fields]
    rest = [m for m in META_COLUMNS if m not in _BEFORE]
    features = [
        *(_meta_feature(m) for m in _BEFORE),
        *(c.feature for c in columns),
        *(_meta_feature(m) for m in rest),
    ]
    return _Layout(columns, features)


def _json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _row(layout: _Layout, rec: dict[str, Any]) -> dict[str, Any]:
    row = {
        "id": rec["id"],
        "round": rec["round"],
        "status": rec["status"],
        "fooled": rec["fooled"],
        "prediction": _json_or_none(rec["prediction"]),
        "author": rec["author"],
        "tag": rec["tag"],
        "context_id": rec["context_id"],
        "time_taken_ms": rec["time_taken_ms"],
        "created_at": rec["created_at"],
        "votes": rec["votes"],
        "flag_reason": rec["flag_reason"],
        "validations": [{**v, "corrected_target": _json_or_none(v["corrected_target"])} for v in rec["validations"]],
    }
    for column in layout.columns:
        row[column.name] = column.value(rec["fields"].get(column.field.name))
    return row


def _table(plan: ExportPlan, layout: _Layout, schema, page: _Page):
    import pyarrow as pa

    rows = [_row(layout, record(plan, page, e)) for e in page.examples]
    return pa.Table.from_pylist(rows, schema=schema)


async def write_hf(
    p: Platform,
    plan: ExportPlan,
    folder: str | os.PathLike,
    *,
    page_size: int = PAGE_SIZE,
    progress: Progress | None = None,
) -> ExportResult:
    """Write a folder that ``datasets.load_dataset(folder)`` loads: ``data/round{N}.parquet`` per round (split
    ``round{N}``, one row group per page) and a ``README.md`` dataset card describing the features.

    ``datasets`` cannot load an empty split, so a round without exported examples gets no split, and an export
    with no examples at all is refused with :class:`NotFound`.
    """
    import pyarrow.parquet as pq  # imported on use, like pyarrow in _arrow_type

    folder = Path(folder)
    if plan.total == 0:
        raise NotFound(_nothing(plan))
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InvalidInput.from_errors(
            [FieldError("out", "empty_folder", f"{folder} exists and is not an empty folder; choose a new path")]
        )
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    layout = _layout(plan.task)
    schema = layout.arrow_schema()
    counts: dict[str, int] = {}
    files = []
    for part in plan.rounds:
        if part.count == 0:
            continue
        path = data / f"{part.split}.parquet"
        writer = pq.ParquetWriter(path, schema, compression="zstd")
        written = 0
        try:
            async for page in _pages(p, plan, part, page_size):
                table = _table(plan, layout, schema, page)
                await asyncio.to_thread(writer.write_table, table, row_group_size=len(page.examples))
                written += len(page.examples)
                if progress is not None:
                    progress(len(page.examples))
        finally:
            writer.close()
        if written:
            counts[part.split] = written
            files.append(path)
        else:  # its examples changed status since the plan was made
            path.unlink()
    if not counts:
        data.rmdir()
        raise NotFound(_nothing(plan))
    card = folder / "README.md"
    card.write_text(dataset_card(plan, layout, counts), encoding="utf-8")
    return ExportResult(folder, sum(counts.values()), counts, (card, *files))


def _nothing(plan: ExportPlan) -> str:
    scope = "any round" if plan.whole_task else f"round {plan.rounds[0].round.number}"
    return (
        f"Task {plan.code} has no examples with status {', '.join(plan.statuses)} in {scope}, so there is no dataset "
        "to write; ask for other statuses or export as jsonl"
    )


# --------------------------------------------------------------------------- the dataset card


def dataset_card(plan: ExportPlan, layout: _Layout, counts: dict[str, int]) -> str:
    """README.md with YAML front matter (``configs`` and ``dataset_info``) and a human-readable body."""
    task = plan.task
    splits = [part.split for part in plan.rounds if part.split in counts]
    front = {
        "pretty_name": f"Dynaforge {task.name}",
        "tags": ["dynaforge", "adversarial"],
        "configs": [
            {
                "config_name": "default",
                "data_files": [{"split": s, "path": f"data/{s}.parquet"} for s in splits],
            }
        ],
        "dataset_info": {
            "config_name": "default",
            # No ``splits``: datasets wants their Arrow size in bytes, unknown here; the body gives the counts.
            "features": layout.features,
        },
    }
    rows = "\n".join(
        f"| `{part.split}` | {part.round.number} | {counts[part.split]} |"
        for part in plan.rounds
        if part.split in counts
    )
    fields = "\n".join(_field_line(task, c) for c in layout.columns)
    first = splits[0] if splits else "round1"
    description = f"\n{task.description.strip()}\n" if task.description.strip() else ""
    scope = "every round of the task" if plan.whole_task else f"round {plan.rounds[0].round.number}"
    return f"""---
{_yaml(front).rstrip()}
---

# Dynaforge: {task.name} (`{task.code}`)
{description}
Examples collected with Dynaforge, a platform for dynamic adversarial data collection, for the task
`{task.code}`: people wrote each example to fool a target model in the loop. This export holds {scope}:
{sum(counts.values())} examples with status {", ".join(plan.statuses)}.

| split | round | examples |
|---|---|---|
{rows}

A round without exported examples has no split.

## Load it

```python
from datasets import load_dataset

ds = load_dataset("path/to/this/folder")  # or the Hub repository you upload it to
example = ds["{first}"][0]
```

## Columns

The task's fields (their role in parentheses; context fields are repeated on each example):

{fields}

Besides the fields: `id` (the example's id on the server), `round`, `status` (CREATED, FLAGGED, ACCEPTED,
REJECTED, ...), `fooled` (whether the example fooled the target model; null if it was never predicted),
`prediction` (the model's prediction, a JSON string), `author`, `tag`, `context_id`, `time_taken_ms`,
`created_at` (ISO 8601, UTC), `votes` (validators' counts: correct, incorrect, flagged), `flag_reason` and
`validations` (each validator's pseudonym, label, corrected target as a JSON string, reason, whether an owner
gave it, and when). A choice field holds the index of its class label; -1 marks a stored value that is no
longer one of the task's labels.

## Pseudonyms

No user id or name is in this data. `author` and `validator` are pseudonyms: the first 16 hexadecimal digits
of HMAC-SHA256 of the user id, keyed on a secret of the round that never leaves the server. The same person has
the same pseudonym throughout a round, so examples and validations of one round can be grouped by person, but
pseudonyms of different rounds cannot be linked to each other.
"""


def _field_line(task: Task, column: _Column) -> str:
    f = column.field
    kind = {
        SpanField: "a span `{text, start}` of " + str(getattr(f, "context_field", "")),
        ChoiceField: "class label: " + ", ".join(column.names),
        NumberField: "number",
        BooleanField: "true or false",
        TextField: "text",
    }
    described = next((v for k, v in kind.items() if isinstance(f, k)), "a JSON string")
    note = f" — {f.description}" if f.description else ""
    renamed = f" (the task's field `{f.name}`)" if column.name != f.name else ""
    return f"- `{column.name}`{renamed} ({f.role.value}): {described}{note}"


_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*$")
_YAML_WORDS = {"true", "false", "null", "yes", "no", "on", "off", "y", "n"}


def _plain(text: str) -> bool:
    """Whether ``text`` can be written unquoted and still read back as the same string."""
    return bool(_PLAIN.match(text)) and text.lower() not in _YAML_WORDS


def _yaml_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    text = str(value)
    return text if _plain(text) else json.dumps(text, ensure_ascii=False)  # JSON strings are double-quoted YAML


def _yaml_key(key: str) -> str:
    return key if _plain(key) else json.dumps(key, ensure_ascii=False)


def _yaml(value: Any, indent: int = 0) -> str:
    """Block-style YAML for dicts, lists and scalars (what the dataset card's front matter needs)."""
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return pad + "{}\n"
        out = []
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                out.append(f"{pad}{_yaml_key(key)}:\n{_yaml(item, indent + 2)}")
            else:
                out.append(f"{pad}{_yaml_key(key)}: {_yaml_inline(item)}\n")
        return "".join(out)
    if isinstance(value, list):
        if not value:
            return pad + "[]\n"
        out = []
        for item in value:
            if isinstance(item, (dict, list)) and item:
                inner = _yaml(item, indent + 2)
                out.append(f"{pad}- {inner[indent + 2 :]}")
            else:
                out.append(f"{pad}- {_yaml_inline(item)}\n")
        return "".join(out)
    return pad + _yaml_scalar(value) + "\n"


def _yaml_inline(value: Any) -> str:
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _yaml_scalar(value)
