"""Machine adversaries on the platform: suggestions to annotators (``suggestEdits``) and generation runs
(``generateCandidates``) whose candidates people validate like any example.

Both give an adversary (:mod:`dynaforge.adversaries.base`) an :class:`~dynaforge.adversaries.base.Oracle` on the
round's target model(s): the same models, prediction reading and ensemble rule as the write path
(``examples.predict`` / ``examples.judge``), within a budget of target queries and a time limit.

- A **suggestion** is stored (``suggestions``) so that an example written from it can be recorded as ``ASSISTED``
  with the adversary's name on the server's word, not the client's. The annotator still writes (and submits) the
  example: it stays theirs in every count.
- A **generation run** (``adversary_runs``) attacks the round's contexts, and the drafts the target got right (the
  people's examples that did not fool it), until its budget of target queries is spent. Each candidate that fools the
  target is stored as an example whose source is ``MACHINE``, written by the adversary's own machine account
  (``machine:NAME``), so it enters the validation queue like any other and no person's counts grow. Where a
  broker carries jobs (``DYNAFORGE_BROKER_URL``), a run is a ``generate`` message that a ``dynaforge worker``
  process takes (:class:`dynaforge.jobs.GenerationHost`), so it outlives the API process that accepted it; the
  embedded server runs it as a task of its own event loop. A run is taken once (QUEUED to RUNNING in one update);
  one whose process stopped mid-run is marked FAILED at the next start, and queued ones are sent again
  (``recover``).

What an adversary proposes reaches people, so neither path lets it pass on gold they may not read: few-shot
adversaries see only the asker's own and published examples, without their gold fields (``_fooled_before``), and a
candidate that copies a stored example is dropped, whichever adversary proposed it (``_not_stored``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlmodel import col

from dynaforge.adversaries.base import (
    Adversary,
    AdversaryFailed,
    AttackRequest,
    AttackStopped,
    Candidate,
    Oracle,
    Verdict,
    fooling,
)
from dynaforge.db.models import (
    AdversaryRun,
    AdversaryRunStatus,
    Context,
    Example,
    ExampleStatus,
    Round,
    Suggestion,
    TaskRow,
    User,
    utcnow,
)
from dynaforge.errors import (
    FieldError,
    Forbidden,
    InvalidInput,
    NotFound,
    QuotaExceeded,
    RoundClosed,
    ServiceUnavailable,
)
from dynaforge.inference.backends import InferenceError
from dynaforge.services import announce, cursors, visibility
from dynaforge.services import examples as example_service
from dynaforge.services import exports as export_service
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_human, require_user
from dynaforge.services.job_queue import BrokerUnavailable
from dynaforge.services.platform import Platform
from dynaforge.tasks import outputs
from dynaforge.tasks.base import ModelSpec, Task
from dynaforge.tasks.fields import Role, TextField

log = logging.getLogger(__name__)

#: Fooling candidates kept per context or draft in a generation run (more would crowd validators with near-copies).
CANDIDATES_PER_ITEM = 2
#: Contexts and drafts a run attacks at most, newest drafts first.
MAX_ITEMS = 500
#: How long one context or draft may take in a generation run.
ITEM_TIME_S = 60.0
#: How many examples that fooled before a few-shot adversary sees.
FOOLED_BEFORE = 5
#: The most stored examples one check for copies compares (those its SQL prefilter keeps, newest first).
COPIES_COMPARED = 2000
_WORD = re.compile(r"[a-z0-9]+")
MACHINE_PREFIX = "machine:"
#: Runs cancelled while running in this process: their oracle refuses further queries at once.
_CANCELLED: set[int] = set()
#: A queued or running run without progress for this long was left by a stopped process (``recover``).
STALE_AFTER = timedelta(seconds=4 * ITEM_TIME_S)


# --------------------------------------------------------------------------- which adversaries


@dataclass(frozen=True)
class Availability:
    """An adversary as one task sees it: ``unsuitable`` says why it cannot serve the task (None: it can)."""

    adversary: Adversary
    unsuitable: str | None


def _unsuitable(adversary: Adversary, task: Task, settings: Any) -> str | None:
    """Why ``adversary`` cannot serve ``task``: the adversary's own reason, or that the task's verdicts wait for a
    judge or people (an adversary searches with the target as its oracle, which needs a verdict at once)."""
    if task.verdict != "rule":
        who = "its judge model" if task.verdict == "judge" else "its validators"
        return f"whether {task.code}'s examples fool the model is decided later, by {who}"
    return adversary.unsuitable(task, settings)


def for_task(p: Platform, task: Task) -> list[Availability]:
    """Every registered adversary with whether it can serve ``task`` here, in registration order."""
    out = []
    for adversary in p.plugins.registry.adversaries.values():
        try:
            why = _unsuitable(adversary, task, p.settings)
        except Exception as exc:  # a plugin's bug makes its adversary unavailable, not the task
            why = f"{type(exc).__name__}: {exc}"
        out.append(Availability(adversary, why))
    return out


async def list_for_task(p: Platform, actor: Actor, task_code: str) -> list[Availability]:
    view = await task_service.get_task(p, actor, task_code)
    return for_task(p, view.task)


def _named(p: Platform, task: Task, name: str, use: str, field: str) -> Adversary:
    adversary = p.plugins.registry.adversaries.get(name)
    if adversary is None:
        known = ", ".join(a.adversary.name for a in for_task(p, task) if a.unsuitable is None) or "none"
        raise InvalidInput.from_errors(
            [FieldError(field, "unknown", f"no adversary {name!r} is installed; for {task.code}: {known}")]
        )
    if not getattr(adversary, use):
        raise InvalidInput.from_errors(
            [FieldError(field, "use", f"{name} does not serve {'suggestions' if use == 'assists' else 'generation'}")]
        )
    why = _unsuitable(adversary, task, p.settings)
    if why:
        raise InvalidInput.from_errors([FieldError(field, "unsuitable", f"{name} cannot serve {task.code}: {why}")])
    return adversary


# --------------------------------------------------------------------------- the target as an oracle


def target_oracle(
    p: Platform,
    task: Task,
    round_: Round,
    context: dict[str, Any],
    *,
    max_queries: int,
    time_limit_s: float,
    cancelled: Any = None,
) -> Oracle:
    """An oracle on the round's target model(s), answered and judged exactly as an annotator's example is."""
    specs = [ModelSpec.from_dict(m) for m in round_.target_models]
    if not specs:
        raise InferenceError(f"round {round_.number} of {task.code} has no target model")

    async def predict(inputs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        answers = await asyncio.gather(*(p.inference.predict(spec, inputs) for spec in specs))
        members: list[list[dict[str, Any]]] = [[] for _ in inputs]
        for spec, answer in zip(specs, answers, strict=True):
            for i, output in enumerate(answer.outputs):
                try:
                    prediction = outputs.read_output(task, output, inputs[i])
                except (ValueError, TypeError) as exc:
                    raise InferenceError(f"model {spec.name!r} gave an unusable output: {exc}") from exc
                members[i].append(
                    {"model": spec.name, "prediction": prediction, "latency_ms": round(answer.latency_ms, 3)}
                )
        return members

    def judge(members: list[dict[str, Any]], example: dict[str, Any], ctx: dict[str, Any]):
        # each member gets its own ``fooled`` flag, as stored with an example (members are fresh per query)
        return outputs.judge(task, round_.ensemble_rule, members, example, ctx)

    return Oracle(
        task, context, predict, judge, max_queries=max_queries, time_limit_s=time_limit_s, cancelled=cancelled
    )


def _request(p: Platform, task: Task, context: dict[str, Any], draft: dict[str, Any] | None, **kw: Any):
    perturbations = {
        n: p.plugins.registry.perturbations[n] for n in task.perturbations if n in p.plugins.registry.perturbations
    }
    return AttackRequest(
        task=task, context=context, draft=draft, perturbations=perturbations, settings=p.settings, **kw
    )


def _assist_order(adversaries: list[Adversary]) -> list[Adversary]:
    """Adversaries written for the task first (its templates: cheap, and closest to what a person would write),
    then the generic ones, each group in registration order."""
    return [a for a in adversaries if a.task_codes] + [a for a in adversaries if not a.task_codes]


async def _fooled_before(p: Platform, task: Task, task_id: int, author_id: int | None) -> list[dict[str, Any]]:
    """Few-shot material: the task's latest accepted examples that fooled the target, of those ``author_id`` wrote
    (None: nobody's) or a published split holds (what anyone may export), without their gold fields.

    Never another person's unpublished example, and never a gold field: what an adversary is shown can come back
    in what it proposes, and its proposals reach annotators (suggestions) and validators (generated candidates)."""
    readable: Any = col(Example.id).in_(export_service.published_examples())
    if author_id is not None:
        readable = or_(col(Example.user_id) == author_id, readable)
    async with p.db.session() as s:
        rows = await s.scalars(
            select(col(Example.fields))
            .where(
                col(Example.task_id) == task_id,
                col(Example.status) == ExampleStatus.ACCEPTED,
                col(Example.fooled).is_(True),
                readable,
            )
            .order_by(col(Example.id).desc())
            .limit(FOOLED_BEFORE)
        )
        return [visibility.without_gold(task, dict(f)) for f in rows]


# --------------------------------------------------------------------------- copies of stored examples


def _normal(value: Any) -> Any:
    """A written value as copies are compared: text with its whitespace collapsed and its case folded."""
    return " ".join(value.split()).casefold() if isinstance(value, str) else value


def _written_roles(own_context: bool) -> tuple[Role, ...]:
    """What makes an example what it is: its input fields, and its context fields when it carries them (written
    without a stored context). Gold and metadata are claims about it, not part of it."""
    return (Role.CONTEXT, Role.INPUT) if own_context else (Role.INPUT,)


def _written_key(task: Task, fields: dict[str, Any], own_context: bool) -> str:
    names = task.field_names(*_written_roles(own_context))
    return json.dumps({name: _normal(fields.get(name)) for name in names}, sort_keys=True, default=str)


def _prefilter(task: Task, fields: dict[str, Any], own_context: bool) -> Any:
    """A SQL condition every stored copy of ``fields`` meets: its text fields hold the three longest words of those
    of ``fields`` (runs of ASCII letters and digits, lowercased, which both databases lowercase alike); None when
    there are no such words."""
    words: list[tuple[str, str]] = []
    for f in task.fields_with(*_written_roles(own_context)):
        value = fields.get(f.name)
        if isinstance(f, TextField) and isinstance(value, str):
            words += [(f.name, word) for word in set(_WORD.findall(_normal(value)))]
    longest = sorted(words, key=lambda w: (-len(w[1]), w))[:3]
    if not longest:
        return None
    return and_(*(func.lower(col(Example.fields)[name].as_string()).contains(word) for name, word in longest))


async def _copies(
    p: Platform, task: Task, task_id: int, context_id: int | None, written: list[dict[str, Any]]
) -> dict[str, list[int]]:
    """The task's stored examples (any status) that are copies of one of ``written``: the same written fields
    (:func:`_written_roles`) once whitespace and case are normalised, on the same stored context (or, without one,
    with the same context fields). Returns their authors' ids by the written key of each copied value."""
    if not written:
        return {}
    own_context = context_id is None
    conditions = [_prefilter(task, fields, own_context) for fields in written]
    where = [
        col(Example.task_id) == task_id,
        col(Example.context_id).is_(None) if own_context else col(Example.context_id) == context_id,
    ]
    if all(c is not None for c in conditions):
        where.append(or_(*conditions))
    wanted = {_written_key(task, fields, own_context) for fields in written}
    found: dict[str, list[int]] = {}
    async with p.db.session() as s:
        rows = await s.execute(
            select(col(Example.user_id), col(Example.fields))
            .where(*where)
            .order_by(col(Example.id).desc())
            .limit(COPIES_COMPARED)
        )
        for author, fields in rows:
            key = _written_key(task, dict(fields), own_context)
            if key in wanted:
                found.setdefault(key, []).append(int(author))
    return found


async def _not_stored(
    p: Platform, task: Task, task_id: int, context_id: int | None, candidates: list[Candidate]
) -> list[Candidate]:
    """``candidates`` less those that copy a stored example of the task (:func:`_copies`), whoever wrote it: an
    adversary that hands back an example already collected (told it, or guessing it) proposes nothing new, and
    would pass someone's example, with the gold it claims, to whoever asked."""
    own_context = context_id is None
    copied = await _copies(p, task, task_id, context_id, [c.fields for c in candidates])
    kept = [c for c in candidates if _written_key(task, c.fields, own_context) not in copied]
    if len(kept) < len(candidates):
        log.debug("dropped %d candidates that copy stored examples of %s", len(candidates) - len(kept), task.code)
    return kept


# --------------------------------------------------------------------------- suggestions


@dataclass(frozen=True)
class Suggestions:
    """What ``suggest_edits`` returns: the target's verdict on the draft itself, the suggestions (fooling edits,
    best first), the adversaries asked, and the target queries spent."""

    draft_verdict: Verdict
    suggestions: list[Suggestion]
    adversaries: list[str]
    queries: int


async def _refuse_copied_draft(
    p: Platform, actor: Actor, view: task_service.TaskView, context_id: int | None, draft: dict[str, Any]
) -> None:
    """InvalidInput when ``draft`` copies an example someone else stored (:func:`_copies`) and ``actor`` may not
    see its gold (owners and admins may). The target's verdict on a copy is its verdict on that example: on a
    two-class task, with word that the example fooled the target, that verdict tells the gold."""
    copied = await _copies(p, view.task, view.row.id, context_id, [draft])
    if not any(author != actor.person_id for authors in copied.values() for author in authors):
        return
    async with p.db.session() as s:
        if await task_service.is_owner(s, actor, view.row.id):
            return
    raise InvalidInput.from_errors(
        [
            FieldError(
                "draft",
                "duplicate",
                "repeats an example someone else wrote for this task; write a draft of your own and ask again",
            )
        ]
    )


def _target_unavailable(p: Platform, actor: Actor, round_: Round, exc: Exception) -> ServiceUnavailable:
    reason = str(exc) if actor.is_admin else example_service.without_server_paths(p, round_, str(exc))
    return ServiceUnavailable(f"The target model cannot answer now ({reason}); try again shortly")


async def suggest_edits(
    p: Platform,
    actor: Actor,
    *,
    task_code: str,
    draft: Any,
    context_id: int | None = None,
    adversary: str | None = None,
    limit: int = 3,
) -> Suggestions:
    """A few edits of the annotator's draft that flip the round's target, each stored as a suggestion.

    The draft is checked like an example (its claimed gold included). ``adversary`` names one; without it, every
    installed adversary that assists and suits the task is asked in turn, sharing one budget of target queries
    (``SUGGESTION_QUERIES``) and time (``SUGGESTION_TIME_S``), until ``limit`` suggestions are found. Each user
    may ask ``SUGGESTIONS_PER_HOUR`` times an hour per task. A draft that already fools the target gets none; a
    draft that copies someone else's example is refused (:func:`_refuse_copied_draft`), and a candidate that copies
    any stored example is dropped (:func:`_not_stored`).
    """
    actor = require_human(actor)
    if not 1 <= limit <= 10:
        raise InvalidInput.from_errors([FieldError("limit", "range", "must be between 1 and 10")])
    view = await task_service.get_task(p, actor, task_code)
    task = view.task
    if not view.row.active:
        raise RoundClosed(f"Task {task_code} is not collecting examples at the moment")
    chosen = (
        [_named(p, task, adversary, "assists", "adversary")]
        if adversary is not None
        else _assist_order([a.adversary for a in for_task(p, task) if a.unsuitable is None and a.adversary.assists])
    )
    if not chosen:
        raise InvalidInput.from_errors(
            [FieldError("taskCode", "no_adversary", f"no installed adversary can suggest edits for {task_code}")]
        )
    round_, context = await example_service.open_round_and_context(p, view, context_id)
    # Without a stored context the draft holds its context fields, which are the example's own: adversaries may
    # change them too (a distractor sentence in a passage), and the oracle hands them to the task as context.
    context_fields = dict(context.fields) if context is not None else {}
    cleaned = task.validate_example(draft, context_fields if context is not None else None)
    if p.settings.suggestions_per_hour:
        await p.limiter.hit(
            f"suggestions:{actor.user_id}:{task_code}",
            p.settings.suggestions_per_hour,
            3600.0,
            f"suggestions for {task_code}",
        )
    await _refuse_copied_draft(p, actor, view, context.id if context is not None else None, cleaned)

    # The draft's own verdict may wait for the model to load; the adversaries' time starts once it is in.
    oracle = target_oracle(
        p,
        task,
        round_,
        context_fields,
        max_queries=p.settings.suggestion_queries,
        time_limit_s=p.settings.inference_load_timeout_s + p.settings.suggestion_time_s,
    )
    try:
        draft_verdict = await oracle.query_one(cleaned)
    except (InferenceError, AttackStopped) as exc:
        raise _target_unavailable(p, actor, round_, exc) from exc
    oracle.restart_clock(p.settings.suggestion_time_s)
    found: list[tuple[str, Candidate]] = []  # (adversary, candidate), in the order found
    asked: list[str] = []
    if not draft_verdict.fooled:
        request = _request(
            p,
            task,
            context_fields,
            cleaned,
            rng=random.Random(secrets.randbits(32)),
            max_candidates=limit,
            fooled_before=await _fooled_before(p, task, view.row.id, actor.person_id)
            if any(not a.needs_draft for a in chosen)
            else [],
        )
        for adv in chosen:
            if len(found) >= limit or oracle.remaining == 0:
                break
            asked.append(adv.name)
            try:
                candidates = await adv.attack(request, oracle)
            except AdversaryFailed as exc:
                if adversary is not None:
                    raise ServiceUnavailable(f"Adversary {adv.name} could not run: {exc}") from exc
                log.warning("adversary %s skipped for %s: %s", adv.name, task_code, exc)
                continue
            except InferenceError as exc:
                raise _target_unavailable(p, actor, round_, exc) from exc
            share = limit if len(chosen) == 1 else max(1, (limit + 1) // 2)  # room for the next adversaries
            fresh = await _not_stored(p, task, view.row.id, context_id, fooling(candidates, len(candidates)))
            for c in fresh[: min(share, limit - len(found))]:
                if c.fields != cleaned and all(c.fields != f.fields for _, f in found):
                    found.append((adv.name, c))
    rows = [
        Suggestion(
            task_id=view.row.id,
            round_id=round_.id,
            user_id=actor.person_id,
            context_id=context.id if context is not None else None,
            adversary=name,
            draft=cleaned,
            draft_prediction=dict(draft_verdict.prediction),
            fields=c.fields,
            prediction=dict(c.verdict.prediction) if c.verdict else {},
            edits=list(c.edits),
            rationale=c.rationale[:2000],
        )
        for name, c in found
    ]
    if rows:
        async with p.db.write() as s:
            s.add_all(rows)
            await s.flush()
    return Suggestions(draft_verdict, rows, asked, oracle.queries)


async def get_suggestion(p: Platform, actor: Actor, suggestion_id: int) -> Suggestion:
    """A suggestion, for the annotator it was made to."""
    actor = require_human(actor)
    async with p.db.session() as s:
        row = await s.get(Suggestion, suggestion_id)
    if row is None or row.user_id != actor.person_id:
        raise NotFound(f"No suggestion {suggestion_id}")
    return row


# --------------------------------------------------------------------------- generation runs


async def generate(
    p: Platform,
    actor: Actor,
    *,
    task_code: str,
    adversary: str,
    budget: int,
    seed: int | None = None,
) -> AdversaryRun:
    """Start a generation run (owners and admins): ``adversary`` attacks the open round's contexts and the drafts the
    target got right, spending at most ``budget`` target queries, within the task's daily budget
    (``GENERATION_QUERIES_PER_DAY``: what runs started today reserved, less what finished ones left unspent)."""
    actor = require_user(actor)
    view = await task_service.get_task(p, actor, task_code)
    async with p.db.session() as s:
        if not await task_service.is_owner(s, actor, view.row.id):
            raise Forbidden(f"Only owners of {task_code} and admins can generate candidates")
    chosen = _named(p, view.task, adversary, "generates", "adversary")
    if not isinstance(budget, int) or budget < 1:
        raise InvalidInput.from_errors(
            [FieldError("budget", "range", "must be a whole number of target queries, at least 1")]
        )
    if seed is not None and not 0 <= seed < 2**31:
        raise InvalidInput.from_errors([FieldError("seed", "range", "must be between 0 and 2147483647")])
    round_ = await task_service.cached_current_round(p, view.row.id)
    if round_ is None or round_.ended_at is not None or not view.row.active:
        raise RoundClosed(f"Task {task_code} has no open round; open one before generating candidates")
    daily = p.settings.generation_queries_per_day
    async with p.db.write() as s:
        midnight = utcnow().replace(hour=0, minute=0, second=0, microsecond=0)
        if p.db.dialect == "postgresql":  # one task's runs reserve their budgets one at a time
            await s.execute(select(func.pg_advisory_xact_lock(view.row.id)))
        spent = await _reserved_today(s, view.row.id, midnight)
        left = max(0, daily - spent)
        if budget > left:
            retry = (midnight + timedelta(days=1) - utcnow()).total_seconds()
            if left == 0:
                raise QuotaExceeded(
                    f"{task_code} spent its {daily} target queries for generation today; come back after midnight UTC",
                    quota="GENERATION_QUERIES_PER_DAY",
                    limit=daily,
                    retry_after_s=retry,
                )
            raise InvalidInput.from_errors(
                [
                    FieldError(
                        "budget", "daily_budget", f"{task_code} has {left} of its {daily} target queries left today"
                    )
                ]
            )
        run = AdversaryRun(
            task_id=view.row.id,
            round_id=round_.id,
            adversary=chosen.name,
            requested_by=actor.user_id,
            budget=budget,
            seed=seed if seed is not None else secrets.randbelow(2**31),
        )
        s.add(run)
        await s.flush()
        await s.refresh(run)
    await announce.updated(p, "adversaryRunUpdated", run.task_id, [run.id])
    _start(p, run.id)
    return run


async def _reserved_today(s: Any, task_id: int, midnight: Any) -> int:
    rows = (
        await s.execute(
            select(col(AdversaryRun.status), col(AdversaryRun.budget), col(AdversaryRun.queries)).where(
                col(AdversaryRun.task_id) == task_id, col(AdversaryRun.created_at) >= midnight
            )
        )
    ).all()
    return sum(queries if status in AdversaryRunStatus.FINISHED else budget for status, budget, queries in rows)


def _start(p: Platform, run_id: int) -> None:
    """Run it: where a broker carries jobs, as a ``generate`` message that a worker process takes (the run then
    outlives this process; a broker that is down leaves it QUEUED, sent again at the next start); in the embedded
    server, as a task of this process's event loop."""
    if p.jobs is not None and not p.jobs.embedded:
        try:
            p.jobs.generate(run_id)
        except BrokerUnavailable as exc:
            log.error("generation run %s stays queued: %s", run_id, exc)
        return
    runs: dict[int, asyncio.Task[None]] = p.adversary_runs
    task = asyncio.get_running_loop().create_task(_run(p, run_id), name=f"adversary-run-{run_id}")
    runs[run_id] = task
    task.add_done_callback(lambda _: runs.pop(run_id, None))


async def wait(p: Platform, run_id: int) -> None:
    """Wait for a run started by this process to end (tests, the CLI)."""
    task = p.adversary_runs.get(run_id)
    if task is not None:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(task)


async def get_run(p: Platform, actor: Actor, run_id: int) -> AdversaryRun:
    """A run, for its task's owners and admins."""
    actor = require_user(actor)
    async with p.db.session() as s:
        run = await s.get(AdversaryRun, run_id)
        if run is None or not await task_service.is_owner(s, actor, run.task_id):
            raise NotFound(f"No generation run {run_id}")
    return run


async def list_runs(p: Platform, actor: Actor, task_code: str, page: cursors.WorkPage) -> cursors.Listing:
    """A page of a task's generation runs (owners and admins): see :class:`cursors.WorkPage`."""
    actor = require_user(actor)
    view = await task_service.get_task(p, actor, task_code)
    async with p.db.session() as s:
        if not await task_service.is_owner(s, actor, view.row.id):
            raise Forbidden(f"Only owners of {task_code} and admins see its generation runs")
    return await cursors.work_listing(p, AdversaryRun, view.row.id, "adversaryRun", AdversaryRunStatus.ALL, page)


async def cancel_run(p: Platform, actor: Actor, run_id: int) -> AdversaryRun:
    """Stop a queued or running run (its owners and admins); the candidates stored so far stay. Idempotent."""
    run = await get_run(p, actor, run_id)
    if run.status in AdversaryRunStatus.FINISHED:
        return run
    if run_id in p.adversary_runs:  # a run in this process stops within its current attack; others between two items
        _CANCELLED.add(run_id)  # (a run of another process is never discarded here: its id would stay behind)
    await _finish(p, run_id, AdversaryRunStatus.CANCELLED)
    return await get_run(p, actor, run_id)


async def recover(p: Platform) -> int:
    """Mark FAILED the runs a stopped process left running: those without progress for ``STALE_AFTER`` (a live run
    records progress after every context, and one context may take ``ITEM_TIME_S``), so the runs of other live
    processes are left alone. Queued runs: where a broker carries jobs, they are sent again (a run is taken once,
    see :func:`run_queued`); in the embedded server, the stale ones are failed too (their process is gone). Returns
    how many were failed. Called at start-up."""
    stale = utcnow() - STALE_AFTER
    brokered = p.jobs is not None and not p.jobs.embedded
    statuses = (AdversaryRunStatus.RUNNING,) if brokered else (AdversaryRunStatus.QUEUED, AdversaryRunStatus.RUNNING)
    async with p.db.write() as s:
        result = await s.execute(
            update(AdversaryRun)
            .where(
                col(AdversaryRun.status).in_(statuses),
                func.coalesce(col(AdversaryRun.heartbeat_at), col(AdversaryRun.created_at)) < stale,
            )
            .values(
                status=AdversaryRunStatus.FAILED,
                error="the server process running it stopped; start the run again",
                finished_at=utcnow(),
            )
        )
    failed = int(result.rowcount or 0)  # type: ignore[attr-defined]
    if brokered:
        async with p.db.session() as s:
            queued = list(
                await s.scalars(
                    select(col(AdversaryRun.id))
                    .where(col(AdversaryRun.status) == AdversaryRunStatus.QUEUED)
                    .order_by(col(AdversaryRun.id))
                )
            )
        for run_id in queued:
            _start(p, run_id)
    return failed


async def machine_account(p: Platform, adversary: str) -> int:
    """The user id of the adversary's machine account (``machine:NAME``), made on first use. It cannot sign in: its
    password hash matches no password, and usernames with ``:`` cannot be registered."""
    username = (MACHINE_PREFIX + adversary)[:40]
    async with p.db.session() as s:
        found = await s.scalar(select(col(User.id)).where(col(User.username) == username))
    if found is not None:
        return int(found)
    try:
        async with p.db.write() as s:
            user = User(username=username, email="", password_hash="!machine", is_machine=True, is_active=False)
            s.add(user)
            await s.flush()
            return int(user.id)
    except Exception:  # made meanwhile by another run (the username is unique)
        async with p.db.session() as s:
            found = await s.scalar(select(col(User.id)).where(col(User.username) == username))
        if found is None:
            raise
        return int(found)


async def _work(
    p: Platform, task: Task, round_id: int, needs_draft: bool
) -> list[tuple[int | None, dict, dict | None]]:
    """What a run attacks: ``(context id, context fields, draft or None)``. The round's open contexts (unless the
    adversary needs a draft), then the people's examples of the round that did not fool the target, newest first."""
    items: list[tuple[int | None, dict, dict | None]] = []
    async with p.db.session() as s:
        contexts = {
            c.id: c
            for c in await s.scalars(
                select(Context).where(col(Context.round_id) == round_id).order_by(col(Context.id)).limit(MAX_ITEMS)
            )
        }
        if not needs_draft:
            items += [(c.id, dict(c.fields), None) for c in contexts.values() if c.retired_at is None]
        drafts = await s.scalars(
            select(Example)
            .where(
                col(Example.round_id) == round_id,
                col(Example.fooled).is_(False),
                col(Example.source) != "MACHINE",
                col(Example.status).in_((ExampleStatus.CREATED, ExampleStatus.ACCEPTED)),
            )
            .order_by(col(Example.id).desc())
            .limit(MAX_ITEMS)
        )
        for e in drafts:
            if e.context_id is not None:
                context = contexts.get(e.context_id) or await s.get(Context, e.context_id)
                if context is None:
                    continue
                own = {k: v for k, v in e.fields.items() if k not in task.field_names(Role.CONTEXT)}
                items.append((e.context_id, dict(context.fields), own))
            else:  # the example holds its context fields: they are the draft's own (see suggest_edits)
                items.append((None, {}, dict(e.fields)))
    if not items and not needs_draft and not task.field_names(Role.CONTEXT):
        items.append((None, {}, None))
    return items[:MAX_ITEMS]


async def _update_run(p: Platform, run_id: int, **values: Any) -> None:
    async with p.db.write() as s:
        task_id = await s.scalar(
            update(AdversaryRun)
            .where(col(AdversaryRun.id) == run_id)
            .values(heartbeat_at=utcnow(), **values)
            .returning(col(AdversaryRun.task_id))
        )
    if task_id is not None:
        await announce.updated(p, "adversaryRunUpdated", int(task_id), [run_id])


async def _take(p: Platform, run_id: int) -> bool:
    """Move a QUEUED run to RUNNING; False when it was not queued (taken by another delivery, cancelled, ended)."""
    async with p.db.write() as s:
        taken = await s.scalar(
            update(AdversaryRun)
            .where(col(AdversaryRun.id) == run_id, col(AdversaryRun.status) == AdversaryRunStatus.QUEUED)
            .values(status=AdversaryRunStatus.RUNNING, started_at=utcnow(), heartbeat_at=utcnow())
            .returning(col(AdversaryRun.id))
        )
    return taken is not None


async def _status(p: Platform, run_id: int) -> str:
    async with p.db.session() as s:
        return str(await s.scalar(select(col(AdversaryRun.status)).where(col(AdversaryRun.id) == run_id)))


async def run_queued(p: Platform, run_id: int) -> None:
    """Execute a queued run to its end (the ``generate`` job of a worker process): a run already taken (a message
    sent twice) or ended is left alone."""
    await _run(p, run_id)


async def _run(p: Platform, run_id: int) -> None:
    """Execute one run to its end; every failure ends as a FAILED run with a message, never as a lost task."""
    try:
        await _execute(p, run_id)
    except asyncio.CancelledError:
        await asyncio.shield(_finish(p, run_id, AdversaryRunStatus.FAILED, "the server stopped during the run"))
        raise
    except Exception as exc:
        log.exception("generation run %s failed", run_id)
        await _finish(p, run_id, AdversaryRunStatus.FAILED, f"{type(exc).__name__}: {exc}")
    finally:
        _CANCELLED.discard(run_id)


async def _finish(p: Platform, run_id: int, status: str, error: str | None = None) -> None:
    async with p.db.write() as s:
        result = await s.execute(
            update(AdversaryRun)
            .where(
                col(AdversaryRun.id) == run_id,
                col(AdversaryRun.status).in_((AdversaryRunStatus.QUEUED, AdversaryRunStatus.RUNNING)),
            )
            .values(status=status, error=error[:2000] if error else None, finished_at=utcnow())
            .returning(col(AdversaryRun.task_id))
        )
        task_id = result.scalar()
    if task_id is not None:  # None: it had already ended
        await announce.updated(p, "adversaryRunUpdated", int(task_id), [run_id])


async def _execute(p: Platform, run_id: int) -> None:
    async with p.db.session() as s:
        run = await s.get(AdversaryRun, run_id)
        round_ = await s.get(Round, run.round_id) if run is not None else None
    if run is None or round_ is None or not await _take(p, run_id):
        return
    view = await task_service.get_task(p, Actor.system(), await _task_code(p, run.task_id))
    task = view.task
    adversary = p.plugins.registry.adversaries.get(run.adversary)
    if adversary is None:
        await _finish(p, run_id, AdversaryRunStatus.FAILED, f"adversary {run.adversary} is not installed here")
        return
    items = await _work(p, task, round_.id, adversary.needs_draft)
    await _update_run(p, run_id, items_total=len(items))
    if not items:
        await _finish(
            p,
            run_id,
            AdversaryRunStatus.DONE,
            "nothing to attack: the round has no examples the target got right, which this adversary needs as drafts"
            if adversary.needs_draft
            else "nothing to attack: the round has no open contexts and no examples the target got right",
        )
        return
    machine = await machine_account(p, adversary.name)
    rng = random.Random(run.seed)
    # published examples only: a run's candidates go to validators, and the owner who started it is no author
    fooled_before = [] if adversary.needs_draft else await _fooled_before(p, task, view.row.id, None)
    spent = done = stored = 0
    for context_id, context_fields, draft in items:
        if await _status(p, run_id) != AdversaryRunStatus.RUNNING:
            return  # cancelled: what was stored stays
        left = run.budget - spent
        if left <= 0:
            break
        oracle = target_oracle(
            p,
            task,
            round_,
            context_fields,
            max_queries=min(left, p.settings.generation_queries_per_item),
            time_limit_s=ITEM_TIME_S,
            cancelled=lambda: run_id in _CANCELLED,
        )
        request = _request(
            p,
            task,
            context_fields,
            draft,
            rng=random.Random(rng.randrange(2**32)),
            max_candidates=CANDIDATES_PER_ITEM,
            fooled_before=fooled_before,
        )
        try:
            candidates = await adversary.attack(request, oracle)
        except AdversaryFailed as exc:
            spent += oracle.queries
            await _update_run(p, run_id, queries=spent)
            await _finish(p, run_id, AdversaryRunStatus.FAILED, f"{adversary.name} could not run: {exc}")
            return
        except InferenceError as exc:
            spent += oracle.queries
            await _update_run(p, run_id, queries=spent)
            log.warning("generation run %s: the target model could not answer: %s", run_id, exc)
            shown = example_service.without_server_paths(p, round_, str(exc))  # owners read it, not only admins
            await _finish(p, run_id, AdversaryRunStatus.FAILED, f"the target model could not answer: {shown}")
            return
        spent += oracle.queries
        done += 1
        fresh = await _not_stored(p, task, view.row.id, context_id, fooling(candidates, len(candidates)))
        for candidate in fresh[:CANDIDATES_PER_ITEM]:
            if draft is not None and candidate.fields == draft:
                continue
            await _store_candidate(p, view, round_, machine, context_id, context_fields, candidate, adversary.name)
            stored += 1
        await _update_run(p, run_id, queries=spent, items_done=done, candidates=stored)
    await _finish(p, run_id, AdversaryRunStatus.DONE)


async def _task_code(p: Platform, task_id: int) -> str:
    async with p.db.session() as s:
        return str(await s.scalar(select(col(TaskRow.code)).where(col(TaskRow.id) == task_id)))


async def _store_candidate(
    p: Platform,
    view: task_service.TaskView,
    round_: Round,
    machine_user: int,
    context_id: int | None,
    context_fields: dict[str, Any],
    candidate: Candidate,
    adversary: str,
) -> Example:
    verdict = candidate.verdict
    assert verdict is not None and verdict.fooled
    fields = dict(candidate.fields) if context_id is not None else {**context_fields, **candidate.fields}
    now = utcnow()
    values = {
        "task_id": view.row.id,
        "round_id": round_.id,
        "context_id": context_id,
        "user_id": machine_user,
        "fields": fields,
        "prediction": dict(verdict.prediction),
        "corrected_target": None,
        "model_predictions": [dict(m) for m in verdict.members],
        "fooled": True,
        "status": ExampleStatus.CREATED,
        "tag": None,
        "time_taken_ms": None,
        "source": "MACHINE",
        "adversary": adversary,
        "suggestion_id": None,
        "inference_ms": max((float(m.get("latency_ms") or 0.0) for m in verdict.members), default=0.0),
        "created_at": now,
        "updated_at": now,
    }
    return await example_service.store(p, values, task_code=view.task.code, round_number=round_.number)
