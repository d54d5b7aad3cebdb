"""Mutation root: one input object per mutation, a union result of the payload and the expected failures."""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.context import Info
from dynaforge.api.enums import EnsembleRule, VerdictSource, raw
from dynaforge.api.errors import (
    AlreadyExists,
    Conflict,
    Forbidden,
    InvalidCredentials,
    InvalidInput,
    NearDuplicate,
    NotAuthenticated,
    NotFound,
    QuotaExceeded,
    RateLimited,
    RoundClosed,
    errors_as_union,
)
from dynaforge.api.node import global_id, parse_id
from dynaforge.api.types.example import Example
from dynaforge.api.types.prediction import Prediction
from dynaforge.api.types.round import Round
from dynaforge.api.types.user import ApiToken, User
from dynaforge.db.models import User as UserRow
from dynaforge.services import auth as auth_service
from dynaforge.services import contexts as context_service
from dynaforge.services import examples as example_service
from dynaforge.services import tasks as task_service
from dynaforge.services import verdicts as verdict_service

# --------------------------------------------------------------------------- inputs


@strawberry.input(description="A new account: every field is checked, and each broken rule is reported.")
class RegisterInput:
    username: str = strawberry.field(
        description="The public name: 3 to 40 letters, digits, '_', '.' or '-'; refused when another account has "
        "it in any case."
    )
    email: str = strawberry.field(
        description="An email address such as name@example.org, at most 254 characters; stored in lower case. "
        "Never checked against other accounts' (an address already given is accepted, and no answer says so). "
        "Only the user and admins can read it."
    )
    password: str = strawberry.field(description="8 to 256 characters; only a hash of it is stored.")


@strawberry.input(description="The credentials of an existing account.")
class LoginInput:
    username: str = strawberry.field(description="The account's username, in any case.")
    password: str = strawberry.field(description="The account's password.")


@strawberry.input(description="The label of a new API token for yourself.")
class CreateApiTokenInput:
    name: str = strawberry.field(
        description="A label to recognise the token by (the script or machine that uses it): 1 to 100 characters, "
        "spaces around it removed."
    )


@strawberry.input(description="The API token to revoke.")
class RevokeApiTokenInput:
    id: strawberry.ID = strawberry.field(
        description="The token's id (ApiToken.id, as in me { apiTokens { id } }): one of yours, or anyone's for "
        "an admin."
    )


@strawberry.input(description="An example to write in the task's current round.")
class CreateExampleInput:
    task_code: str = strawberry.field(description="The code of the task to write for (Task.code).")
    fields: JSON = strawberry.field(description="The input, target and metadata fields (see the task's JSON Schema).")
    context_id: strawberry.ID | None = strawberry.field(
        default=None,
        description="The id of the context written against (from nextContext); it must belong to this task's "
        "current round. Null when the task takes no contexts, or when `fields` holds the context fields too.",
    )
    time_taken_ms: int | None = strawberry.field(
        default=None,
        description="How long the annotator took to write the example, in milliseconds (0 to one week); optional, "
        "stored for analysis.",
    )
    tag: str | None = strawberry.field(
        default=None,
        description="An optional label of at most 100 characters (for example the tag of the context used); with "
        "the task's oneExamplePerTag setting a validator is served at most one example per tag.",
    )
    suggestion_id: strawberry.ID | None = strawberry.field(
        default=None,
        description="The suggestion (suggestEdits) you wrote it from, if any: it then counts as ASSISTED and records "
        "the adversary. Yours, for this round and context.",
    )
    reply_stream: str | None = strawberry.field(
        default=None,
        description="Your stream id (8 to 64 letters, digits, '-' or '_'; a random UUID will do), already followed "
        "with the replyStream subscription: the target's reply is published there as it is written. Optional; "
        "the answer is the same with or without it.",
    )
    allow_near_duplicate: bool = strawberry.field(
        default=False,
        description="Store the example even when it is close to an earlier fooling example of the round (the "
        "answer was NearDuplicate): it is stored with that example and the similarity beside it "
        "(Example.nearDuplicate), for validators and owners to see.",
    )


@strawberry.input(description="Contexts to add to the task's current round, all or nothing.")
class AddContextsInput:
    task_code: str = strawberry.field(description="The code of the task (Task.code).")
    contexts: list[JSON] = strawberry.field(
        description="1 to 1000 objects, each holding the task's context fields (those with role CONTEXT). If one is "
        "wrong none is added, and each problem is named by its position ('contexts[3].passage')."
    )
    tag: str | None = strawberry.field(
        default=None,
        description="A tag, 1 to 100 characters, given to every context added: nextContext(tag:) then serves only "
        "contexts with that tag. Null: the contexts have no tag.",
    )


