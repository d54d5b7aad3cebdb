"""Contexts: the passages or prompts annotators write against, how owners add them (a list, or a JSONL or CSV
file), and how the next one is chosen."""

from __future__ import annotations

import asyncio
import csv
import json
import logging
import random
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum, StrEnum
from pathlib import PurePath
from typing import Any, BinaryIO

from sqlalchemy import func, select
from sqlmodel import col

from dynaforge import files
from dynaforge.db.models import Context, Example, ExampleStatus, TaskRow, utcnow
from dynaforge.errors import Conflict, FieldError, Forbidden, InvalidInput, NotFound, text_problem
from dynaforge.files import Problems
from dynaforge.services import cursors
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_user
from dynaforge.services.platform import Platform
from dynaforge.services.tasks import ContextStrategy
from dynaforge.tasks.base import Task
from dynaforge.tasks.fields import Field, Role

log = logging.getLogger(__name__)

_SAMPLE = 16

MAX_CONTEXTS_PER_CALL = 1000
MAX_TAG_LENGTH = 100
#: At most this many problems of an uploaded file are listed; the rest are counted.
MAX_REPORTED_ERRORS = files.MAX_REPORTED
#: Uploaded contexts are inserted this many at a time (all in one transaction).
INSERT_BATCH = 500
#: A column (CSV) or key (JSONL) of this name is the row's tag, unless the task has a context field of that name.
TAG_COLUMN = "tag"


STRATEGY_DESCRIPTIONS: dict[ContextStrategy, str] = {
    ContextStrategy.LEAST_USED: "A context used the fewest times (ties at random): spreads annotators evenly",
    ContextStrategy.UNIFORM: "Any context of the round, uniformly at random",
    ContextStrategy.LEAST_FOOLED: "A context whose examples fooled the model the fewest times, then the least used",
    ContextStrategy.VALIDATION_FAILED: "A context whose examples validators rejected most often, then the least used",
}
DEFAULT_STRATEGY = ContextStrategy.LEAST_USED


class ContextFileFormat(StrEnum):
    """Formats of context files: one JSON object per line, or CSV with a header row."""

    JSONL = "jsonl"
    CSV = "csv"


_SUFFIXES = {".jsonl": ContextFileFormat.JSONL, ".ndjson": ContextFileFormat.JSONL, ".csv": ContextFileFormat.CSV}


@dataclass(frozen=True)
class UploadedContexts:
    """What an upload added: the new contexts' ids in file order, and the round they joined."""

    task_code: str
    round_number: int
    ids: list[int]


# --------------------------------------------------------------------------- adding contexts


def _context_fields(task: Task) -> list[Field]:
    return task.fields_with(Role.CONTEXT)


def _refuse_contextless(task: Task) -> None:
    """Tasks without context fields have their examples written from scratch: there is nothing to store."""
    if not _context_fields(task):
        raise InvalidInput.from_errors(
            [
                FieldError(
                    "contexts",
                    "no_context_fields",
                    f"task {task.code} takes no contexts: it has no context fields, so annotators write its examples "
                    "without one",
                )
            ]
        )


def _check_tag(tag: str | None, field: str = "tag") -> None:
    if tag is not None and not 1 <= len(tag) <= MAX_TAG_LENGTH:
        raise InvalidInput.from_errors([FieldError(field, "length", f"must have 1 to {MAX_TAG_LENGTH} characters")])


def _empty_message(task: Task) -> str:
    names = ", ".join(f.name for f in _context_fields(task))
    return f"has none of the context fields of task {task.code} ({names}); give at least one"


