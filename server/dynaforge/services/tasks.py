"""Tasks and rounds: a row per registered task, reading tasks, task settings, ownership, opening and closing rounds."""

from __future__ import annotations

import asyncio
import logging
import secrets
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sqlalchemy import DateTime, insert, literal, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from dynaforge.db.models import Context, Example, ExampleStatus, Round, TaskOwner, TaskRow, User, utcnow
from dynaforge.errors import Conflict, FieldError, Forbidden, InvalidInput, NotFound, RoundClosed
from dynaforge.model_artifacts import ArtifactStore
from dynaforge.outbound import OutboundPolicy, OutboundRefused
from dynaforge.services import announce, registry
from dynaforge.services.actor import Actor, require_user
from dynaforge.services.platform import Platform
from dynaforge.services.task_loading import load_if_declared
from dynaforge.tasks.base import ModelSpec, Task

log = logging.getLogger(__name__)

ENSEMBLE_RULES = {
    "majority": "fooled when the ensemble's majority prediction is wrong (ties go to the earliest member)",
    "any_wrong": "fooled when at least one member is wrong",
    "all_wrong": "fooled only when every member is wrong",
}
MAX_ENSEMBLE = 7
MAX_QUORUM = 25
MAX_DAILY_CAP = 100_000
#: Scored submissions (models, predictions, selections) a user may make to a task in any 24 hours, unless its owners
#: set ``submissions_per_day``; and the most they may set.
DEFAULT_SUBMISSIONS_PER_DAY = 3
MAX_SUBMISSIONS_PER_DAY = 1000
MAX_INSTRUCTIONS = 20_000
MAX_RUBRIC = 5_000
MIN_NEAR_DUPLICATE = 0.5  # below, unrelated texts that share common words would be flagged


class ContextStrategy(StrEnum):
    """How ``next_context`` picks one of the current round's contexts (a task setting; see
    :data:`dynaforge.services.contexts.STRATEGY_DESCRIPTIONS`)."""

    LEAST_USED = "least_used"
    UNIFORM = "uniform"
    LEAST_FOOLED = "least_fooled"
    VALIDATION_FAILED = "validation_failed"


@dataclass(frozen=True)
class TaskSettings:
    """What a task's owners tune (stored in ``tasks.settings``; unset keys take these defaults)."""

    validation_quorum: int
    validate_non_fooling: bool = False
    one_example_per_tag: bool = False
    daily_example_cap: int | None = None
    instructions: str | None = None
    context_strategy: str = "least_used"
    submissions_per_day: int = DEFAULT_SUBMISSIONS_PER_DAY
    #: In place of the task's own threshold of its fooled rule / rubric of its judge (:meth:`Task.tuned`).
    fooled_threshold: float | None = None
    judge_rubric: str | None = None
    #: A new fooling example at least this similar to an earlier one of its round is flagged to its author before it
    #: is stored (dynaforge.services.near_duplicates); None: no check.
    near_duplicate_threshold: float | None = None
    #: With tutorial items, people must reach this score in the tutorial before their work counts
    #: (dynaforge.services.tutorial); None: no qualification.
    qualification_pass_mark: float | None = None
    #: Minutes of continuous work after which the web app suggests a break (the task's own unless set; 0 stored as
    #: "off" overrides a task's default).
    break_reminder_minutes: int | None = None

    @classmethod
    def of(cls, task: Task, stored: dict[str, Any]) -> TaskSettings:
        values = {k: stored[k] for k in cls.__dataclass_fields__ if stored.get(k) is not None}
        values.setdefault("validation_quorum", task.validation_quorum)
        values.setdefault("break_reminder_minutes", task.break_reminder_minutes)
        if values["break_reminder_minutes"] == 0:
            values["break_reminder_minutes"] = None  # the owners turned the task's reminder off
        return cls(**values)


@dataclass(frozen=True)
class TaskView:
    """A registered task with its stored row; ``task`` as its owners set it (their threshold and rubric)."""

    task: Task
    row: TaskRow

    def __post_init__(self) -> None:
        object.__setattr__(self, "task", tuned(self.task, self.row.settings or {}))

    @property
    def settings(self) -> TaskSettings:
        return TaskSettings.of(self.task, self.row.settings or {})

    @property
    def instructions(self) -> str:
        return self.settings.instructions or self.task.instructions


