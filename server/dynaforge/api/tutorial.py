"""Tutorial resolvers: the task's tutorial for trainees (Task.tutorial), practice answers, and the owners' items
(dynaforge.services.tutorial)."""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.context import Info, TaskCode
from dynaforge.api.enums import raw
from dynaforge.api.errors import AlreadyExists, Forbidden, InvalidInput, NotAuthenticated, NotFound, errors_as_union
from dynaforge.api.node import global_id, parse_id
from dynaforge.api.task_lists import task_list
from dynaforge.api.types.example import ValidationLabel
from dynaforge.api.types.prediction import Prediction
from dynaforge.services import tasks as task_service
from dynaforge.services import tutorial as service


@strawberry.type(
    description="A decided example of the task's tutorial, as a trainee sees it: the verdict to give and why come "
    "once they answered (its owners and admins see them at once)."
)
class TutorialItem:
    example_id: strawberry.ID = strawberry.field(description="The example's id (Example.id).")
    fields: JSON = strawberry.field(description="The example's fields, as its author wrote them.")
    context: JSON | None = strawberry.field(description="The fields of its context; null when it has none.")
    model_answer: Prediction | None = strawberry.field(description="What the model answered.")
    your_answer: ValidationLabel | None = strawberry.field(
        description="Your answer in this attempt; null before you answered."
    )
    expected: ValidationLabel | None = strawberry.field(
        description="The verdict a careful validator gives: CORRECT (the label is right) or INCORRECT; null until "
        "you answered."
    )
    explanation: str | None = strawberry.field(description="Why, in the owners' words; null until you answered.")
    correct: bool | None = strawberry.field(description="Whether your answer was right; null before you answered.")

    @classmethod
    def of(cls, item: service.Item, task: object, reveal: bool) -> TutorialItem:
        shown = reveal or item.answered
        return cls(
            example_id=strawberry.ID(global_id("Example", item.example.id)),
            fields=JSON(item.example.fields),
            context=None if item.context is None else JSON(item.context),
            model_answer=None if item.example.prediction is None else Prediction.of(item.example.prediction, task),  # type: ignore[arg-type]
            your_answer=None if item.answer is None else ValidationLabel(item.answer),
            expected=ValidationLabel(item.expected) if shown else None,
            explanation=item.explanation if shown else None,
            correct=None if item.answer is None else item.answer == item.expected,
        )


@strawberry.type(description="A task's tutorial and where you stand in it (Task.tutorial).")
class Tutorial:
    pass_mark: float | None = strawberry.field(
        description="The score (0.5 to 1) people must reach before their work counts; null: the task asks no "
        "qualification (the tutorial is practice only)."
    )
    required: bool = strawberry.field(
        description="Whether your examples and votes in the task wait for you to pass (never for its owners and "
        "admins, nor without items)."
    )
    passed: bool = strawberry.field(description="Whether you passed it (for good).")
    total: int = strawberry.field(description="Its items.")
    answered: int = strawberry.field(description="The items you answered in this attempt.")
    correct: int = strawberry.field(description="Of those, the ones you got right.")
    score: float | None = strawberry.field(
        description="correct / total once every item is answered; null before (restartTutorial starts again)."
    )
    attempts: int = strawberry.field(description="Your completed attempts.")
    task_code: strawberry.Private[str]
    reveal: strawberry.Private[bool]

    @strawberry.field(description="Its items, in the order the owners added them.")
    async def items(self, info: Info) -> list[TutorialItem]:
        task = info.context.platform.plugins.task(self.task_code)
        found = await service.items(*info.context.caller, self.task_code)
        return [TutorialItem.of(i, task, self.reveal) for i in found]

    @classmethod
    def of(cls, standing: service.Standing, task_code: str) -> Tutorial:
        return cls(
            pass_mark=standing.pass_mark,
            required=standing.required,
            passed=standing.passed,
            total=standing.total,
            answered=standing.answered,
            correct=standing.correct,
            score=standing.score,
            attempts=standing.attempts,
            task_code=task_code,
            reveal=standing.is_owner,
        )


@task_list("tutorial")
async def tutorial_of(info: Info, task_code: str) -> Tutorial:
    """Task.tutorial."""
    return Tutorial.of(await service.standing(*info.context.caller, task_code), task_code)


@strawberry.input(description="A decided example to put in its task's tutorial.")
class AddTutorialItemInput:
    example_id: strawberry.ID = strawberry.field(description="An ACCEPTED or REJECTED example (Example.id).")
    expected: ValidationLabel | None = strawberry.field(
        default=None,
        description="The verdict a trainee should give, CORRECT or INCORRECT; null: what the example's decision "
        "says (CORRECT for an accepted one).",
    )
    explanation: str = strawberry.field(
        default="", description=f"Why, shown after the answer; at most {service.MAX_EXPLANATION} characters."
    )


@strawberry.input(description="An example to take out of its task's tutorial.")
class RemoveTutorialItemInput:
    example_id: strawberry.ID = strawberry.field(description="The example (Example.id).")


@strawberry.input(description="Your practice answer to one tutorial item.")
class AnswerTutorialInput:
    example_id: strawberry.ID = strawberry.field(description="The item's example (TutorialItem.exampleId).")
    label: ValidationLabel = strawberry.field(description="CORRECT (the label is right) or INCORRECT.")


