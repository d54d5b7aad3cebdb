"""Task proposals: a user asks to run a task on the platform; an admin accepts or declines.

A proposal names a task a plugin provides, or carries the task's declaration (:mod:`dynaforge.tasks.declarative`).
Accepting the first needs the task's plugin installed on the server (a task's behaviour is code, reviewed and
installed by the operators); accepting the second declares the task. The proposer then becomes an owner of the task,
which is set active.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlmodel import col

from dynaforge.db.models import ProposalStatus, TaskOwner, TaskProposal, TaskRow, User, utcnow
from dynaforge.errors import AlreadyExists, Conflict, FieldError, Forbidden, InvalidInput, NotFound
from dynaforge.services import cursors
from dynaforge.services import declared_tasks as declared_service
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_human, require_user
from dynaforge.services.platform import Platform
from dynaforge.tasks.base import TASK_CODE_RULE, task_code_problem
from dynaforge.tasks.declarative import load_declaration


async def propose(
    p: Platform, actor: Actor, *, code: str, name: str, description: str = "", definition: Any = None
) -> TaskProposal:
    """A user asks for a task: one a plugin provides (``definition`` None), or the task ``definition`` declares (its
    code must be ``code``; it is checked now, and again when an admin accepts it). The target models it names
    follow the proposer's rights, now and when it is accepted: a non-admin cannot name a local model folder."""
    actor = require_human(actor)
    declared = None
    if definition is not None:
        declared = load_declaration(definition)  # InvalidInput, each problem under `definition`
        if declared.code != code:
            raise InvalidInput.from_errors(
                [FieldError("definition.code", "changed", f"must be the proposal's code {code!r}")]
            )
        declared_service.check_targets_chosen_by(p, actor, declared)
    errors = []
    if task_code_problem(code) is not None:  # the rule a plugin's task and a declaration follow too
        errors.append(FieldError("code", "format", f"use {TASK_CODE_RULE}"))
    if not 1 <= len((name or "").strip()) <= 200:
        errors.append(FieldError("name", "length", "must have 1 to 200 characters"))
    if len(description or "") > 5000:
        errors.append(FieldError("description", "max_length", "must have at most 5000 characters"))
    if errors:
        raise InvalidInput.from_errors(errors)
    await p.limiter.hit(f"proposals:{actor.user_id}", p.settings.proposals_per_day, 86400.0, "task proposals")
    async with p.db.write() as s:
        if await _taken(s, code):
            raise AlreadyExists(f"The task code {code!r} is taken; propose another")
        pending = await s.scalar(
            select(col(TaskProposal.id)).where(
                col(TaskProposal.code) == code, col(TaskProposal.status) == ProposalStatus.PENDING
            )
        )
        if pending is not None:
            raise AlreadyExists(f"Task {code!r} is already proposed (proposal {pending}); wait for an admin's decision")
        proposal = TaskProposal(
            user_id=actor.person_id,
            code=code,
            name=name.strip(),
            description=description or "",
            definition=None if declared is None else declared.declaration,
        )
        s.add(proposal)
        await s.flush()
    return proposal


async def _proposer(p: Platform, user_id: int) -> Actor:
    """The proposer as they are now (an account deleted meanwhile has no rights: a plain user)."""
    async with p.db.session() as s:
        user = await s.get(User, user_id)
    if user is None:
        return Actor(user_id, "", False)
    return Actor(user.id, user.username, user.is_admin and user.is_active)


async def _owned(s, task_id: int) -> bool:
    return await s.scalar(select(col(TaskOwner.task_id)).where(col(TaskOwner.task_id) == task_id).limit(1)) is not None


async def _taken(s, code: str) -> bool:
    """A task with this code is running (active) or owned: a proposal may not name it (accepting one would hand
    the proposer ownership of someone else's task). A plugin's task that waits for its proposal is neither."""
    task = await s.scalar(select(TaskRow).where(col(TaskRow.code) == code))
    return task is not None and (task.active or await _owned(s, task.id))