@strawberry.input(description="The example to retract.")
class RetractExampleInput:
    id: strawberry.ID = strawberry.field(description="The id of the example (Example.id).")


@strawberry.input(description="An owner's verdict on a judged example, against the judge's.")
class OverruleVerdictInput:
    id: strawberry.ID = strawberry.field(description="The id of the example (Example.id).")
    fooled: bool = strawberry.field(description="Whether the example fooled the model, as the owner decides.")
    reason: str = strawberry.field(description="Why, in 1 to 2000 characters (kept beside the judge's rationale).")


@strawberry.input(description="A model to put in the loop: a registered backend and that backend's configuration.")
class TargetModelInput:
    name: str = strawberry.field(
        description="1 to 100 characters, distinct within the round; shown to annotators and stored with each "
        "prediction."
    )
    backend: str = strawberry.field(description="A backend the plugins register (the plugins query lists them).")
    config: JSON = strawberry.field(description="The backend's configuration (see docs/model-server.md).")


@strawberry.input(description="The target model(s) of a task's open round.")
class SetTargetModelsInput:
    task_code: str = strawberry.field(description="The code of the task (Task.code).")
    models: list[TargetModelInput] = strawberry.field(
        description="One model, or the members of an ensemble: 1 to 7 models with distinct names."
    )
    ensemble_rule: EnsembleRule = strawberry.field(
        default=EnsembleRule.MAJORITY, description="How an ensemble decides (ignored for one model)."
    )


# --------------------------------------------------------------------------- payloads


async def signed_in(info: Info, user: UserRow, token: str) -> AuthPayload:
    row = await auth_service.token_by_secret(info.context.platform, token)
    assert row is not None  # issued just before, in its own committed transaction
    return AuthPayload(token=token, user=User.from_row(user), api_token=ApiToken.from_row(row))


@strawberry.type(description="Signed in: send `token` as 'Authorization: Bearer <token>'. Shown once.")
class AuthPayload:
    token: str = strawberry.field(
        description="The new API token's secret (it starts with 'dfk_'). Shown only in this answer: no query can "
        "read it again."
    )
    user: User = strawberry.field(description="The account now signed in.")
    api_token: ApiToken = strawberry.field(
        description="The token just issued, as it appears in `me { apiTokens }` (`logout` or `revokeApiToken` end it)."
    )


@strawberry.type(description="The token this request was signed with is revoked; sign in again to get another.")
class LoggedOut:
    api_token: ApiToken = strawberry.field(description="The token that was revoked (its `revoked` is now true).")


@strawberry.type(description="A new API token; `token` is the secret, shown only now.")
class ApiTokenCreated:
    token: str = strawberry.field(
        description="The secret, to send as 'Authorization: Bearer <token>'. Shown only in this answer: no query "
        "can read it again."
    )
    api_token: ApiToken = strawberry.field(description="The token as it appears in me { apiTokens }.")


@strawberry.type(
    description="The token is revoked: it signs no one in any more (a request sent with it is anonymous, and what "
    "needs a user answers NotAuthenticated, saying why). Revoking it again changes nothing."
)
class ApiTokenRevoked:
    api_token: ApiToken = strawberry.field(description="The token, now with `revoked: true`.")


@strawberry.type(description="Every token of the account was revoked, the one that signed this request included.")
class AllApiTokensRevoked:
    count: int = strawberry.field(description="How many live tokens were revoked.")


@strawberry.type(description="The example was stored with the model's prediction.")
class ExampleCreated:
    example: Example = strawberry.field(description="The stored example, in status CREATED.")
    prediction: Prediction = strawberry.field(description="The target model's answer (an ensemble's verdict).")
    fooled: bool = strawberry.field(description="Whether the example fooled the target model.")


@strawberry.type(
    description="The example was stored, but the model did not answer (it failed, was too slow or gave an unusable "
    "output); the server asks it again later and the result appears on the example."
)
class PredictionPending:
    example: Example = strawberry.field(
        description="The stored example, in status PENDING_PREDICTION: its prediction and `fooled` are null until "
        "the model answers."
    )
    message: str = strawberry.field(description="Why the model did not answer, as the server saw it.")


@strawberry.type(
    description="The example was stored and the model answered, but whether it fooled the model is not decided yet: "
    "the task's judge model decides in a moment, or (PEOPLE) its validators vote on the model's output. The "
    "verdictDecided subscription brings the verdict; until then the example counts for nothing."
)
class VerdictPending:
    example: Example = strawberry.field(description="The stored example, in status PENDING_VERDICT (`fooled` null).")
    prediction: Prediction = strawberry.field(description="The target model's answer, as it wrote it.")
    decided_by: VerdictSource = strawberry.field(description="Who decides: JUDGE or PEOPLE.")