async def add_contexts(
    p: Platform,
    actor: Actor,
    task_code: str,
    contexts: list[Any],
    *,
    tag: str | None = None,
) -> list[int]:
    """Add contexts to the task's current round: owners and admins only; all or nothing."""
    actor = require_user(actor)
    view = await task_service.get_task(p, actor, task_code)
    _refuse_contextless(view.task)
    if not contexts or len(contexts) > MAX_CONTEXTS_PER_CALL:
        raise InvalidInput.from_errors(
            [FieldError("contexts", "count", f"give 1 to {MAX_CONTEXTS_PER_CALL} contexts per call")]
        )
    _check_tag(tag)
    cleaned: list[dict[str, Any]] = []
    errors: list[FieldError] = []
    for i, values in enumerate(contexts):
        try:
            row = view.task.validate_context(values)
        except InvalidInput as exc:
            errors.extend(FieldError(f"contexts[{i}].{e.field}", e.rule, e.message) for e in exc.field_errors)
            continue
        if not row:
            errors.append(FieldError(f"contexts[{i}]", "empty", _empty_message(view.task)))
        cleaned.append(row)
    if errors:
        raise InvalidInput.from_errors(errors)
    async with p.db.write() as s:
        if not await task_service.is_owner(s, actor, view.row.id):
            raise Forbidden(f"Only owners of {task_code} and admins can add contexts")
        round_ = await task_service.require_current_round(s, view.row.id, view.task.code)
        rows = [Context(task_id=view.row.id, round_id=round_.id, fields=values, tag=tag) for values in cleaned]
        s.add_all(rows)
        await s.flush()
        return [r.id for r in rows]


# --------------------------------------------------------------------------- uploading a file


def detect_format(filename: str | None, given: ContextFileFormat | str | None = None) -> ContextFileFormat:
    """The format of a context file: ``given`` when set (``jsonl`` or ``csv``), else from the file name's suffix."""
    if given is not None:
        try:
            return ContextFileFormat(given.value if isinstance(given, ContextFileFormat) else str(given).lower())
        except ValueError:
            raise InvalidInput.from_errors(
                [FieldError("format", "choice", f"{given!r} is not a context file format; use jsonl or csv")]
            ) from None
    suffix = PurePath(filename or "").suffix.lower()
    if suffix in _SUFFIXES:
        return _SUFFIXES[suffix]
    raise InvalidInput.from_errors(
        [
            FieldError(
                "format",
                "required",
                f"cannot tell the format of {filename or 'the file'!r} from its name; name it .jsonl or .csv, "
                "or give the format (jsonl or csv)",
            )
        ]
    )


def _jsonl_records(
    task: Task, lines: Iterator[tuple[int, bytes]], problems: Problems
) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """A context file's JSONL records (see :func:`dynaforge.files.jsonl_objects`)."""
    return files.jsonl_objects(lines, problems, json.dumps({f.name: "..." for f in _context_fields(task)}))


def _from_cell(field: Field, task: Task, cell: str) -> Any:
    """A CSV cell as the value the field expects (numbers, booleans and JSON objects are written as text)."""
    kind = field.value_schema(task).get("type")
    text = cell.strip()
    if kind in ("integer", "number"):
        for convert in (int, float):
            try:
                return convert(text)
            except ValueError:
                pass
    elif kind == "boolean":
        lowered = text.lower()
        if lowered in ("true", "yes", "1"):
            return True
        if lowered in ("false", "no", "0"):
            return False
    elif kind in ("object", "array"):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            pass
    return cell  # as written: the field's own check says what is wrong with it