def tuned(task: Task, stored: dict[str, Any]) -> Task:
    """``task`` with the threshold and judge rubric its owners set in its stored settings."""
    return task.tuned(fooled_threshold=stored.get("fooled_threshold"), judge_rubric=stored.get("judge_rubric"))


async def sync_registered_tasks(p: Platform) -> list[str]:
    """Make sure every registered task has a row and an open round 1 with the task's default target models (pinned
    and registered: :mod:`dynaforge.services.registry`).

    Idempotent and safe to run from several processes at once; returns the codes of the tasks it created.
    """
    created = []
    for code, task in p.plugins.registry.tasks.items():
        async with p.db.session() as s:
            row = await s.scalar(select(TaskRow).where(col(TaskRow.code) == code))
            started = (
                row is not None
                and (await s.scalar(select(col(Round.id)).where(col(Round.task_id) == row.id).limit(1))) is not None
            )
        pinned = [] if started else await registry.pin(p, task, list(task.default_target_models))
        try:
            async with p.db.write() as s:
                row = await s.scalar(select(TaskRow).where(col(TaskRow.code) == code))
                if row is None:
                    row = TaskRow(code=code, name=task.name, settings={"validation_quorum": task.validation_quorum})
                    s.add(row)
                    await s.flush()
                    created.append(code)
                elif row.name != task.name:
                    row.name = task.name
                has_round = await s.scalar(select(col(Round.id)).where(col(Round.task_id) == row.id).limit(1))
                if has_round is None:
                    if not pinned:  # another process opened round 1 between the read and now: pin anyway
                        pinned = await registry.pin(p, task, list(task.default_target_models))
                    s.add(
                        Round(
                            task_id=row.id,
                            number=1,
                            target_models=[item.spec.as_dict() for item in pinned],
                            target_registry_ids=await registry.register(s, row.id, pinned, user_id=None),
                            secret=secrets.token_hex(32),
                        )
                    )
        except IntegrityError:  # another process created it first
            continue
    return created


async def is_owner(s: AsyncSession, actor: Actor, task_id: int) -> bool:
    """Whether ``actor`` owns the task or is an admin (the operator is one; an anonymous actor owns nothing)."""
    if actor.is_admin:
        return True
    if actor.user_id is None:
        return False
    return (
        await s.scalar(
            select(col(TaskOwner.user_id)).where(
                col(TaskOwner.task_id) == task_id, col(TaskOwner.user_id) == actor.user_id
            )
        )
    ) is not None


async def owns_task(p: Platform, actor: Actor, task_id: int) -> bool:
    """:func:`is_owner` in a session of its own."""
    async with p.db.session() as s:
        return await is_owner(s, actor, task_id)


async def target_model_config(p: Platform, actor: Actor, task_id: int, config: dict[str, Any]) -> dict[str, Any] | None:
    """A target model's backend configuration, for the task's owners and admins only: it may hold credentials."""
    return config if await owns_task(p, actor, task_id) else None


async def _visible(s: AsyncSession, actor: Actor, row: TaskRow) -> bool:
    return not row.hidden or await is_owner(s, actor, row.id)


async def list_tasks(p: Platform, actor: Actor) -> list[TaskView]:
    """Tasks whose plugin is loaded; hidden ones only for their owners and admins."""
    registry = p.plugins.registry.tasks
    async with p.db.session() as s:
        rows = list(await s.scalars(select(TaskRow).order_by(col(TaskRow.code))))
        return [TaskView(registry[r.code], r) for r in rows if r.code in registry and await _visible(s, actor, r)]


async def get_task(p: Platform, actor: Actor, code: str) -> TaskView:
    task = p.plugins.task(code)
    if task is None and await load_if_declared(p.db, p.plugins, code):  # declared since, by another process
        await sync_registered_tasks(p)
        task = p.plugins.task(code)
    row = p.caches.tasks.get(code)
    if row is None or row.hidden:
        async with p.db.session() as s:
            if row is None and task is not None:
                row = await s.scalar(select(TaskRow).where(col(TaskRow.code) == code))
                if row is not None:
                    p.caches.tasks.put(code, row)
            visible = row is not None and await _visible(s, actor, row)
    else:
        visible = True
    if task is None or not visible:
        known = ", ".join(sorted(p.plugins.registry.tasks)) or "none"
        raise NotFound(f"No task {code!r}; known tasks: {known}")
    return TaskView(task, row)