@strawberry.type(description="The owner's verdict stands: the counters moved with it.")
class VerdictOverruled:
    example: Example = strawberry.field(description="The example, with `fooled` as the owner decided.")


@strawberry.type(
    description="The example is withdrawn: it leaves the validators' queue and counts as retracted. Retracting it "
    "again changes nothing."
)
class ExampleRetracted:
    example: Example = strawberry.field(description="The example, now in status RETRACTED.")


@strawberry.type(description="The round's target models were replaced; the next example is judged by them.")
class TargetModelsSet:
    round: Round = strawberry.field(description="The open round, with its new target models and ensemble rule.")


@strawberry.type(description="The contexts were added to the task's current round, in the order given.")
class ContextsAdded:
    ids: list[strawberry.ID] = strawberry.field(
        description="The new contexts' ids (Context.id), in the order the contexts were given."
    )


RegisterResult = Annotated[
    AuthPayload | InvalidInput | AlreadyExists | RateLimited,
    strawberry.union(
        "RegisterResult",
        description="AuthPayload: the account was created and is signed in. The other members are the expected "
        "failures: InvalidInput (the username, email or password breaks a rule), AlreadyExists (the username is "
        "taken; whether an email address is used is never said), RateLimited (too many accounts registered from the "
        "caller's address, or the server is busy hashing passwords: wait retryAfterSeconds).",
    ),
]
LoginResult = Annotated[
    AuthPayload | InvalidCredentials | RateLimited,
    strawberry.union(
        "LoginResult",
        description="AuthPayload: signed in with a new token. The other members are the expected failures: "
        "InvalidCredentials (unknown username, wrong password or a disabled account, never told apart), "
        "RateLimited (too many attempts on this account or from this address in the last minute, or the server is "
        "busy checking passwords: wait retryAfterSeconds).",
    ),
]
CreateApiTokenResult = Annotated[
    ApiTokenCreated | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "CreateApiTokenResult",
        description="ApiTokenCreated: the token was issued. The other members are the expected failures: "
        "InvalidInput (a name of the wrong length), NotAuthenticated (no valid token sent). Forbidden and NotFound "
        "are part of the contract but not returned at present.",
    ),
]
LogoutResult = Annotated[
    LoggedOut | NotAuthenticated,
    strawberry.union(
        "LogoutResult",
        description="LoggedOut: the token of this request is revoked. NotAuthenticated, the expected failure: the "
        "request carried no valid token.",
    ),
]
RevokeApiTokenResult = Annotated[
    ApiTokenRevoked | InvalidInput | NotAuthenticated | NotFound,
    strawberry.union(
        "RevokeApiTokenResult",
        description="ApiTokenRevoked: the token is revoked. The other members are the expected failures: "
        "InvalidInput (the id is not an ApiToken's), NotAuthenticated (no valid token sent), NotFound (no such token "
        "of yours).",
    ),
]
RevokeAllApiTokensResult = Annotated[
    AllApiTokensRevoked | NotAuthenticated,
    strawberry.union(
        "RevokeAllApiTokensResult",
        description="AllApiTokensRevoked: signed out everywhere. NotAuthenticated: no valid token was sent.",
    ),
]
CreateExampleResult = Annotated[
    ExampleCreated
    | PredictionPending
    | VerdictPending
    | InvalidInput
    | NotAuthenticated
    | Forbidden
    | NotFound
    | RateLimited
    | QuotaExceeded
    | RoundClosed
    | NearDuplicate,
    strawberry.union(
        "CreateExampleResult",
        description="Three members mean the example was stored: ExampleCreated (the model answered and the verdict "
        "is in), PredictionPending (the model answers later) and VerdictPending (the model answered; the task's "
        "judge or validators decide whether it was fooled). The other members are the expected failures, and "
        "store nothing: InvalidInput (the fields break the task's rules, a context of an earlier round, a tag or "
        "time out of range), NotAuthenticated, Forbidden (the task's tutorial must be passed first: "
        "Task.tutorial), NotFound (no such task you can see, or the context is not the "
        "task's), RateLimited (too many examples this minute), QuotaExceeded (the task's daily cap reached), "
        "RoundClosed (the task is inactive or its round is closed), NearDuplicate (it fooled the model but is close "
        "to an earlier fooling example of the round: change it, or send it with allowNearDuplicate).",
    ),
]
OverruleVerdictResult = Annotated[
    VerdictOverruled | InvalidInput | NotAuthenticated | Forbidden | NotFound | Conflict,
    strawberry.union(
        "OverruleVerdictResult",
        description="VerdictOverruled: the owner's verdict stands. The other members are the expected failures: "
        "InvalidInput (no reason, or the id is not an Example's), NotAuthenticated, Forbidden (you are not an owner "
        "of its task or an admin), NotFound, Conflict (no judge's verdict to overrule yet, or it was retracted).",
    ),
]
RetractExampleResult = Annotated[
    ExampleRetracted | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "RetractExampleResult",
        description="ExampleRetracted: the example is withdrawn. The other members are the expected failures: "
        "InvalidInput (the id is not an Example's), NotAuthenticated, Forbidden (you are not its author, an owner "
        "of its task or an admin, or it is already accepted or rejected), NotFound (no such example).",
    ),
]