def _csv_records(
    task: Task, lines: Iterator[tuple[int, bytes]], problems: Problems, tag_column: bool
) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """One record per data row (numbered by the line it starts on), after a header naming the columns."""
    fields = {f.name: f for f in _context_fields(task)}
    expected = ", ".join(
        [f"{f.name} ({'required' if f.required else 'optional'})" for f in fields.values()]
        + ([f"{TAG_COLUMN} (optional)"] if tag_column else [])
    )
    rows = files.CsvRows(lines, problems)
    try:
        first = rows.header()  # the first row that is not blank
    except csv.Error as exc:
        raise files.row_error(files.at(rows.line), "csv", f"cannot be read as CSV: {exc}") from None
    if first is None:
        return
    number, columns = first
    at = files.at(number)
    header_errors = []
    for position, column in enumerate(columns, start=1):
        if not column:
            header_errors.append(FieldError(f"{at}.column {position}", "required", f"has no name; expected {expected}"))
        elif column in columns[: position - 1]:
            header_errors.append(FieldError(f"{at}.{column}", "duplicate", "is named twice; name each column once"))
        elif column not in fields and not (tag_column and column == TAG_COLUMN):
            header_errors.append(
                FieldError(
                    f"{at}.{column}",
                    "unknown_column",
                    f"is not a context field of task {task.code}; expected columns: {expected}",
                )
            )
    if not header_errors and not any(column in fields for column in columns):
        header_errors.append(FieldError(at, "columns", f"names none of the context fields; expected {expected}"))
    if header_errors:
        raise InvalidInput(
            f"Nothing was added: the header of the file is wrong ({header_errors[0].field}: "
            f"{header_errors[0].message}); fix it and upload the file again",
            header_errors,
        )
    while True:
        try:
            start, row = next(rows)
        except StopIteration:
            return
        except csv.Error as exc:
            problems.add(rows.line, None, "csv", f"cannot be read as CSV: {exc}; check its quotes")
            return
        if len(row) != len(columns):
            problems.add(start, None, "columns", f"has {len(row)} cells but the header names {len(columns)} columns")
            yield start, None
            continue
        record: dict[str, Any] = {}
        for column, cell in zip(columns, row, strict=True):
            if not cell.strip():
                continue  # an empty cell is a value left out
            record[column] = cell if column not in fields else _from_cell(fields[column], task, cell)
        yield start, record


def parse_context_file(
    task: Task,
    source: BinaryIO,
    fmt: ContextFileFormat,
    *,
    tag: str | None = None,
    max_bytes: int,
    max_rows: int,
    name: str = "the file",
) -> list[tuple[dict[str, Any], str | None]]:
    """Read and validate a whole context file, streaming it line by line.

    Returns each row's cleaned context fields with its tag (the row's own ``tag``, else ``tag``), in file order. Raises
    :class:`InvalidInput` when the file breaks a limit or any row is wrong; its field errors name the line and the
    field (``line 7.passage``), at most ``MAX_REPORTED_ERRORS`` of them plus a count of the rest. The file is read by
    :mod:`dynaforge.files`, as every uploaded or imported file is.
    """
    _refuse_contextless(task)
    names = {f.name for f in _context_fields(task)}
    tag_column = TAG_COLUMN not in names
    expected = ", ".join(sorted(names)) + (f", and optionally {TAG_COLUMN}" if tag_column else "")
    problems = Problems()
    lines = files.numbered_lines(source, max_bytes)
    if fmt == ContextFileFormat.JSONL:
        records = _jsonl_records(task, lines, problems)
    else:
        records = _csv_records(task, lines, problems, tag_column)
    rows: list[tuple[dict[str, Any], str | None]] = []
    count = 0
    for number, record in records:
        count += 1
        if count > max_rows:
            raise files.file_error(
                "max_rows",
                f"has more than {max_rows} contexts; split it into files of at most {max_rows} rows and upload each",
            )
        if record is None:
            continue
        if problem := text_problem(record):  # NUL, unpaired surrogates, NaN: no store takes them
            problems.add(number, None, "text", problem)
            continue
        row_tag = tag
        if tag_column and TAG_COLUMN in record:
            value = record.pop(TAG_COLUMN)
            if isinstance(value, str) and value.strip():
                row_tag = value.strip()
                if len(row_tag) > MAX_TAG_LENGTH:
                    problems.add(number, TAG_COLUMN, "length", f"must have 1 to {MAX_TAG_LENGTH} characters")
            elif value is not None and value != "":
                problems.add(number, TAG_COLUMN, "type", f"must be a text of 1 to {MAX_TAG_LENGTH} characters")
        unknown = [key for key in record if key not in names]
        for key in unknown:
            message = f"is not a context field of task {task.code}; expected {expected}"
            problems.add(number, key, "unknown_field", message)
        try:
            cleaned = task.validate_context({k: v for k, v in record.items() if k in names})
        except InvalidInput as exc:
            for e in exc.field_errors:
                problems.add(number, e.field, e.rule, e.message)
            continue
        if not cleaned and not unknown:
            problems.add(number, None, "empty", _empty_message(task))
        rows.append((cleaned, row_tag))
    problems.raise_if_any(files.nothing_added(name))
    if not rows:
        raise files.file_error(
            "empty", f"{name} has no contexts; give one per line (JSONL) or per row after a header (CSV)"
        )
    return rows