async def current_round(s: AsyncSession, task_id: int) -> Round | None:
    return await s.scalar(
        select(Round).where(col(Round.task_id) == task_id).order_by(col(Round.number).desc()).limit(1)
    )


async def rounds_of(p: Platform, task_id: int) -> list[Round]:
    """A task's rounds, in order (for what anyone who can see the task may read about them)."""
    async with p.db.session() as s:
        return list(await s.scalars(select(Round).where(col(Round.task_id) == task_id).order_by(col(Round.number))))


async def require_current_round(s: AsyncSession, task_id: int, task_code: str) -> Round:
    """The task's current round; NotFound when it has none yet (a task gets round 1 when it is synced)."""
    round_ = await current_round(s, task_id)
    if round_ is None:
        raise NotFound(f"Task {task_code} has no round yet; its owners open one with openNextRound")
    return round_


async def cached_current_round(p: Platform, task_id: int) -> Round | None:
    """The current round as read at most ``cache_ttl_s`` ago (for the write path; counters may be stale)."""

    async def load() -> Round | None:
        async with p.db.session() as s:
            return await current_round(s, task_id)

    return await p.caches.rounds.get_or_load(task_id, load)


async def list_rounds(p: Platform, task_id: int) -> list[Round]:
    async with p.db.session() as s:
        return list(await s.scalars(select(Round).where(col(Round.task_id) == task_id).order_by(col(Round.number))))


async def round_by_id(p: Platform, round_id: int) -> Round | None:
    async with p.db.session() as s:
        return await s.get(Round, round_id)


async def visible_task(p: Platform, actor: Actor, task_id: int) -> TaskView:
    """The task with this row id, when ``actor`` may see it; NotFound otherwise (as get_task)."""
    async with p.db.session() as s:
        code = await s.scalar(select(col(TaskRow.code)).where(col(TaskRow.id) == task_id))
    if code is None:
        raise NotFound(f"No task with id {task_id}")
    return await get_task(p, actor, code)


async def round_id_of(s: AsyncSession, task_id: int, number: int) -> int:
    """The id of the task's round ``number``; -1 (which no row has) when there is none, so a filter on it is empty."""
    found = await s.scalar(select(col(Round.id)).where(col(Round.task_id) == task_id, col(Round.number) == number))
    return -1 if found is None else int(found)


async def visible_round(p: Platform, actor: Actor, round_id: int) -> Round:
    """A round of a task ``actor`` may see; NotFound otherwise."""
    row = await round_by_id(p, round_id)
    if row is None:
        raise NotFound(f"No round {round_id}")
    await visible_task(p, actor, row.task_id)
    return row


async def get_round(p: Platform, task_id: int, number: int | None = None) -> Round | None:
    async with p.db.session() as s:
        if number is None:
            return await current_round(s, task_id)
        return await s.scalar(select(Round).where(col(Round.task_id) == task_id, col(Round.number) == number))


async def grant_ownership(p: Platform, actor: Actor, code: str, user_id: int) -> None:
    """Admins make a user an owner of a task (idempotent)."""
    actor = require_user(actor)
    if not actor.is_admin:
        raise Forbidden("Only an admin can grant task ownership")
    view = await get_task(p, actor, code)
    async with p.db.write() as s:
        if await s.get(User, user_id) is None:
            raise NotFound(f"No user {user_id}")
        if await s.get(TaskOwner, (view.row.id, user_id)) is None:
            s.add(TaskOwner(task_id=view.row.id, user_id=user_id))
    p.caches.webhooks.pop(view.row.id)  # what the new owner's webhooks may receive changed


async def revoke_ownership(p: Platform, actor: Actor, code: str, user_id: int) -> None:
    """Admins take a task away from one of its owners (idempotent)."""
    actor = require_user(actor)
    if not actor.is_admin:
        raise Forbidden("Only an admin can revoke task ownership")
    view = await get_task(p, actor, code)
    async with p.db.write() as s:
        row = await s.get(TaskOwner, (view.row.id, user_id))
        if row is not None:
            await s.delete(row)
    p.caches.webhooks.pop(view.row.id)  # their webhooks stop getting authors (and a hidden task's events)


