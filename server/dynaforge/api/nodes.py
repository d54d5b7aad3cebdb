"""``node(id:)`` and ``nodes(ids:)``: any object by its global id, with the same visibility as its own query.

Each type has one fetcher that calls the service which authorises reading it (an example for its author and the
task's owners, a webhook for its registrant and the owners, ...). What the caller may not see answers null, exactly
like an id that names nothing: ``node`` never tells the two apart.
"""

from __future__ import annotations

from typing import Annotated, Any

import strawberry

from dynaforge import errors as domain
from dynaforge.api.adversaries import AdversaryRun, Suggestion, run_node
from dynaforge.api.context import Info
from dynaforge.api.crowd import CrowdStudy
from dynaforge.api.datasets import Dataset, DatasetItem
from dynaforge.api.errors import errors_as_graphql
from dynaforge.api.leaderboards import LeaderboardFork, LeaderboardSnapshot, _fork, _snapshot
from dynaforge.api.models import Evaluation, Model
from dynaforge.api.node import FETCHERS, Node, decode_global_id, related
from dynaforge.api.training import RegisteredModel, TrainingJob
from dynaforge.api.types.context_type import ContextType
from dynaforge.api.types.example import Example, Validation
from dynaforge.api.types.round import Round
from dynaforge.api.types.stats import TaskProposal
from dynaforge.api.types.task import Task
from dynaforge.api.types.user import ApiToken, User
from dynaforge.api.webhooks import Webhook, WebhookDelivery
from dynaforge.services import adversaries as adversary_service
from dynaforge.services import auth as auth_service
from dynaforge.services import contexts as context_service
from dynaforge.services import crowd as crowd_service
from dynaforge.services import cursors
from dynaforge.services import datasets as dataset_service
from dynaforge.services import examples as example_service
from dynaforge.services import leaderboard as board_service
from dynaforge.services import proposals as proposal_service
from dynaforge.services import submissions as submission_service
from dynaforge.services import tasks as task_service
from dynaforge.services import training as training_service
from dynaforge.services import webhooks as webhook_service

#: The most ids one ``nodes`` call takes.
MAX_NODES = 100


def _pk(key: str) -> int:
    if not (key.isascii() and key.isdigit()) or not 0 < int(key) <= domain.MAX_ID:
        raise domain.NotFound("no such object")
    return int(key)


async def _api_token(info: Info, key: str) -> Any:
    return ApiToken.from_row(await auth_service.get_token(*info.context.caller, _pk(key)))


async def _context(info: Info, key: str) -> Any:
    return ContextType.from_row(await context_service.visible_context(*info.context.caller, _pk(key)))


async def _crowd_study(info: Info, key: str) -> Any:
    return CrowdStudy.of(await crowd_service.study(*info.context.caller, _pk(key)))


async def _registered_model(info: Info, key: str) -> Any:
    return RegisteredModel.from_row(await training_service.get_registered(*info.context.caller, _pk(key)))


async def _adversary_run(info: Info, key: str) -> Any:
    return await run_node(info, await adversary_service.get_run(*info.context.caller, _pk(key)))


async def _suggestion(info: Info, key: str) -> Any:
    row = await adversary_service.get_suggestion(*info.context.caller, _pk(key))
    view = await task_service.visible_task(*info.context.caller, row.task_id)
    return Suggestion.from_row(row, view.task)


async def _training_job(info: Info, key: str) -> Any:
    return TrainingJob.from_row(await training_service.get_job(*info.context.caller, _pk(key)))


async def _dataset(info: Info, key: str) -> Any:
    row, _ = await dataset_service.get_dataset(*info.context.caller, _pk(key))
    return Dataset.from_row(row)


async def _dataset_item(info: Info, key: str) -> Any:
    dataset_key, _, position_text = key.partition(":")
    dataset_id = _pk(dataset_key)
    if not (position_text.isascii() and position_text.isdigit()):
        return None
    position = int(position_text)
    page = await dataset_service.items(
        *info.context.caller, dataset_id, first=1, after=cursors.encode("item", position - 1)
    )
    if not page.items or page.items[0].position != position:
        return None
    return DatasetItem.of(page.items[0])


async def _evaluation(info: Info, key: str) -> Any:
    return Evaluation.of(*await submission_service.get_evaluation(*info.context.caller, _pk(key)))