async def upload_contexts(
    p: Platform,
    actor: Actor,
    task_code: str,
    source: BinaryIO,
    *,
    filename: str | None = None,
    file_format: ContextFileFormat | str | None = None,
    tag: str | None = None,
) -> UploadedContexts:
    """Add every context of a JSONL or CSV file to the task's current round: owners and admins only.

    All or nothing: the file is read and validated in full first (off the event loop), and the rows are inserted in
    batches inside one transaction only when no row is wrong. The limits are ``context_upload_max_bytes`` and
    ``context_upload_max_rows``.
    """
    actor = require_user(actor)
    view = await task_service.get_task(p, actor, task_code)
    async with p.db.session() as s:
        if not await task_service.is_owner(s, actor, view.row.id):
            raise Forbidden(f"Only owners of {task_code} and admins can upload contexts")
    _refuse_contextless(view.task)
    fmt = detect_format(filename, file_format)
    _check_tag(tag)
    settings = p.settings
    rows = await asyncio.to_thread(
        parse_context_file,
        view.task,
        source,
        fmt,
        tag=tag,
        max_bytes=settings.context_upload_max_bytes,
        max_rows=settings.context_upload_max_rows,
        name=repr(filename) if filename else "the file",
    )
    ids: list[int] = []
    async with p.db.write() as s:
        round_ = await task_service.require_current_round(s, view.row.id, view.task.code)
        for start in range(0, len(rows), INSERT_BATCH):
            batch = [
                Context(task_id=view.row.id, round_id=round_.id, fields=values, tag=row_tag)
                for values, row_tag in rows[start : start + INSERT_BATCH]
            ]
            s.add_all(batch)
            await s.flush()
            ids.extend(r.id for r in batch)
            for r in batch:
                s.expunge(r)
        number = round_.number
    log.info("uploaded %d contexts to round %d of %s", len(ids), number, task_code)
    return UploadedContexts(task_code=task_code, round_number=number, ids=ids)


# --------------------------------------------------------------------------- choosing the next context


def resolve_strategy(explicit: ContextStrategy | str | None, stored: Any = None) -> ContextStrategy:
    """The strategy asked for, else the task's ``context_strategy`` setting, else least used.

    An unknown strategy asked for is an error; an unknown stored one is logged and ignored.
    """
    if explicit is not None:
        try:
            return ContextStrategy(explicit.value if isinstance(explicit, Enum) else explicit)
        except ValueError:
            choices = ", ".join(s.value for s in ContextStrategy)
            raise InvalidInput.from_errors(
                [FieldError("strategy", "choice", f"{explicit!r} is not a strategy; use one of {choices}")]
            ) from None
    if stored is None:
        return DEFAULT_STRATEGY
    try:
        return ContextStrategy(stored)
    except ValueError:
        log.warning("ignoring unknown context_strategy %r in task settings; using %s", stored, DEFAULT_STRATEGY.value)
        return DEFAULT_STRATEGY


async def _least_used(s, where: list[Any], round_id: int) -> list[Context]:
    least = await s.scalar(select(func.min(col(Context.total_used))).where(*where))
    if least is None:
        return []
    query = select(Context).where(*where, col(Context.total_used) == least).order_by(col(Context.id)).limit(_SAMPLE)
    return list(await s.scalars(query))