async def change_ownership(
    p: Platform, actor: Actor, code: str, username: str, *, grant: bool
) -> tuple[TaskView, User]:
    """Admins make the user named ``username`` an owner of the task (``grant``) or take the task away from them
    (idempotent); returns the task and the user. A non-admin learns nothing about which usernames exist."""
    actor = require_user(actor)
    if not actor.is_admin:
        raise Forbidden("Only an admin can change task ownership")
    user_id = await user_id_by_name(p, username)
    await (grant_ownership if grant else revoke_ownership)(p, actor, code, user_id)
    view = await get_task(p, actor, code)
    async with p.db.session() as s:
        user = await s.get(User, user_id)
    if user is None:  # removed meanwhile
        raise NotFound(f"No user named {username!r}")
    return view, user


async def user_id_by_name(p: Platform, username: str) -> int:
    async with p.db.session() as s:
        user_id = await s.scalar(select(col(User.id)).where(col(User.username) == username))
    if user_id is None:
        raise NotFound(f"No user named {username!r}")
    return user_id


async def owners(p: Platform, task_id: int) -> list[User]:
    async with p.db.session() as s:
        return list(
            await s.scalars(
                select(User)
                .join(TaskOwner, col(TaskOwner.user_id) == col(User.id))
                .where(col(TaskOwner.task_id) == task_id)
                .order_by(col(User.username))
            )
        )


def _check_settings(changes: dict[str, Any], task: Task) -> list[FieldError]:
    errors = []
    threshold = changes.get("fooled_threshold")
    if threshold is not None:
        low, high = task.fooled_threshold_range
        if task.fooled_threshold is None:
            errors.append(
                FieldError("fooledThreshold", "unsupported", f"{task.code}'s fooled rule compares with no threshold")
            )
        elif not (low <= threshold <= high) or threshold != threshold:
            errors.append(FieldError("fooledThreshold", "range", f"must be between {low:g} and {high:g}"))
    rubric = changes.get("judge_rubric")
    if rubric is not None:
        if task.judge is None:
            errors.append(FieldError("judgeRubric", "unsupported", f"{task.code} has no judge model"))
        elif len(rubric) > MAX_RUBRIC:
            errors.append(FieldError("judgeRubric", "max_length", f"must have at most {MAX_RUBRIC} characters"))
    quorum = changes.get("validation_quorum")
    if quorum is not None and not 1 <= quorum <= MAX_QUORUM:
        errors.append(FieldError("validationQuorum", "range", f"must be between 1 and {MAX_QUORUM}"))
    cap = changes.get("daily_example_cap")
    if cap is not None and not 0 <= cap <= MAX_DAILY_CAP:
        errors.append(FieldError("dailyExampleCap", "range", f"must be between 0 (no cap) and {MAX_DAILY_CAP}"))
    allowance = changes.get("submissions_per_day")
    if allowance is not None and not 1 <= allowance <= MAX_SUBMISSIONS_PER_DAY:
        errors.append(FieldError("submissionsPerDay", "range", f"must be between 1 and {MAX_SUBMISSIONS_PER_DAY}"))
    instructions = changes.get("instructions")
    if instructions is not None and len(instructions) > MAX_INSTRUCTIONS:
        errors.append(FieldError("instructions", "max_length", f"must have at most {MAX_INSTRUCTIONS} characters"))
    near = changes.get("near_duplicate_threshold")
    if near is not None and near != 0 and not MIN_NEAR_DUPLICATE <= near <= 1:  # NaN fails the range too
        errors.append(
            FieldError("nearDuplicateThreshold", "range", f"must be 0 (no check) or between {MIN_NEAR_DUPLICATE} and 1")
        )
    minutes = changes.get("break_reminder_minutes")
    if minutes is not None and minutes != 0 and not 5 <= minutes <= 240:
        errors.append(FieldError("breakReminderMinutes", "range", "must be 0 (no reminder) or between 5 and 240"))
    mark = changes.get("qualification_pass_mark")
    if mark is not None and mark != 0 and not 0.5 <= mark <= 1:
        errors.append(FieldError("qualificationPassMark", "range", "must be 0 (no qualification) or between 0.5 and 1"))
    strategy = changes.get("context_strategy")
    choices = [c.value for c in ContextStrategy]
    if strategy is not None and strategy not in choices:
        errors.append(FieldError("contextStrategy", "choice", f"must be one of {', '.join(choices)}"))
    return errors


