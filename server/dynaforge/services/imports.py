"""Importing existing data sets into a task: all the examples of a file, or none.

``import_examples`` reads the file twice with the chosen importer (see :mod:`dynaforge.importers`). The first pass
validates every record (the importer's reading, then the task's ``validate_example`` and the example's own values)
and collects the errors with their locations; nothing is written when there is any. The second pass validates
again (the file is streamed, never held in memory) and inserts the examples in batches inside one transaction, with
the round and user counters bumped by the same rule as every other change of an example's state
(``counters.delta``), so a failure half-way leaves nothing behind and the stored counters equal a recount.

Imported examples carry their context in their fields (there is no context row), like an example written without
one. They do not announce themselves through the ``example_created`` and ``model_fooled`` events: an import is a
bulk load, not annotators at work.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from dynaforge.db.models import Example, ExampleStatus, Round, User, table, utcnow
from dynaforge.errors import FieldError, Forbidden, InvalidInput, NotFound
from dynaforge.files import MAX_REPORTED, Problems
from dynaforge.importers import ImportedExample, Importer, SkippedRow
from dynaforge.services import counters
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_user
from dynaforge.services.platform import Platform
from dynaforge.tasks.base import Task
from dynaforge.tasks.fields import Role

BATCH_SIZE = 500
MAX_REPORTED_ERRORS = MAX_REPORTED
#: The service account that authors imported examples when no user is named. It cannot sign in: it is inactive and
#: its password hash is no hash at all, so no password verifies against it.
IMPORTER_USERNAME = "importer"
IMPORTER_EMAIL = "importer@dynaforge.invalid"
UNUSABLE_PASSWORD = "!unusable"

#: ``progress(phase, done, total)``: phase ``"checking"`` (total unknown: None) then ``"importing"``.
Progress = Callable[[str, int, "int | None"], None]


@dataclass(frozen=True)
class ImportReport:
    """What an import did: how many examples went into which round of which task, by whom, and what was skipped."""

    task_code: str
    format: str
    count: int
    round_number: int
    username: str
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> number of records

    @property
    def skipped_count(self) -> int:
        return sum(self.skipped.values())


@dataclass
class _Checked:
    """An imported example that passed every check: its stored fields and values."""

    fields: dict[str, Any]
    source: ImportedExample


def importers_for(p: Platform, task: Task) -> list[Importer]:
    """The registered importers that can read data for ``task``, by name."""
    return sorted((i for i in p.plugins.registry.importers.values() if i.supports(task)), key=lambda i: i.name)


def choose_importer(p: Platform, task: Task, name: str) -> Importer:
    """The importer called ``name`` if it reads data for ``task``; else InvalidInput listing those that do."""
    available = ", ".join(i.name for i in importers_for(p, task)) or "none"
    importer = p.plugins.registry.importers.get(name)
    if importer is None:
        message = f"no importer {name!r}; the importers for task {task.code} are: {available}"
    elif not importer.supports(task):
        message = (
            f"importer {name!r} reads data for task {importer.task_code}, not {task.code}; "
            f"the importers for task {task.code} are: {available}"
        )
    else:
        return importer
    raise InvalidInput.from_errors([FieldError("format", "choice", message)])


async def import_examples(
    p: Platform,
    actor: Actor,
    *,
    task_code: str,
    format: str,
    path: Path | str,
    round_number: int | None = None,
    username: str | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import every example of the file at ``path`` into ``task_code``, or none (see the module's docstring).

    Only the task's owners and admins may import. The examples go into the task's current round unless
    ``round_number`` names another, and are authored by ``username`` if given, else by the ``importer`` service
    account (created on first use). A person imports as themself or a machine account, never as another person
    (whose counts and leaderboard rank the examples would change, and who could no longer validate them); the
    operator (the system actor, ``dynaforge import --user``) may name anyone. Raises InvalidInput listing the first
    errors with their locations (``line 7: ...``) when any record is unusable, NotFound for an unknown task, round
    or user, and Forbidden for another person named as the author.
    """
    actor = require_user(actor)
    view = await task_service.get_task(p, actor, task_code)
    task = view.task
    async with p.db.session() as s:
        if not await task_service.is_owner(s, actor, view.row.id):
            raise Forbidden(f"Only owners of {task_code} and admins can import examples into it")
        round_ = await _round(s, view.row.id, task_code, round_number)
        author = await _author(s, actor, username) if username is not None else None
    importer = choose_importer(p, task, format)
    path = Path(path)
    if not path.is_file():
        raise InvalidInput.from_errors(
            [FieldError("path", "not_found", f"{path} is not a file; give the path of the data set's file")]
        )

    # Pass 1: read and validate everything, write nothing.
    problems = Problems(more_rule="too_many_errors", again="import again")
    skipped: Counter[str] = Counter()
    count = 0
    for n, item in enumerate(_checked(importer, path, task, skipped), start=1):
        if isinstance(item, InvalidInput):
            problems.extend(item.field_errors)  # named by the record's location already
        else:
            count += 1
        if progress is not None:
            progress("checking", count + problems.records + sum(skipped.values()), None)
        if n % BATCH_SIZE == 0:
            await asyncio.sleep(0)  # reading is synchronous: let the event loop serve others now and then
    problems.raise_if_any(
        lambda found: (
            f"Nothing was imported: {found.records} record(s) of {path.name} cannot be imported into "
            f"{task_code}; fix them and import the file again. "
            + "; ".join(f"{e.field}: {e.message}" for e in found.errors())
        )
    )
    if count == 0:
        raise InvalidInput.from_errors(
            [
                FieldError(
                    "file",
                    "empty",
                    f"holds no example for task {task_code}"
                    + (f" ({sum(skipped.values())} record(s) skipped: {', '.join(skipped)})" if skipped else ""),
                )
            ]
        )

    # Pass 2: read again and insert, all in one transaction.
    inserted = 0
    async with p.db.write() as s:
        user = author or await _service_account(s)
        user_id, username_used = user.id, user.username
        batch: list[_Checked] = []
        for item in _checked(importer, path, task, Counter()):
            if isinstance(item, InvalidInput):  # the file changed since the first pass: roll everything back
                raise InvalidInput(
                    f"{path.name} changed during the import; nothing was imported. " + item.message, item.field_errors
                )
            batch.append(item)
            if len(batch) == BATCH_SIZE:
                inserted += await _insert(s, view.row.id, round_.id, user_id, batch)
                batch = []
                if progress is not None:
                    progress("importing", inserted, count)
        if batch:
            inserted += await _insert(s, view.row.id, round_.id, user_id, batch)
            if progress is not None:
                progress("importing", inserted, count)
        if inserted != count:
            raise InvalidInput.from_errors(
                [
                    FieldError(
                        "file",
                        "changed",
                        f"held {count} examples when it was checked and {inserted} when it was imported: it changed "
                        f"during "
                        "the import, so nothing was imported; import it again",
                    )
                ]
            )
    p.caches.rounds.pop(view.row.id)
    return ImportReport(
        task_code=task_code,
        format=importer.name,
        count=inserted,
        round_number=round_.number,
        username=username_used,
        skipped=dict(skipped),
    )