async def _uniform(s, where: list[Any], round_id: int) -> list[Context]:
    # Count, then one row at a random offset: nothing but the chosen row is loaded. The order follows the
    # (round_id, total_used, id) index, so the database skips rows without sorting them.
    total = await s.scalar(select(func.count()).select_from(Context).where(*where))
    if not total:
        return []
    ordered = select(Context).where(*where).order_by(col(Context.total_used), col(Context.id))
    row = await s.scalar(ordered.offset(random.randrange(total)).limit(1))
    if row is None:  # rows went away between the two statements
        row = await s.scalar(ordered.limit(1))
    return [] if row is None else [row]


async def _least_fooled(s, where: list[Any], round_id: int) -> list[Context]:
    key = (
        await s.execute(
            select(col(Context.total_fooled), col(Context.total_used))
            .where(*where)
            .order_by(col(Context.total_fooled), col(Context.total_used))
            .limit(1)
        )
    ).first()
    if key is None:
        return []
    query = (
        select(Context)
        .where(*where, col(Context.total_fooled) == key[0], col(Context.total_used) == key[1])
        .order_by(col(Context.id))
        .limit(_SAMPLE)
    )
    return list(await s.scalars(query))


async def _validation_failed(s, where: list[Any], round_id: int) -> list[Context]:
    rejected = (
        select(col(Example.context_id).label("context_id"), func.count().label("rejected"))
        .where(
            col(Example.round_id) == round_id,
            col(Example.status) == ExampleStatus.REJECTED,
            col(Example.context_id).is_not(None),
        )
        .group_by(col(Example.context_id))
        .subquery()
    )
    score = func.coalesce(rejected.c.rejected, 0)
    joined = select(Context).outerjoin(rejected, rejected.c.context_id == col(Context.id)).where(*where)
    key = (
        await s.execute(
            joined.with_only_columns(score, col(Context.total_used))
            .order_by(score.desc(), col(Context.total_used))
            .limit(1)
        )
    ).first()
    if key is None:
        return []
    query = joined.where(score == key[0], col(Context.total_used) == key[1]).order_by(col(Context.id)).limit(_SAMPLE)
    return list(await s.scalars(query))


_PICKERS = {
    ContextStrategy.LEAST_USED: _least_used,
    ContextStrategy.UNIFORM: _uniform,
    ContextStrategy.LEAST_FOOLED: _least_fooled,
    ContextStrategy.VALIDATION_FAILED: _validation_failed,
}


async def next_context(
    p: Platform,
    actor: Actor,
    task_code: str,
    *,
    tag: str | None = None,
    strategy: ContextStrategy | str | None = None,
) -> Context:
    """One of the current round's contexts (only those tagged ``tag`` when given), chosen by ``strategy``.

    Without a strategy the task's ``context_strategy`` setting applies, else least used. Ties are broken at random
    among a few candidates, so concurrent annotators spread over contexts instead of all getting the same one.
    """
    view = await task_service.get_task(p, actor, task_code)
    chosen = resolve_strategy(strategy, (view.row.settings or {}).get("context_strategy"))
    async with p.db.session() as s:
        round_ = await task_service.require_current_round(s, view.row.id, view.task.code)
        where = [col(Context.round_id) == round_.id, col(Context.retired_at).is_(None)]
        if tag is not None:
            where.append(col(Context.tag) == tag)
        candidates = await _PICKERS[chosen](s, where, round_.id)
    if not candidates:
        raise NotFound(f"Round {round_.number} of {task_code} has no contexts{' tagged ' + tag if tag else ''} yet")
    return random.choice(candidates)


async def get_context(p: Platform, context_id: int) -> Context | None:
    async with p.db.session() as s:
        return await s.get(Context, context_id)


async def visible_context(p: Platform, actor: Actor, context_id: int) -> Context:
    """A context of a task ``actor`` may see (anyone who may write against it may read it); NotFound otherwise."""
    row = await get_context(p, context_id)
    if row is None:
        raise NotFound(f"No context {context_id}")
    await task_service.visible_task(p, actor, row.task_id)
    return row