async def update_settings(p: Platform, actor: Actor, code: str, changes: dict[str, Any]) -> TaskView:
    """Owners and admins change a task's settings; ``None`` leaves a setting as it is.

    ``changes`` may hold the fields of :class:`TaskSettings` plus ``hidden`` and ``active``. A daily cap, a
    near-duplicate threshold or a pass mark of 0 and empty instructions or rubric go back to the defaults (no cap,
    no check, no qualification, the plugin's instructions, its judge's rubric).
    """
    actor = require_user(actor)
    view = await get_task(p, actor, code)
    changes = {k: v for k, v in changes.items() if v is not None}
    unknown = set(changes) - set(TaskSettings.__dataclass_fields__) - {"hidden", "active"}
    if unknown:
        raise InvalidInput.from_errors([FieldError(k, "unknown", "is not a task setting") for k in sorted(unknown)])
    errors = _check_settings(changes, view.task)
    if errors:
        raise InvalidInput.from_errors(errors)
    async with p.db.write() as s:
        if not await is_owner(s, actor, view.row.id):
            raise Forbidden(f"Only owners of {code} and admins can change its settings")
        row = await s.get(TaskRow, view.row.id, with_for_update=p.db.dialect == "postgresql")
        if row is None:
            raise NotFound(f"No task {code!r}")
        stored = dict(row.settings or {})
        for key, value in changes.items():
            if key in ("hidden", "active"):
                setattr(row, key, bool(value))
            elif (
                key in ("daily_example_cap", "near_duplicate_threshold", "qualification_pass_mark") and value == 0
            ) or (key in ("instructions", "judge_rubric") and not value.strip()):
                stored.pop(key, None)
            else:
                stored[key] = value
        row.settings = stored
        await s.flush()
    p.caches.tasks.pop(code)
    p.caches.webhooks.pop(row.id)  # hiding a task stops its events reaching non-owners' webhooks
    return TaskView(view.task, row)


async def _owned_open_round(s: AsyncSession, actor: Actor, view: TaskView, verb: str) -> Round | None:
    if not await is_owner(s, actor, view.row.id):
        raise Forbidden(f"Only owners of {view.task.code} and admins can {verb}")
    latest = select(Round).where(col(Round.task_id) == view.row.id).order_by(col(Round.number).desc()).limit(1)
    postgres = s.get_bind().dialect.name == "postgresql"
    return await s.scalar(latest.with_for_update() if postgres else latest)