def records_of(importer: Importer, path: Path, task: Task) -> list[tuple[str, dict[str, Any]]]:
    """Every example of the file as ``(location, fields)`` pairs (a data set's records, for
    ``datasets.create_dataset``), skipped records left out; InvalidInput naming every unreadable record at once."""
    problems = Problems(again="import again")
    records = []
    for item in importer.scan(path, task):
        if isinstance(item, InvalidInput):
            problems.extend(item.field_errors)
        elif isinstance(item, ImportedExample):
            records.append((item.location, item.fields))
    problems.raise_if_any()
    return records


# --------------------------------------------------------------------------- checks


def _checked(importer: Importer, path: Path, task: Task, skipped: Counter[str]) -> Iterator[_Checked | InvalidInput]:
    """Each record of the file as a checked example or as its error; skipped records are counted in ``skipped``."""
    for item in importer.scan(path, task):
        if isinstance(item, SkippedRow):
            skipped[item.reason] += 1
        elif isinstance(item, InvalidInput):
            yield item
        elif isinstance(item, ImportedExample):
            try:
                yield _Checked(_check(item, task), item)
            except InvalidInput as exc:
                yield exc
        else:
            yield InvalidInput.from_errors(
                [
                    FieldError(
                        "file",
                        "importer",
                        f"importer {importer.name!r} produced {type(item).__name__}, not an ImportedExample; report "
                        f"it to "
                        "the plugin's authors",
                    )
                ]
            )


