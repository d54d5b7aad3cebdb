"""Tutorials and qualification: new annotators and validators practise on decided examples before their work counts.

A task's owners put decided examples (ACCEPTED or REJECTED) in its tutorial, each with the verdict a careful
validator gives (CORRECT: the label is right; INCORRECT: it is not; by default what the example's decision says) and
why. Anyone signed in may take the tutorial: each item shows the example and the model's answer, the trainee says
CORRECT or INCORRECT and learns at once whether that was right, and why. Once every item is answered the attempt is
scored; at or above the task's ``qualification_pass_mark`` the trainee is qualified for good. ``restart`` starts a
new attempt.

With a pass mark set and at least one item, people who are not qualified (owners and admins aside) may neither
write examples nor validate in the task: ``createExample``, ``exampleToValidate`` and ``validateExample`` answer
Forbidden, saying to pass the tutorial first. Practice answers live in their own table: never votes, never examples,
never counted or exported. The tutorial's examples are shown to every trainee, their gold label included: owners
should not choose examples of a hidden test set.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Integer, delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from dynaforge.db.models import Context, Example, ExampleStatus, Qualification, TutorialAnswer, TutorialItem, utcnow
from dynaforge.errors import AlreadyExists, FieldError, Forbidden, InvalidInput, NotFound
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_human
from dynaforge.services.platform import Platform

CORRECT, INCORRECT = "CORRECT", "INCORRECT"
MAX_EXPLANATION = 2000
MAX_ITEMS = 50


@dataclass(frozen=True)
class Item:
    """One tutorial item as a trainee sees it: the verdict and the explanation only once they answered."""

    example: Example
    context: dict[str, Any] | None
    expected: str
    explanation: str
    answer: str | None  # the trainee's, in the current attempt

    @property
    def answered(self) -> bool:
        return self.answer is not None


@dataclass(frozen=True)
class Standing:
    """A person's place in a task's tutorial."""

    pass_mark: float | None
    total: int
    answered: int
    correct: int
    passed: bool
    attempts: int
    is_owner: bool

    @property
    def required(self) -> bool:
        """Whether their work in the task waits for the tutorial."""
        return self.pass_mark is not None and self.total > 0 and not self.passed and not self.is_owner

    @property
    def score(self) -> float | None:
        return self.correct / self.total if self.total and self.answered == self.total else None


async def _owned(p: Platform, actor: Actor, example_id: int) -> tuple[task_service.TaskView, Example]:
    actor = require_human(actor)
    async with p.db.session() as s:
        example = await s.get(Example, example_id)
    if example is None:
        raise NotFound(f"No example {example_id}")
    view = await task_service.visible_task(p, actor, example.task_id)
    if not await task_service.owns_task(p, actor, view.row.id):
        raise Forbidden(f"Only owners of {view.task.code} and admins edit its tutorial")
    return view, example


async def add_item(p: Platform, actor: Actor, example_id: int, expected: str | None, explanation: str) -> Item:
    """The task's owners and admins put a decided example in its tutorial (``expected``: the verdict a trainee should
    give; by default the decision's). Adding it again replaces its verdict and explanation."""
    view, example = await _owned(p, actor, example_id)
    errors = []
    if example.status not in (ExampleStatus.ACCEPTED, ExampleStatus.REJECTED):
        errors.append(FieldError("exampleId", "status", "must be a decided example (accepted or rejected)"))
    if expected is not None and expected not in (CORRECT, INCORRECT):
        errors.append(FieldError("expected", "choice", "must be CORRECT or INCORRECT"))
    explanation = (explanation or "").strip()
    if len(explanation) > MAX_EXPLANATION:
        errors.append(FieldError("explanation", "max_length", f"must have at most {MAX_EXPLANATION} characters"))
    if errors:
        raise InvalidInput.from_errors(errors)
    verdict = expected or (CORRECT if example.status == ExampleStatus.ACCEPTED else INCORRECT)
    async with p.db.write() as s:
        row = await s.get(TutorialItem, example_id)
        if row is None:
            count = await s.scalar(
                select(func.count()).select_from(TutorialItem).where(col(TutorialItem.task_id) == view.row.id)
            )
            if (count or 0) >= MAX_ITEMS:
                raise InvalidInput.from_errors(
                    [FieldError("exampleId", "max_items", f"a tutorial holds at most {MAX_ITEMS} examples")]
                )
            row = TutorialItem(example_id=example_id, task_id=view.row.id, expected=verdict)
            s.add(row)
        row.expected, row.explanation, row.added_by = verdict, explanation, actor.person_id  # its place stays
        # A changed item's earlier answers no longer say anything.
        await s.execute(delete(TutorialAnswer).where(col(TutorialAnswer.example_id) == example_id))
    return Item(example, None, verdict, explanation, None)


async def remove_item(p: Platform, actor: Actor, example_id: int) -> int:
    """The task's owners and admins take an example out of its tutorial (trainees' answers to it go too)."""
    await _owned(p, actor, example_id)
    async with p.db.write() as s:
        row = await s.get(TutorialItem, example_id)
        if row is None:
            raise NotFound(f"Example {example_id} is not in the tutorial")
        await s.delete(row)
    return example_id