async def open_next_round(
    p: Platform,
    actor: Actor,
    code: str,
    *,
    models: list[dict] | None = None,
    rule: str | None = None,
    description: str = "",
    copy_contexts: bool = False,
    candidate_id: int | None = None,
    seen_round: int | None = None,
) -> tuple[Round, Round | None]:
    """Owners close the current round and open the next: new target models (default: the current ones; or
    ``candidate_id``, a registry entry of this task such as a training job's candidate), a new export secret,
    optionally a copy of the current round's contexts. The targets are pinned and registered. Returns the new round
    and the closed one. ``seen_round``: the number of the round the caller sees as current (0: none); when
    another is current by then (a repeated request, another owner), Conflict and nothing opens."""
    actor = require_user(actor)
    view = await get_task(p, actor, code)
    if len(description) > 5000:
        raise InvalidInput.from_errors([FieldError("description", "max_length", "must have at most 5000 characters")])
    if candidate_id is not None and models is not None:
        raise InvalidInput.from_errors(
            [FieldError("candidate", "exclusive", "give either a candidate or models, not both")]
        )
    candidate = None
    if candidate_id is not None:
        async with p.db.session() as s:
            if not await is_owner(s, actor, view.row.id):
                raise Forbidden(f"Only owners of {view.task.code} and admins can open its next round")
            candidate = (await registry.entries(s, [candidate_id])).get(candidate_id)
        if candidate is None or candidate.task_id != view.row.id:
            raise NotFound(f"Task {code} has no registered model {candidate_id}; see task.registeredModels")
    specs = check_target_models(p, models, rule or "majority") if models is not None else None
    if specs is None and rule is not None and rule not in ENSEMBLE_RULES:
        raise InvalidInput.from_errors(
            [FieldError("ensembleRule", "choice", f"must be one of {', '.join(ENSEMBLE_RULES)}")]
        )
    if specs is not None:
        async with p.db.session() as s:
            if not await is_owner(s, actor, view.row.id):
                raise Forbidden(f"Only owners of {view.task.code} and admins can open its next round")
        await _check_models_allowed(p, actor, specs)  # outside the write: it may resolve host names
    if candidate is not None:  # its configuration is the platform's own (a recipe's factory and stored weights)
        specs = [ModelSpec(name=candidate.name, backend=candidate.backend, config=dict(candidate.config))]
    if specs is None:
        async with p.db.session() as s:
            latest = await current_round(s, view.row.id)
        specs = (
            [ModelSpec.from_dict(m) for m in latest.target_models]
            if latest is not None
            else list(view.task.default_target_models)
        )
    pinned = await registry.pin(p, view.task, specs)
    try:
        async with p.db.write() as s:
            previous = await _owned_open_round(s, actor, view, "open its next round")
            current = previous.number if previous is not None else 0
            if seen_round is not None and current != seen_round:
                raise Conflict(
                    f"Round {current} of {code} is the current round, not {seen_round}: it opened since you "
                    "looked. Read task.currentRound and open the next one from there if you still want to"
                )
            now = utcnow()
            if previous is not None and previous.ended_at is None:
                previous.ended_at = now
            new = Round(
                task_id=view.row.id,
                number=(previous.number if previous else 0) + 1,
                description=description,
                target_models=[item.spec.as_dict() for item in pinned],
                target_registry_ids=await registry.register(s, view.row.id, pinned, user_id=actor.user_id),
                ensemble_rule=rule or (previous.ensemble_rule if previous else "majority"),
                secret=secrets.token_hex(32),
                started_at=now,
            )
            s.add(new)
            await s.flush()
            if copy_contexts and previous is not None:
                await s.execute(
                    insert(Context).from_select(
                        ["task_id", "round_id", "fields", "tag", "total_used", "total_fooled", "created_at"],
                        select(
                            col(Context.task_id),
                            literal(new.id),
                            col(Context.fields),
                            col(Context.tag),
                            literal(0),
                            literal(0),
                            literal(now, DateTime(timezone=True)),
                        ).where(col(Context.round_id) == previous.id, col(Context.retired_at).is_(None)),
                    )
                )
    except IntegrityError as exc:
        raise Conflict(
            f"Another owner opened the next round of {code} at the same time; read task.currentRound"
        ) from exc
    finally:
        p.caches.rounds.pop(view.row.id)
    p.caches.boards.pop(view.row.id)  # a round that ended releases held scores of uploaded predictions
    await announce.round_changed(p, code, new, "OPENED")
    return new, previous


async def close_round(p: Platform, actor: Actor, code: str) -> Round:
    """Owners stop collection in the current round (annotators get RoundClosed until the next round opens)."""
    actor = require_user(actor)
    view = await get_task(p, actor, code)
    async with p.db.write() as s:
        round_ = await _owned_open_round(s, actor, view, "close its round")
        if round_ is None:
            raise NotFound(f"Task {code} has no round")
        closed_now = round_.ended_at is None
        if closed_now:
            round_.ended_at = utcnow()
            await s.flush()
    p.caches.rounds.pop(view.row.id)
    p.caches.boards.pop(view.row.id)  # a round that ended releases held scores of uploaded predictions
    if closed_now:
        await announce.round_changed(p, code, round_, "CLOSED")
    return round_