async def decide(
    p: Platform,
    actor: Actor,
    proposal_id: int,
    *,
    accept: bool,
    note: str | None = None,
) -> TaskProposal:
    actor = require_user(actor)
    if not actor.is_admin:
        raise Forbidden("Only admins decide task proposals")
    if note is not None and len(note) > 2000:
        raise InvalidInput.from_errors([FieldError("note", "max_length", "must have at most 2000 characters")])
    async with p.db.session() as s:
        proposal = await s.get(TaskProposal, proposal_id)
    if proposal is None:
        raise NotFound(f"No task proposal {proposal_id}")
    if accept:
        if proposal.definition is not None and p.plugins.task(proposal.code) is None:
            # Checked again against what is loaded now, and its targets against the proposer, who chose them.
            proposer = await _proposer(p, proposal.user_id)
            await declared_service.create(p, actor, proposal.definition, proposer=proposer)
        if p.plugins.task(proposal.code) is None:
            known = ", ".join(sorted(p.plugins.registry.tasks)) or "none"
            raise InvalidInput.from_errors(
                [
                    FieldError(
                        "id",
                        "plugin",
                        f"no installed plugin provides task {proposal.code!r} (installed: {known}); "
                        "install the task's plugin on the server and restart it, then accept",
                    )
                ]
            )
        await task_service.sync_registered_tasks(p)
    async with p.db.write() as s:
        proposal = await s.get(
            TaskProposal, proposal_id, with_for_update=p.db.dialect == "postgresql", populate_existing=True
        )
        if proposal is None:
            raise NotFound(f"No task proposal {proposal_id}")
        if proposal.status != ProposalStatus.PENDING:
            raise Conflict(f"Proposal {proposal_id} was already {proposal.status.lower()}")
        proposal.status = ProposalStatus.ACCEPTED if accept else ProposalStatus.DECLINED
        proposal.decision_note, proposal.decided_by, proposal.decided_at = note, actor.user_id, utcnow()
        if accept:
            task = await s.scalar(select(TaskRow).where(col(TaskRow.code) == proposal.code))
            if task is None:  # synced above from the installed plugin
                raise NotFound(f"Task {proposal.code!r} is not in the database; restart the server to sync it")
            if await _owned(s, task.id):
                # Accepting would make the proposer an owner of a task that others run: never by a proposal.
                raise Conflict(
                    f"Task {proposal.code!r} already has owners; decline the proposal (its owners or an admin grant "
                    "ownership with grantTaskOwnership)"
                )
            task.active = True
            if await s.get(TaskOwner, (task.id, proposal.user_id)) is None:
                s.add(TaskOwner(task_id=task.id, user_id=proposal.user_id))
        await s.flush()
    p.caches.tasks.pop(proposal.code)
    return proposal


async def list_proposals(
    p: Platform,
    actor: Actor,
    *,
    status: str | None = None,
    first: int | None = None,
    after: str | None = None,
    last: int | None = None,
    before: str | None = None,
) -> cursors.Listing:
    """Admins see every proposal, others their own; newest first, a page at a time."""
    actor = require_user(actor)
    request = cursors.PageRequest.of(
        "proposal", first=first, after=after, last=last, before=before, max_size=p.settings.page_max_size
    )
    if status is not None and status not in ProposalStatus.ALL:
        raise InvalidInput.from_errors(
            [FieldError("status", "choice", f"must be one of {', '.join(ProposalStatus.ALL)}")]
        )
    where = []
    if not actor.is_admin:
        where.append(col(TaskProposal.user_id) == actor.user_id)
    if status is not None:
        where.append(col(TaskProposal.status) == status)
    statement = select(TaskProposal).where(*where)
    async with p.db.session() as s:
        page = await cursors.window(s, statement, col(TaskProposal.id), "proposal", request)
    return cursors.Listing(page, cursors.counter(p, statement))


async def get_proposal(p: Platform, actor: Actor, proposal_id: int) -> TaskProposal:
    """A proposal, for its proposer and admins; NotFound for anyone else."""
    actor = require_user(actor)
    async with p.db.session() as s:
        row = await s.get(TaskProposal, proposal_id)
    if row is None or (row.user_id != actor.user_id and not actor.is_admin):
        raise NotFound(f"No task proposal {proposal_id} of yours")
    return row
