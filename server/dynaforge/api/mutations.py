"""Mutation root: one input object per mutation, a union result of the payload and the expected failures."""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.context import RequestContext
from dynaforge.api.errors import (
    AlreadyExists,
    Forbidden,
    InvalidCredentials,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    RateLimited,
    RoundClosed,
    errors_as_union,
)
from dynaforge.api.node import global_id, parse_id
from dynaforge.api.types.example import Example
from dynaforge.api.types.round import Round
from dynaforge.api.types.user import ApiToken, User
from dynaforge.db.models import User as UserRow
from dynaforge.services import auth as auth_service
from dynaforge.services import contexts as context_service
from dynaforge.services import examples as example_service
from dynaforge.services import tasks as task_service

Info = strawberry.Info[RequestContext]


# --------------------------------------------------------------------------- inputs


@strawberry.input
class RegisterInput:
    username: str
    email: str
    password: str


@strawberry.input
class LoginInput:
    username: str
    password: str


@strawberry.input
class CreateApiTokenInput:
    name: str


@strawberry.input
class RevokeApiTokenInput:
    id: strawberry.ID


@strawberry.input
class CreateExampleInput:
    task_code: str
    fields: JSON = strawberry.field(description="The input, target and metadata fields (see the task's JSON Schema).")
    context_id: strawberry.ID | None = None
    time_taken_ms: int | None = None
    tag: str | None = None


@strawberry.input
class AddContextsInput:
    task_code: str
    contexts: list[JSON] = strawberry.field(description="Each item holds the task's context fields.")
    tag: str | None = None


@strawberry.input
class RetractExampleInput:
    example_id: strawberry.ID


@strawberry.input(description="A model to put in the loop: a registered backend and that backend's configuration.")
class TargetModelInput:
    name: str = strawberry.field(description="Shown to annotators and stored with each prediction.")
    backend: str = strawberry.field(description="A backend the plugins register (the plugins query lists them).")
    config: JSON = strawberry.field(description="The backend's configuration (see docs/model-server.md).")


@strawberry.input
class SetTargetModelsInput:
    task_code: str
    models: list[TargetModelInput] = strawberry.field(description="One model, or the members of an ensemble.")
    ensemble_rule: str = strawberry.field(
        default="majority", description="For an ensemble: majority, any_wrong or all_wrong."
    )


# --------------------------------------------------------------------------- payloads


async def _signed_in(info: Info, user: UserRow, token: str) -> AuthPayload:
    row = await auth_service.token_by_secret(info.context.platform, token)
    assert row is not None  # issued just before, in its own committed transaction
    return AuthPayload(token=token, user=User.from_row(user), api_token=ApiToken.from_row(row))


@strawberry.type(description="Signed in: send `token` as 'Authorization: Bearer <token>'. Shown once.")
class AuthPayload:
    token: str
    user: User
    api_token: ApiToken = strawberry.field(
        description="The token just issued, as it appears in `me { apiTokens }` (`logout` or `revokeApiToken` end it)."
    )


@strawberry.type(description="The token this request was signed with is revoked; sign in again to get another.")
class LoggedOut:
    api_token: ApiToken


@strawberry.type(description="A new API token; `token` is the secret, shown only now.")
class CreatedApiToken:
    token: str
    api_token: ApiToken


@strawberry.type
class RevokedApiToken:
    api_token: ApiToken


@strawberry.type(description="The example was stored with the model's prediction.")
class CreatedExample:
    example: Example
    prediction: JSON
    fooled: bool


@strawberry.type(
    description="The example was stored, but the model did not answer in time; it is predicted later and the "
    "result appears on the example."
)
class PredictionPending:
    example: Example
    message: str


@strawberry.type
class RetractedExample:
    example: Example


@strawberry.type(description="The round's target models were replaced; the next example is judged by them.")
class TargetModelsSet:
    round: Round


@strawberry.type(description="The contexts were added to the task's current round, in the order given.")
class ContextsAdded:
    ids: list[strawberry.ID]


RegisterResult = Annotated[AuthPayload | InvalidInput | AlreadyExists | RateLimited, strawberry.union("RegisterResult")]
LoginResult = Annotated[AuthPayload | InvalidCredentials | RateLimited, strawberry.union("LoginResult")]
CreateApiTokenResult = Annotated[
    CreatedApiToken | InvalidInput | NotAuthenticated | Forbidden | NotFound, strawberry.union("CreateApiTokenResult")
]
LogoutResult = Annotated[LoggedOut | NotAuthenticated, strawberry.union("LogoutResult")]
RevokeApiTokenResult = Annotated[
    RevokedApiToken | InvalidInput | NotAuthenticated | NotFound, strawberry.union("RevokeApiTokenResult")
]
CreateExampleResult = Annotated[
    CreatedExample | PredictionPending | InvalidInput | NotAuthenticated | NotFound | RateLimited | RoundClosed,
    strawberry.union("CreateExampleResult"),
]
RetractExampleResult = Annotated[
    RetractedExample | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union("RetractExampleResult"),
]