async def update_round(p: Platform, actor: Actor, code: str, number: int, *, description: str) -> Round:
    """Owners edit a round's description."""
    actor = require_user(actor)
    view = await get_task(p, actor, code)
    if len(description) > 5000:
        raise InvalidInput.from_errors([FieldError("description", "max_length", "must have at most 5000 characters")])
    async with p.db.write() as s:
        if not await is_owner(s, actor, view.row.id):
            raise Forbidden(f"Only owners of {code} and admins can edit its rounds")
        round_ = await s.scalar(select(Round).where(col(Round.task_id) == view.row.id, col(Round.number) == number))
        if round_ is None:
            raise NotFound(f"Task {code} has no round {number}")
        round_.description = description
        await s.flush()
    p.caches.rounds.pop(view.row.id)
    await announce.round_changed(p, code, round_, "UPDATED")
    return round_


async def open_round_targets(p: Platform) -> list[ModelSpec]:
    """The target models of every task's current round, if it is open (to load them ahead of annotators)."""
    specs: list[ModelSpec] = []
    async with p.db.session() as s:
        for row in await s.scalars(select(TaskRow).where(col(TaskRow.code).in_(list(p.plugins.registry.tasks)))):
            round_ = await current_round(s, row.id)
            if round_ is not None and round_.ended_at is None:
                specs.extend(ModelSpec.from_dict(m) for m in round_.target_models)
    return specs


def check_target_models(p: Platform, models: list[dict], rule: str) -> list[ModelSpec]:
    """Validate a round's targets without loading them: known backends, configurations each backend accepts,
    distinct names, a known ensemble rule. Raises :class:`InvalidInput` naming each bad entry."""
    errors: list[FieldError] = []
    if not 1 <= len(models) <= MAX_ENSEMBLE:
        errors.append(FieldError("models", "count", f"give between 1 and {MAX_ENSEMBLE} models"))
    if rule not in ENSEMBLE_RULES:
        errors.append(FieldError("ensembleRule", "choice", f"must be one of {', '.join(ENSEMBLE_RULES)}"))
    specs, names = [], set()
    backends = p.plugins.registry.backends
    for i, model in enumerate(models):
        where = f"models[{i}]"
        name, backend, config = model.get("name"), model.get("backend"), model.get("config")
        if not isinstance(name, str) or not name.strip() or len(name) > 100:
            errors.append(FieldError(f"{where}.name", "required", "must be a name of 1 to 100 characters"))
            continue
        if name in names:
            errors.append(FieldError(f"{where}.name", "unique", f"{name!r} is used by another model of this round"))
        names.add(name)
        if backend not in backends:
            known = ", ".join(sorted(backends)) or "none"
            errors.append(FieldError(f"{where}.backend", "choice", f"no backend {backend!r}; installed: {known}"))
            continue
        if not isinstance(config, dict):
            errors.append(FieldError(f"{where}.config", "type", "must be a JSON object"))
            continue
        for problem in backends[backend].check_config(config):
            errors.append(FieldError(f"{where}.config", "backend_config", problem))
        specs.append(ModelSpec(name=name.strip(), backend=backend, config=config))
    if errors:
        raise InvalidInput.from_errors(errors)
    return specs


def open_backends(p: Platform) -> set[str]:
    """The backends every signed-in user may run models with (``SUBMISSION_BACKENDS``); the others (``python``: an
    import path the model worker would run, with the server's environment) are for admins only."""
    return {b.strip() for b in p.settings.submission_backends.split(",") if b.strip()}


def check_backend_allowed(
    p: Platform, actor: Actor, backend: str, field: str = "backend", config: dict | None = None
) -> None:
    """InvalidInput (rule ``not_allowed``) unless ``backend`` is open to everyone or ``actor`` is an admin: a
    backend that runs code on the server would hand a task owner the server's secrets. An open backend may still
    reserve some configurations for admins (``ModelBackend.admin_only``: a local folder on the server, say)."""
    allowed = open_backends(p)
    if actor.is_admin:
        return
    if backend in allowed:
        implementation = p.plugins.registry.backends.get(backend)
        reason = implementation.admin_only(config or {}) if implementation is not None else None
        if reason is not None:
            config_field = field.removesuffix("backend") + "config" if field.endswith("backend") else "config"
            raise InvalidInput.from_errors([FieldError(config_field, "not_allowed", f"{reason} (admins may)")])
        return
    raise InvalidInput.from_errors(
        [
            FieldError(
                field,
                "not_allowed",
                f"models run with {', '.join(sorted(allowed)) or 'no backend'} here; {backend!r} runs code on the "
                "server and is for admins only (serve your model over http instead)",
            )
        ]
    )