@strawberry.input(description="The tutorial to start again.")
class RestartTutorialInput:
    task_code: TaskCode = strawberry.field(description="The code of the task (Task.code).")


@strawberry.type(description="The example is in the tutorial.")
class TutorialItemAdded:
    item: TutorialItem = strawberry.field(description="The item, as its owners see it.")


@strawberry.type(description="The example is out of the tutorial.")
class TutorialItemRemoved:
    example_id: strawberry.ID = strawberry.field(description="The example's id.")


@strawberry.type(description="Your answer is recorded: whether it was right, why, and where you stand now.")
class TutorialAnswered:
    item: TutorialItem = strawberry.field(description="The item, with the verdict and why.")
    tutorial: Tutorial = strawberry.field(description="Your standing after this answer.")


@strawberry.type(description="Your answers are cleared: a new attempt starts (a pass already earned stays).")
class TutorialRestarted:
    tutorial: Tutorial = strawberry.field(description="Your standing now.")


AddTutorialItemResult = Annotated[
    TutorialItemAdded | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "AddTutorialItemResult",
        description="TutorialItemAdded: it is in. The other members are the expected failures, and add nothing: "
        "InvalidInput (not a decided example, a bad verdict, an explanation too long, a full tutorial), "
        "NotAuthenticated, Forbidden (not an owner of its task or an admin), NotFound (no such example you can see).",
    ),
]
RemoveTutorialItemResult = Annotated[
    TutorialItemRemoved | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "RemoveTutorialItemResult",
        description="TutorialItemRemoved: it is out. The other members are the expected failures: InvalidInput, "
        "NotAuthenticated, Forbidden (not an owner of its task or an admin), NotFound (not in the tutorial).",
    ),
]
AnswerTutorialResult = Annotated[
    TutorialAnswered | InvalidInput | NotAuthenticated | NotFound | AlreadyExists,
    strawberry.union(
        "AnswerTutorialResult",
        description="TutorialAnswered: recorded. The other members are the expected failures, and record nothing: "
        "InvalidInput (a label other than CORRECT or INCORRECT), NotAuthenticated, NotFound (no such tutorial item "
        "you can see), AlreadyExists (answered in this attempt: restartTutorial first).",
    ),
]
RestartTutorialResult = Annotated[
    TutorialRestarted | NotAuthenticated | NotFound,
    strawberry.union(
        "RestartTutorialResult",
        description="TutorialRestarted: a new attempt. The other members are the expected failures: "
        "NotAuthenticated, NotFound (no such task you can see).",
    ),
]


@strawberry.type
class TutorialMutation:
    @strawberry.mutation(
        description="The task's owners and admins put a decided example in its tutorial, with the verdict a trainee "
        "should give and why (again: replaces them, and clears trainees' answers to it). Every trainee sees it, "
        "gold label included: never choose an example of a hidden set."
    )
    @errors_as_union
    async def add_tutorial_item(
        self, info: Info, input: Annotated[AddTutorialItemInput, strawberry.argument(description="The item.")]
    ) -> AddTutorialItemResult:
        example_id = parse_id(input.example_id, "exampleId", "Example")
        item = await service.add_item(
            *info.context.caller, example_id, None if input.expected is None else raw(input.expected), input.explanation
        )
        task = info.context.platform.plugins.task(await _code_of(info, item.example.task_id))
        return TutorialItemAdded(item=TutorialItem.of(item, task, True))

    @strawberry.mutation(description="The task's owners and admins take an example out of its tutorial.")
    @errors_as_union
    async def remove_tutorial_item(
        self, info: Info, input: Annotated[RemoveTutorialItemInput, strawberry.argument(description="The item.")]
    ) -> RemoveTutorialItemResult:
        gone = await service.remove_item(*info.context.caller, parse_id(input.example_id, "exampleId", "Example"))
        return TutorialItemRemoved(example_id=strawberry.ID(global_id("Example", gone)))

    @strawberry.mutation(
        description="Signed-in users answer a tutorial item for practice: never a vote, never counted or exported. "
        "The last answer of an attempt scores it; at or above the pass mark you are qualified."
    )
    @errors_as_union
    async def answer_tutorial(
        self, info: Info, input: Annotated[AnswerTutorialInput, strawberry.argument(description="The answer.")]
    ) -> AnswerTutorialResult:
        item, standing = await service.answer(
            *info.context.caller, parse_id(input.example_id, "exampleId", "Example"), raw(input.label)
        )
        code = await _code_of(info, item.example.task_id)
        task = info.context.platform.plugins.task(code)
        return TutorialAnswered(item=TutorialItem.of(item, task, False), tutorial=Tutorial.of(standing, code))

    @strawberry.mutation(description="Signed-in users clear their tutorial answers to try again.")
    @errors_as_union
    async def restart_tutorial(
        self, info: Info, input: Annotated[RestartTutorialInput, strawberry.argument(description="The task.")]
    ) -> RestartTutorialResult:
        standing = await service.restart(*info.context.caller, input.task_code)
        return TutorialRestarted(tutorial=Tutorial.of(standing, input.task_code))


async def _code_of(info: Info, task_id: int) -> str:
    view = await task_service.visible_task(*info.context.caller, task_id)
    return view.task.code