SetTargetModelsResult = Annotated[
    TargetModelsSet | InvalidInput | NotAuthenticated | Forbidden | NotFound | RoundClosed,
    strawberry.union("SetTargetModelsResult"),
]
AddContextsResult = Annotated[
    ContextsAdded | InvalidInput | NotAuthenticated | Forbidden | NotFound, strawberry.union("AddContextsResult")
]


@strawberry.type
class Mutation:
    @strawberry.mutation(description="Create an account; returns its first API token.")
    @errors_as_union
    async def register(self, info: Info, input: RegisterInput) -> RegisterResult:
        user, token = await auth_service.register(
            info.context.platform, username=input.username, email=input.email, password=input.password
        )
        return await _signed_in(info, user, token)

    @strawberry.mutation(description="Exchange a username and password for a new API token.")
    @errors_as_union
    async def login(self, info: Info, input: LoginInput) -> LoginResult:
        client = getattr(getattr(info.context.request, "client", None), "host", None)
        user, token = await auth_service.login(
            info.context.platform, username=input.username, password=input.password, client=client
        )
        return await _signed_in(info, user, token)

    @strawberry.mutation(
        description="Revoke the token this request is signed with (the session in use); the user's other tokens stay "
        "valid."
    )
    @errors_as_union
    async def logout(self, info: Info) -> LogoutResult:
        row = await auth_service.logout(*info.context.caller, info.context.token)
        return LoggedOut(api_token=ApiToken.from_row(row))

    @strawberry.mutation(description="Create another API token for yourself (shown once).")
    @errors_as_union
    async def create_api_token(self, info: Info, input: CreateApiTokenInput) -> CreateApiTokenResult:
        row, token = await auth_service.create_token(*info.context.caller, name=input.name)
        return CreatedApiToken(token=token, api_token=ApiToken.from_row(row))

    @strawberry.mutation(description="Revoke one of your API tokens; it stops working at once.")
    @errors_as_union
    async def revoke_api_token(self, info: Info, input: RevokeApiTokenInput) -> RevokeApiTokenResult:
        row = await auth_service.revoke_token(*info.context.caller, parse_id(input.id, "id", "ApiToken"))
        return RevokedApiToken(api_token=ApiToken.from_row(row))

    @strawberry.mutation(description="Write an example: the target model predicts and the server decides `fooled`.")
    @errors_as_union
    async def create_example(self, info: Info, input: CreateExampleInput) -> CreateExampleResult:
        outcome = await example_service.submit(
            *info.context.caller,
            task_code=input.task_code,
            fields=input.fields,
            context_id=None if input.context_id is None else parse_id(input.context_id, "contextId", "Context"),
            time_taken_ms=input.time_taken_ms,
            tag=input.tag,
        )
        example = Example.from_row(outcome.example)
        if outcome.pending_reason is not None:
            return PredictionPending(example=example, message=outcome.pending_reason)
        # Predicted: the example has its prediction and its verdict.
        return CreatedExample(
            example=example, prediction=JSON(outcome.example.prediction), fooled=bool(outcome.example.fooled)
        )

    @strawberry.mutation(description="Withdraw one of your examples before it is accepted or rejected.")
    @errors_as_union
    async def retract_example(self, info: Info, input: RetractExampleInput) -> RetractExampleResult:
        row = await example_service.retract(*info.context.caller, parse_id(input.example_id, "exampleId", "Example"))
        return RetractedExample(example=Example.from_row(row))

    @strawberry.mutation(description="Task owners and admins add contexts to the current round (all or nothing).")
    @errors_as_union
    async def add_contexts(self, info: Info, input: AddContextsInput) -> AddContextsResult:
        ids = await context_service.add_contexts(
            *info.context.caller, input.task_code, list(input.contexts), tag=input.tag
        )
        return ContextsAdded(ids=[global_id("Context", i) for i in ids])

    @strawberry.mutation(
        description="Task owners and admins set the open round's target: one model or an ensemble with a rule. "
        "Backends and configurations are checked before anything changes; the model loads on first use."
    )
    @errors_as_union
    async def set_target_models(self, info: Info, input: SetTargetModelsInput) -> SetTargetModelsResult:
        row = await task_service.set_target_models(
            *info.context.caller,
            input.task_code,
            [{"name": m.name, "backend": m.backend, "config": m.config} for m in input.models],
            input.ensemble_rule,
        )
        return TargetModelsSet(round=Round.from_row(row))