async def check_outbound(p: Platform, actor: Actor, backend: str, config: dict | None, field: str = "config") -> None:
    """InvalidInput (on ``field``.url) when the backend would call a URL the outbound policy refuses (an internal
    address, say). A host that does not resolve yet passes: the model server may not be up, and the policy is
    applied again when the model loads. Only an admin ``actor`` is told the host's addresses (the log has them)."""
    implementation = p.plugins.registry.backends.get(backend)
    if implementation is None or not isinstance(config, dict):
        return
    policy = OutboundPolicy(p.settings.outbound_allow)
    for url in implementation.outbound_urls(config):
        try:
            await policy.resolve_async(url)
        except OutboundRefused as exc:
            if exc.rule != "dns":
                log.info("outbound policy: refused %s for user %s: %s", field, actor.user_id, exc.message)
                message = exc.message if actor.is_admin else exc.public
                raise InvalidInput.from_errors([FieldError(f"{field}.url", exc.rule, message)]) from None


async def check_artifacts(p: Platform, backend: str, config: dict | None, field: str = "config") -> None:
    """InvalidInput (on ``field``.artifact, rule ``not_found``) when the configuration names an uploaded artifact
    the model store does not hold: a model points at what ``uploadModel`` stored, never at anything else. One that
    is held is claimed (touched), so that collecting unreferenced artifacts keeps it until the caller's row names
    it. The store is asked on a thread (a bucket's store asks over the network)."""
    implementation = p.plugins.registry.backends.get(backend)
    if implementation is None or not isinstance(config, dict):
        return
    store = ArtifactStore.from_settings(p.settings)
    for digest in implementation.artifacts(config):
        if not await asyncio.to_thread(store.claim, digest):
            raise InvalidInput.from_errors(
                [
                    FieldError(
                        f"{field}.artifact",
                        "not_found",
                        f"no uploaded model has the digest {str(digest)[:64]!r}; upload the model with uploadModel and "
                        "use the digest it gives",
                    )
                ]
            )


async def _check_models_allowed(p: Platform, actor: Actor, specs: list[ModelSpec]) -> None:
    for i, spec in enumerate(specs):
        check_backend_allowed(p, actor, spec.backend, f"models[{i}].backend", spec.config)
        await check_artifacts(p, spec.backend, spec.config, f"models[{i}].config")
        await check_outbound(p, actor, spec.backend, spec.config, f"models[{i}].config")


async def set_target_models(
    p: Platform,
    actor: Actor,
    code: str,
    models: list[dict],
    rule: str = "majority",
) -> Round:
    """Owners (and admins) put one model or an ensemble in the loop of the task's open round. The round's examples
    whose predictions stopped being retried (the old targets answered them unreadably) are asked again."""
    actor = require_user(actor)
    view = await get_task(p, actor, code)
    specs = check_target_models(p, models, rule)
    async with p.db.session() as s:
        if not await is_owner(s, actor, view.row.id):
            raise Forbidden(f"Only owners of {code} and admins can set its target models")
    await _check_models_allowed(p, actor, specs)  # outside the write: it may resolve host names
    pinned = await registry.pin(p, view.task, specs)
    async with p.db.write() as s:
        if not await is_owner(s, actor, view.row.id):
            raise Forbidden(f"Only owners of {code} and admins can set its target models")
        round_ = await current_round(s, view.row.id)
        if round_ is None or round_.ended_at is not None:
            raise RoundClosed(f"Task {code} has no open round; open the next one first")
        round_.target_models = [item.spec.as_dict() for item in pinned]
        round_.target_registry_ids = await registry.register(s, view.row.id, pinned, user_id=actor.user_id)
        round_.ensemble_rule = rule
        await s.flush()
        await s.execute(
            update(Example)
            .where(col(Example.round_id) == round_.id, col(Example.status) == ExampleStatus.PENDING_PREDICTION)
            .values(prediction_attempts=0)
        )
    p.caches.rounds.pop(view.row.id)
    return round_