async def list_contexts(
    p: Platform,
    actor: Actor,
    task_code: str,
    *,
    round_number: int | None = None,
    tag: str | None = None,
    first: int | None = None,
    after: str | None = None,
    last: int | None = None,
    before: str | None = None,
) -> cursors.Listing:
    """A task's contexts in service (not retired), newest first (those of one round, with one tag, when asked):
    owners and admins only."""
    actor = require_user(actor)
    request = cursors.PageRequest.of(
        "context", first=first, after=after, last=last, before=before, max_size=p.settings.page_max_size
    )
    view = await task_service.get_task(p, actor, task_code)
    where = [col(Context.task_id) == view.row.id, col(Context.retired_at).is_(None)]
    if tag is not None:
        where.append(col(Context.tag) == tag)
    async with p.db.session() as s:
        if not await task_service.is_owner(s, actor, view.row.id):
            raise Forbidden(f"Only owners of {task_code} and admins can list its contexts")
        if round_number is not None:
            where.append(col(Context.round_id) == await task_service.round_id_of(s, view.row.id, round_number))
        statement = select(Context).where(*where)
        page = await cursors.window(s, statement, col(Context.id), "context", request)
    return cursors.Listing(page, cursors.counter(p, statement))


async def _owned_context(s: Any, actor: Actor, context_id: int) -> Context:
    """A context in service that ``actor`` may change (an owner of its task, or an admin)."""
    row = await s.get(Context, context_id, with_for_update=s.get_bind().dialect.name == "postgresql")
    if row is None:
        raise NotFound(f"No context {context_id}")
    if not await task_service.is_owner(s, actor, row.task_id):
        task = await s.get(TaskRow, row.task_id)
        if task is None or task.hidden:
            raise NotFound(f"No context {context_id}")
        raise Forbidden("Only the task's owners and admins change its contexts")
    if row.retired_at is not None:
        raise Conflict(f"Context {context_id} was retired (replaced or deleted); change its successor instead")
    return row


async def replace_context(
    p: Platform, actor: Actor, context_id: int, *, fields: Any = None, tag: str | None = None
) -> tuple[Context, Context]:
    """An owner's edit: the context is retired and a successor with the new fields (and tag) takes its place in
    the same round, so examples written against the old text keep it. Returns ``(successor, retired)``."""
    actor = require_user(actor)
    if tag is not None:
        _check_tag(tag)
    async with p.db.write() as s:
        old = await _owned_context(s, actor, context_id)
        code = await s.scalar(select(col(TaskRow.code)).where(col(TaskRow.id) == old.task_id))
        task = None if code is None else p.plugins.task(code)
        if task is None:
            raise NotFound(f"No context {context_id}")
        values = old.fields
        if fields is not None and not isinstance(fields, dict):
            raise InvalidInput.from_errors([FieldError("fields", "type", "must be an object of context field values")])
        if fields is not None:
            try:
                values = task.validate_context(fields)
            except InvalidInput as exc:
                raise InvalidInput.from_errors(
                    [FieldError(f"fields.{e.field}", e.rule, e.message) for e in exc.field_errors]
                ) from None
            if not values:
                raise InvalidInput.from_errors([FieldError("fields", "empty", _empty_message(task))])
        new = Context(task_id=old.task_id, round_id=old.round_id, fields=values, tag=old.tag if tag is None else tag)
        s.add(new)
        await s.flush()
        old.retired_at = utcnow()
        old.successor_id = new.id
        await s.flush()
    return new, old


async def retire_context(p: Platform, actor: Actor, context_id: int) -> Context:
    """An owner's delete: the context is no longer served, listed or copied to the next round; the row stays for
    the examples written against it."""
    actor = require_user(actor)
    async with p.db.write() as s:
        row = await _owned_context(s, actor, context_id)
        row.retired_at = utcnow()
        await s.flush()
    return row