SetTargetModelsResult = Annotated[
    TargetModelsSet | InvalidInput | NotAuthenticated | Forbidden | NotFound | RoundClosed,
    strawberry.union(
        "SetTargetModelsResult",
        description="TargetModelsSet: the open round has its new target. The other members are the expected "
        "failures, and change nothing: InvalidInput (an unknown backend, a configuration the backend refuses, "
        "repeated names, no or too many models), NotAuthenticated, Forbidden (not an owner of the task or an "
        "admin), NotFound (no such task you can see), RoundClosed (the current round is closed: open the next).",
    ),
]
AddContextsResult = Annotated[
    ContextsAdded | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "AddContextsResult",
        description="ContextsAdded: every context was added. The other members are the expected failures, and add "
        "none: InvalidInput (the task takes no contexts, too few or too many, a bad tag, a context breaking the "
        "task's rules), NotAuthenticated, Forbidden (not an owner of the task or an admin), NotFound (no such task "
        "you can see, or it has no round yet).",
    ),
]


def client_address(info: Info) -> str | None:
    """The caller's address, as the ASGI server reports it (behind a proxy: what its forwarded headers say)."""
    return getattr(getattr(info.context.request, "client", None), "host", None)


@strawberry.type
class Mutation:
    @strawberry.mutation(
        description="Anyone may create an account (never an admin one); the answer signs it in with its first API "
        "token, named 'registration'. At most 20 accounts an hour per client address unless the server is "
        "configured otherwise (RateLimited)."
    )
    @errors_as_union
    async def register(
        self, info: Info, input: Annotated[RegisterInput, strawberry.argument(description="The new account.")]
    ) -> RegisterResult:
        user, token = await auth_service.register(
            info.context.platform,
            username=input.username,
            email=input.email,
            password=input.password,
            client=client_address(info),
        )
        return await signed_in(info, user, token)

    @strawberry.mutation(
        description="Exchange a username and password for a new API token, named 'login' (the account's other "
        "tokens stay valid). Failed attempts are limited per account and client address together, and all attempts "
        "per client address, 10 and 30 a minute unless the server is configured otherwise (RateLimited)."
    )
    @errors_as_union
    async def login(
        self, info: Info, input: Annotated[LoginInput, strawberry.argument(description="The credentials.")]
    ) -> LoginResult:
        user, token = await auth_service.login(
            info.context.platform, username=input.username, password=input.password, client=client_address(info)
        )
        return await signed_in(info, user, token)

    @strawberry.mutation(
        description="Signed-in users revoke the token this request is signed with (the session in use); their other "
        "tokens stay valid."
    )
    @errors_as_union
    async def logout(self, info: Info) -> LogoutResult:
        row = await auth_service.logout(*info.context.caller, info.context.token)
        return LoggedOut(api_token=ApiToken.from_row(row))

    @strawberry.mutation(
        description="Signed-in users create another API token for themselves (for a script, say); its secret is "
        "shown once."
    )
    @errors_as_union
    async def create_api_token(
        self, info: Info, input: Annotated[CreateApiTokenInput, strawberry.argument(description="The token's label.")]
    ) -> CreateApiTokenResult:
        row, token = await auth_service.create_token(*info.context.caller, name=input.name)
        return ApiTokenCreated(token=token, api_token=ApiToken.from_row(row))

    @strawberry.mutation(
        description="Revoke one of your API tokens (admins: anyone's); it stops working at once on this server "
        "process, and within the cache lifetime (2 seconds by default) on the others."
    )
    @errors_as_union
    async def revoke_api_token(
        self,
        info: Info,
        input: Annotated[RevokeApiTokenInput, strawberry.argument(description="The token to revoke.")],
    ) -> RevokeApiTokenResult:
        row = await auth_service.revoke_token(*info.context.caller, parse_id(input.id, "id", "ApiToken"))
        return ApiTokenRevoked(api_token=ApiToken.from_row(row))

    @strawberry.mutation(
        description="Signed-in users revoke every one of their API tokens, the one in use included: sign out "
        "everywhere (after a token leaked, say). Sign in again with login."
    )
    @errors_as_union
    async def revoke_all_api_tokens(self, info: Info) -> RevokeAllApiTokensResult:
        return AllApiTokensRevoked(count=await auth_service.revoke_all_tokens(*info.context.caller))

    @strawberry.mutation(
        description="Signed-in users write an example in the task's open round: the target model predicts and the "
        "server decides `fooled`. When the model cannot answer, the example is stored anyway and predicted later. "
        "Limited per user and task: examples per minute (30 unless configured otherwise) and the task's "
        "dailyExampleCap."
    )
    @errors_as_union
    async def create_example(
        self, info: Info, input: Annotated[CreateExampleInput, strawberry.argument(description="The example.")]
    ) -> CreateExampleResult:
        outcome = await example_service.submit(
            *info.context.caller,
            task_code=input.task_code,
            fields=input.fields,
            context_id=None if input.context_id is None else parse_id(input.context_id, "contextId", "Context"),
            time_taken_ms=input.time_taken_ms,
            tag=input.tag,
            suggestion_id=None
            if input.suggestion_id is None
            else parse_id(input.suggestion_id, "suggestionId", "Suggestion"),
            reply_stream=input.reply_stream,
            allow_near_duplicate=input.allow_near_duplicate,
        )
        example = Example.from_row(outcome.example, task_code=input.task_code)
        if outcome.pending_reason is not None:
            return PredictionPending(example=example, message=outcome.pending_reason)
        if outcome.verdict_by is not None:
            return VerdictPending(
                example=example,
                prediction=Prediction.of(
                    outcome.example.prediction or {}, info.context.platform.plugins.task(input.task_code)
                ),
                decided_by=VerdictSource(outcome.verdict_by),
            )
        # Predicted: the example has its prediction and its verdict.
        return ExampleCreated(
            example=example,
            prediction=Prediction.of(
                outcome.example.prediction or {}, info.context.platform.plugins.task(input.task_code)
            ),
            fooled=bool(outcome.example.fooled),
        )

    @strawberry.mutation(
        description="Withdraw an example before it is accepted or rejected (while pending, created or flagged): "
        "its author, the task's owners and admins."
    )
    @errors_as_union
    async def retract_example(
        self,
        info: Info,
        input: Annotated[RetractExampleInput, strawberry.argument(description="The example to retract.")],
    ) -> RetractExampleResult:
        row = await example_service.retract(*info.context.caller, parse_id(input.id, "id", "Example"))
        return ExampleRetracted(example=Example.from_row(row))

    @strawberry.mutation(
        description="A task's owners and admins overrule its judge: set whether a judged example fooled the model. "
        "The counters move with it; the judge's verdict and rationale stay beside the owner's (Example.verdict); "
        "verdictDecided is announced, and modelFooled when it now fools the model."
    )
    @errors_as_union
    async def overrule_verdict(
        self,
        info: Info,
        input: Annotated[OverruleVerdictInput, strawberry.argument(description="The example and the verdict.")],
    ) -> OverruleVerdictResult:
        row = await verdict_service.overrule(
            *info.context.caller, parse_id(input.id, "id", "Example"), input.fooled, input.reason
        )
        return VerdictOverruled(example=Example.from_row(row))

    @strawberry.mutation(description="Task owners and admins add contexts to the current round (all or nothing).")
    @errors_as_union
    async def add_contexts(
        self, info: Info, input: Annotated[AddContextsInput, strawberry.argument(description="The contexts to add.")]
    ) -> AddContextsResult:
        ids = await context_service.add_contexts(
            *info.context.caller, input.task_code, list(input.contexts), tag=input.tag
        )
        return ContextsAdded(ids=[global_id("Context", i) for i in ids])

    @strawberry.mutation(
        description="Task owners and admins set the open round's target: one model or an ensemble with a rule. "
        "Backends and configurations are checked before anything changes; the model loads on first use."
    )
    @errors_as_union
    async def set_target_models(
        self,
        info: Info,
        input: Annotated[SetTargetModelsInput, strawberry.argument(description="The task and its new target.")],
    ) -> SetTargetModelsResult:
        row = await task_service.set_target_models(
            *info.context.caller,
            input.task_code,
            [{"name": m.name, "backend": m.backend, "config": m.config} for m in input.models],
            raw(input.ensemble_rule),
        )
        return TargetModelsSet(round=Round.from_row(row))