async def _example(info: Info, key: str) -> Any:
    return Example.from_row(await example_service.get_example(*info.context.caller, _pk(key)))


async def _fork_node(info: Info, key: str) -> Any:
    return _fork(await board_service.get_fork(*info.context.caller, _pk(key)))


async def _snapshot_node(info: Info, key: str) -> Any:
    return _snapshot(await board_service.get_snapshot(*info.context.caller, _pk(key)))


async def _model(info: Info, key: str) -> Any:
    row, privileged = await submission_service.get_model(*info.context.caller, _pk(key))
    return Model.from_row(row, privileged)


async def _round(info: Info, key: str) -> Any:
    return Round.from_row(await task_service.visible_round(*info.context.caller, _pk(key)))


async def _task(info: Info, key: str) -> Any:
    return Task.from_view(await task_service.get_task(*info.context.caller, key))


async def _proposal(info: Info, key: str) -> Any:
    return TaskProposal.from_row(await proposal_service.get_proposal(*info.context.caller, _pk(key)))


async def _user(info: Info, key: str) -> Any:
    return User.from_row(await auth_service.visible_user(*info.context.caller, _pk(key)))


async def _validation(info: Info, key: str) -> Any:
    return Validation.of(*await example_service.get_validation(*info.context.caller, _pk(key)))


async def _webhook(info: Info, key: str) -> Any:
    return Webhook.from_row(await webhook_service.get_webhook(*info.context.caller, _pk(key)))


async def _delivery(info: Info, key: str) -> Any:
    return WebhookDelivery.from_row(await webhook_service.get_delivery(*info.context.caller, key))


#: Every class that implements Node (the schema lists them all, even one no field returns yet).
NODE_CLASSES: tuple[type, ...] = (
    AdversaryRun,
    ApiToken,
    ContextType,
    CrowdStudy,
    Dataset,
    DatasetItem,
    Evaluation,
    Example,
    LeaderboardFork,
    LeaderboardSnapshot,
    Model,
    RegisteredModel,
    Round,
    Suggestion,
    Task,
    TaskProposal,
    TrainingJob,
    User,
    Validation,
    Webhook,
    WebhookDelivery,
)

FETCHERS.update(
    {
        "AdversaryRun": _adversary_run,
        "ApiToken": _api_token,
        "Context": _context,
        "CrowdStudy": _crowd_study,
        "Dataset": _dataset,
        "DatasetItem": _dataset_item,
        "Evaluation": _evaluation,
        "Example": _example,
        "LeaderboardFork": _fork_node,
        "LeaderboardSnapshot": _snapshot_node,
        "Model": _model,
        "RegisteredModel": _registered_model,
        "Round": _round,
        "Suggestion": _suggestion,
        "Task": _task,
        "TaskProposal": _proposal,
        "TrainingJob": _training_job,
        "User": _user,
        "Validation": _validation,
        "Webhook": _webhook,
        "WebhookDelivery": _delivery,
    }
)


async def fetch_node(info: Info, id: object) -> Node | None:
    """The object behind a global id, or None when it names nothing the caller may see (or is not an id)."""
    decoded = decode_global_id(id)
    if decoded is None:
        return None
    type_name, key = decoded
    found: Node | None = await related(info, type_name, key)
    return found


@strawberry.type
class NodeQuery:
    @strawberry.field(
        description="Any object by its global `id`; null when it names nothing you may see (the same rules as the "
        "object's own query) or is not an id this server made."
    )
    async def node(
        self,
        info: Info,
        id: Annotated[
            strawberry.ID, strawberry.argument(description="A global id, as some object's `id` field gave it.")
        ],
    ) -> Node | None:
        return await fetch_node(info, id)

    @strawberry.field(
        description=f"Objects by their global ids, in the order given, null where `node` would answer null; at most "
        f"{MAX_NODES} ids."
    )
    @errors_as_graphql
    async def nodes(
        self,
        info: Info,
        ids: Annotated[
            list[strawberry.ID],
            strawberry.argument(description=f"Global ids, at most {MAX_NODES}; an id may repeat."),
        ],
    ) -> list[Node | None] | None:
        if len(ids) > MAX_NODES:
            raise domain.InvalidInput.from_errors(
                [domain.FieldError("ids", "max_items", f"must hold at most {MAX_NODES} ids; ask in pages")]
            )
        return [await fetch_node(info, i) for i in ids]