def _check(item: ImportedExample, task: Task) -> dict[str, Any]:
    """The fields to store for ``item`` (as ``submit`` stores an example without a context), after every check;
    raises InvalidInput whose errors are named after the item's location."""
    where = item.location or "record"
    problems: list[FieldError] = []
    try:
        cleaned = task.validate_example(item.fields, None)
    except InvalidInput as exc:
        problems.extend(FieldError(where, e.rule, f"field {e.field}: {e.message}") for e in exc.field_errors)
        cleaned = {}
    if item.status not in ExampleStatus.ALL:
        known = ", ".join(ExampleStatus.ALL)
        problems.append(FieldError(where, "status", f"status must be one of {known}; got {item.status!r}"))
    elif item.status == ExampleStatus.PENDING_PREDICTION:
        problems.append(
            FieldError(
                where,
                "status",
                "has status PENDING_PREDICTION: the model never answered it, so it cannot be counted; let the server "
                "that collected it predict it and export it again, or leave it out",
            )
        )
    if item.fooled is not None and not isinstance(item.fooled, bool):
        problems.append(FieldError(where, "fooled", f"fooled must be true, false or null; got {item.fooled!r}"))
    for name in ("votes_correct", "votes_incorrect", "votes_flagged"):
        value = getattr(item, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            problems.append(FieldError(where, "votes", f"{name} must be a whole number of at least 0; got {value!r}"))
    if item.tag is not None and (not isinstance(item.tag, str) or len(item.tag) > 100):
        problems.append(FieldError(where, "tag", "tag must be a string of at most 100 characters"))
    if item.flag_reason is not None and (not isinstance(item.flag_reason, str) or len(item.flag_reason) > 2000):
        problems.append(FieldError(where, "flag_reason", "flag_reason must be a string of at most 2000 characters"))
    if item.time_taken_ms is not None and (
        isinstance(item.time_taken_ms, bool) or not isinstance(item.time_taken_ms, int) or item.time_taken_ms < 0
    ):
        problems.append(FieldError(where, "time_taken_ms", "time_taken_ms must be a whole number of at least 0"))
    if item.prediction is not None and not isinstance(item.prediction, dict):
        problems.append(FieldError(where, "prediction", "prediction must be an object or null"))
    if not isinstance(item.model_predictions, list):
        problems.append(FieldError(where, "model_predictions", "model_predictions must be a list"))
    if not problems:
        problems.extend(_storable(where, item, cleaned))
    if problems:
        raise InvalidInput.from_errors(problems)
    context = {k: cleaned.pop(k) for k in task.field_names(Role.CONTEXT) if k in cleaned}
    return {**context, **cleaned}


def _storable(where: str, item: ImportedExample, cleaned: dict[str, Any]) -> list[FieldError]:
    """JSON values the databases can store: serialisable, and without NUL characters (PostgreSQL refuses them)."""
    values = {
        "fields": cleaned,
        "prediction": item.prediction,
        "model_predictions": item.model_predictions,
        "tag": item.tag,
        "flag_reason": item.flag_reason,
    }
    problems = []
    for name, value in values.items():
        try:
            text = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            problems.append(FieldError(where, "json", f"{name} cannot be stored as JSON ({exc})"))
            continue
        if "\\u0000" in text:
            problems.append(FieldError(where, "nul", f"{name} contains a NUL character; remove it from the file"))
    return problems


# --------------------------------------------------------------------------- storage


async def _round(s: AsyncSession, task_id: int, task_code: str, number: int | None) -> Round:
    if number is None:
        round_ = await task_service.current_round(s, task_id)
    else:
        round_ = await s.scalar(select(Round).where(col(Round.task_id) == task_id, col(Round.number) == number))
    if round_ is None:
        numbers = list(
            await s.scalars(select(col(Round.number)).where(col(Round.task_id) == task_id).order_by(col(Round.number)))
        )
        known = ", ".join(map(str, numbers)) or "none"
        what = f"round {number}" if number is not None else "round"
        raise NotFound(f"Task {task_code} has no {what}; its rounds are: {known}")
    return round_


async def _named_user(s: AsyncSession, username: str) -> User:
    user = await s.scalar(select(User).where(col(User.username) == username))
    if user is None:
        raise NotFound(f"No user named {username!r}; create it first (dynaforge users create) or leave the user out")
    return user


async def _author(s: AsyncSession, actor: Actor, username: str) -> User:
    """The user ``username`` names, if ``actor`` may credit imported examples to them (see ``import_examples``)."""
    user = await _named_user(s, username)
    if actor.is_system or user.id == actor.user_id or user.is_machine or _is_service_account(user):
        return user
    raise Forbidden(
        f"{username!r} is another person: imported examples are credited to you or to a machine account, never to "
        "someone else; leave the user out (the importer service account authors them) or name yourself"
    )


def _is_service_account(user: User) -> bool:
    return user.username == IMPORTER_USERNAME and not user.is_active and user.password_hash == UNUSABLE_PASSWORD


async def _service_account(s: AsyncSession) -> User:
    """The ``importer`` account, created (inactive, unable to sign in) on first use."""
    user = await s.scalar(select(User).where(col(User.username) == IMPORTER_USERNAME))
    if user is None:
        user = User(username=IMPORTER_USERNAME, email=IMPORTER_EMAIL, password_hash=UNUSABLE_PASSWORD, is_active=False)
        s.add(user)
        await s.flush()
    elif not _is_service_account(user):
        raise Forbidden(
            f"The username {IMPORTER_USERNAME!r} belongs to a person, not to the import service account; "
            "name the author of the imported examples with a user"
        )
    return user


async def _insert(s: AsyncSession, task_id: int, round_id: int, user_id: int, batch: Iterable[_Checked]) -> int:
    """Insert one batch of checked examples (one multi-row statement) and bump the counters by their summed
    contributions."""
    now = utcnow()
    totals: Counter[str] = Counter()
    rows = []
    for checked in batch:
        item = checked.source
        totals.update(counters.delta(None, (item.status, item.fooled)))
        votes = (item.votes_correct, item.votes_incorrect, item.votes_flagged)
        rows.append(
            {
                "task_id": task_id,
                "round_id": round_id,
                "context_id": None,
                "user_id": user_id,
                "fields": checked.fields,
                "prediction": item.prediction,
                "model_predictions": item.model_predictions,
                "fooled": item.fooled,
                "status": item.status,
                "tag": item.tag,
                "time_taken_ms": item.time_taken_ms,
                "source": item.source,
                "adversary": item.adversary,
                "inference_ms": None,
                "validations_correct": votes[0],
                "validations_incorrect": votes[1],
                "validations_flagged": votes[2],
                "validations_total": sum(votes),
                "flag_reason": item.flag_reason,
                "decided_at": now if item.status in (ExampleStatus.ACCEPTED, ExampleStatus.REJECTED) else None,
                "created_at": now,
                "updated_at": now,
            }
        )
    if rows:
        await s.execute(insert(table(Example)), rows)
    await counters.bump(s, round_id=round_id, user_id=user_id, **totals)
    return len(rows)