async def items(p: Platform, actor: Actor, task_code: str) -> list[Item]:
    """The tutorial's items in the order they were added, with the caller's answers of the current attempt."""
    actor = require_human(actor)
    view = await task_service.get_task(p, actor, task_code)
    async with p.db.session() as s:
        rows = (
            await s.execute(
                select(TutorialItem, Example)
                .join(Example, col(Example.id) == col(TutorialItem.example_id))
                .where(col(TutorialItem.task_id) == view.row.id)
                .order_by(col(TutorialItem.added_at), col(TutorialItem.example_id))
            )
        ).all()
        answers = {
            a.example_id: a.label
            for a in await s.scalars(
                select(TutorialAnswer).where(
                    col(TutorialAnswer.task_id) == view.row.id, col(TutorialAnswer.user_id) == actor.user_id
                )
            )
        }
        context_ids = {e.context_id for _, e in rows if e.context_id is not None}
        contexts = (
            {c.id: dict(c.fields) for c in await s.scalars(select(Context).where(col(Context.id).in_(context_ids)))}
            if context_ids
            else {}
        )
    return [
        Item(e, contexts.get(e.context_id) if e.context_id else None, t.expected, t.explanation, answers.get(e.id))
        for t, e in rows
    ]


async def standing(p: Platform, actor: Actor, task_code: str) -> Standing:
    """Where the caller stands in the task's tutorial."""
    actor = require_human(actor)
    view = await task_service.get_task(p, actor, task_code)
    return await _standing(p, actor, view)


async def _standing(p: Platform, actor: Actor, view: task_service.TaskView) -> Standing:
    async with p.db.session() as s:
        total = await s.scalar(
            select(func.count()).select_from(TutorialItem).where(col(TutorialItem.task_id) == view.row.id)
        )
        answered, correct = (
            await s.execute(
                select(func.count(), func.sum(func.cast(col(TutorialAnswer.correct), Integer))).where(
                    col(TutorialAnswer.task_id) == view.row.id, col(TutorialAnswer.user_id) == actor.user_id
                )
            )
        ).one()
        row = await s.get(Qualification, (view.row.id, actor.user_id))
        is_owner = await task_service.is_owner(s, actor, view.row.id)
    return Standing(
        pass_mark=view.settings.qualification_pass_mark,
        total=int(total or 0),
        answered=int(answered or 0),
        correct=int(correct or 0),
        passed=row is not None and row.passed_at is not None,
        attempts=0 if row is None else row.attempts,
        is_owner=is_owner,
    )


async def answer(p: Platform, actor: Actor, example_id: int, label: str) -> tuple[Item, Standing]:
    """Record the caller's practice answer to a tutorial item (once per attempt: AlreadyExists after); when it is the
    attempt's last, score the attempt and qualify the caller at or above the pass mark."""
    actor = require_human(actor)
    if label not in (CORRECT, INCORRECT):
        raise InvalidInput.from_errors([FieldError("label", "choice", "must be CORRECT or INCORRECT")])
    async with p.db.session() as s:
        item = await s.get(TutorialItem, example_id)
        example = await s.get(Example, example_id)
    if item is None or example is None:
        raise NotFound(f"Example {example_id} is not in a tutorial")
    view = await task_service.visible_task(p, actor, item.task_id)
    try:
        async with p.db.write() as s:
            s.add(
                TutorialAnswer(
                    user_id=actor.person_id,
                    example_id=example_id,
                    task_id=item.task_id,
                    label=label,
                    correct=label == item.expected,
                )
            )
    except IntegrityError as exc:
        raise AlreadyExists("You answered this item in this attempt; restart the tutorial to answer again") from exc
    now = await _standing(p, actor, view)
    if now.score is not None:
        async with p.db.write() as s:
            row = await s.get(Qualification, (view.row.id, actor.user_id))
            if row is None:
                row = Qualification(task_id=view.row.id, user_id=actor.person_id)
                s.add(row)
            row.attempts += 1
            row.best_score = max(row.best_score or 0.0, now.score)
            if row.passed_at is None and now.pass_mark is not None and now.score >= now.pass_mark - 1e-9:
                row.passed_at = utcnow()
        now = await _standing(p, actor, view)
    context = None
    if example.context_id is not None:
        async with p.db.session() as s:
            found = await s.get(Context, example.context_id)
            context = dict(found.fields) if found is not None else None
    return Item(example, context, item.expected, item.explanation, label), now


async def restart(p: Platform, actor: Actor, task_code: str) -> Standing:
    """Clear the caller's answers to start a new attempt (a qualification already earned stays)."""
    actor = require_human(actor)
    view = await task_service.get_task(p, actor, task_code)
    async with p.db.write() as s:
        await s.execute(
            delete(TutorialAnswer).where(
                col(TutorialAnswer.task_id) == view.row.id, col(TutorialAnswer.user_id) == actor.user_id
            )
        )
    return await _standing(p, actor, view)


async def require_qualified(p: Platform, actor: Actor, view: task_service.TaskView) -> None:
    """Forbidden for someone whose work in the task waits for its tutorial (see the module's docstring)."""
    if view.settings.qualification_pass_mark is None:
        return
    async with p.db.session() as s:
        passed = await s.scalar(
            select(col(Qualification.passed_at)).where(
                col(Qualification.task_id) == view.row.id, col(Qualification.user_id) == actor.user_id
            )
        )
        if passed is not None:
            return
        has_items = await s.scalar(select(col(TutorialItem.example_id)).where(col(TutorialItem.task_id) == view.row.id))
        if has_items is None or await task_service.is_owner(s, actor, view.row.id):
            return
    raise Forbidden(
        f"Pass the tutorial of {view.task.code} first (Task.tutorial): practise on its examples until you reach "
        f"{view.settings.qualification_pass_mark:.0%}, then your work counts"
    )
