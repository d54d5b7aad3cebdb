"""The asynchronous client: :class:`AsyncClient`. :class:`dynaforge_client.Client` is the same surface, blocking."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import json
import uuid
import warnings
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit, urlunsplit

import httpx

from . import errors
from ._generated import GeneratedClient, Upload
from ._generated.adversaries import AdversariesTaskAdversaries
from ._generated.answer_tutorial import AnswerTutorialAnswerTutorialTutorialAnswered
from ._generated.crowd_study import CrowdStudyNodeCrowdStudy
from ._generated.dataset_items import DatasetItemsDatasetItemsNodes
from ._generated.enums import ContextStrategy, LeaderboardSort, TimeBucket, ValidationLabel, ValidationMode
from ._generated.evaluation_progress import EvaluationProgressEvaluationProgress
from ._generated.exceptions import GraphQLClientGraphQLMultiError
from ._generated.fragments import (
    AdversaryRunFields,
    CrowdPlatformFields,
    CrowdStudyFields,
    DatasetFields,
    ExampleFields,
    ModelFields,
    RoundFields,
    TaskFields,
    TutorialFields,
    UserFields,
    ValidatorQualityFields,
)
from ._generated.input_types import (
    AnswerTutorialInput,
    CancelGenerationInput,
    CreateCrowdStudyInput,
    CreateExampleInput,
    CreateRoundDatasetsInput,
    CrowdBonusInput,
    GenerateCandidatesInput,
    LoginInput,
    ModelCardInput,
    OverruleVerdictInput,
    PayCrowdBonusesInput,
    RecordCrowdBonusesInput,
    RegisterInput,
    RestartTutorialInput,
    SetCrowdStudyOpenInput,
    SetValidatorWeightsInput,
    SubmitModelInput,
    SubmitPredictionsInput,
    SuggestEditsInput,
    UploadModelInput,
    ValidateExampleInput,
    ValidatorWeightInput,
    WeightInput,
    WithdrawValidationInput,
)
from ._generated.my_stats import MyStatsTaskViewerStats
from ._generated.next_context import NextContextNextContext
from ._generated.paired_test import PairedTestTaskPairedTest
from ._generated.pay_crowd_bonuses import PayCrowdBonusesPayCrowdBonusesCrowdBonusesPaid
from ._generated.record_crowd_bonuses import RecordCrowdBonusesRecordCrowdBonusesCrowdBonusesRecorded
from ._generated.round_analytics import RoundAnalyticsTaskRoundAnalytics
from ._generated.suggest_edits import SuggestEditsSuggestEditsEditsSuggested
from ._generated.task import TaskTask
from ._transport import call, unwrap
from .archive import ProgressReader, pack_folder
from .events import EventStream
from .results import Leaderboard, ModelResults

Progress = Callable[[int, int], object]  # (bytes done, bytes in all)


class _Api(GeneratedClient):
    """The generated client, reading a subscription's errors in a ``next`` message too (graphql-transport-ws sends
    an execution error as ``next`` with ``errors`` and then ``complete``; the generated client would drop them and
    see the connection end)."""

    async def _handle_ws_message(
        self, message: Any, websocket: Any, expected_type: Any = None
    ) -> dict[str, Any] | None:
        try:
            parsed = json.loads(message)
        except (TypeError, ValueError):
            parsed = None
        if isinstance(parsed, dict) and parsed.get("type") == "next":
            payload = parsed.get("payload") or {}
            if payload.get("errors"):
                raise GraphQLClientGraphQLMultiError.from_errors_dicts(
                    errors_dicts=payload["errors"], data=payload.get("data")
                )
        return await super()._handle_ws_message(message, websocket, expected_type)


_REPLY_STREAM_OPEN_S = 5.0  # how long create_example(on_reply=) waits for its stream to open (and to end)


_Event = TypeVar("_Event")


def _subscription(iterator: AsyncIterator[_Event]) -> AsyncGenerator[_Event, None]:
    """A subscription of the generated client: an async generator (typed as an iterator there), closed with
    ``aclose()`` where it is read, so that its connection never waits for the garbage collector."""
    return cast(AsyncGenerator[_Event, None], iterator)


def _urls(url: str) -> tuple[str, str, str]:
    """The server's base address, its GraphQL endpoint and its websocket endpoint, from either of the first two."""
    parts = urlsplit(url.rstrip("/"))
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"the server's address must start with http:// or https://, not {url!r}")
    path = parts.path.removesuffix("/graphql")
    base = urlunsplit((parts.scheme, parts.netloc, path, "", ""))
    ws_scheme = "wss" if parts.scheme == "https" else "ws"
    return base, f"{base}/graphql", urlunsplit((ws_scheme, parts.netloc, f"{path}/graphql", "", ""))


def _card(card: Mapping[str, Any] | ModelCardInput | None) -> ModelCardInput | None:
    if card is None or isinstance(card, ModelCardInput):
        return card
    return ModelCardInput.model_validate(dict(card))


def _weights(weights: Mapping[str, float] | None) -> list[WeightInput] | None:
    if weights is None:
        return None
    return [WeightInput(name=name, weight=float(value)) for name, value in weights.items()]


def _id(value: Any) -> str:
    """An object's id: the object's ``id`` attribute, or the id itself."""
    return str(getattr(value, "id", value))


class AsyncClient:
    """A Dynaforge server, asynchronously. Use it as ``async with AsyncClient(url, token) as client:``.

    ``url`` is the server's address (``http://127.0.0.1:8000``; its ``/graphql`` endpoint is accepted too). ``token``
    is an API token (``dynaforge tokens create``, the web app, or :meth:`login`). Queries are retried ``retries``
    times on connection problems and on 429/502/503/504; mutations only when the connection could not be opened.
    Failures the server reports are raised as :mod:`dynaforge_client.errors` exceptions.
    """

    def __init__(
        self,
        url: str = "http://127.0.0.1:8000",
        token: str | None = None,
        *,
        timeout: float = 60.0,
        retries: int = 3,
        http_client: httpx.AsyncClient | None = None,
    ):
        self.base_url, self.graphql_url, self.ws_url = _urls(url)
        self.retries = retries
        #: why the last export read held no example (the server's X-Dynaforge-Export-Note), None when it held some
        self.last_export_note: str | None = None
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._api = _Api(url=self.graphql_url, http_client=cast(Any, self._http), ws_url=self.ws_url)
        self.token = token

    @property
    def token(self) -> str | None:
        """The API token requests are signed with (None: anonymous)."""
        return self._token

    @token.setter
    def token(self, value: str | None) -> None:
        self._token = value
        if value:
            self._http.headers["Authorization"] = f"Bearer {value}"
            self._api.ws_connection_init_payload = {"authorization": f"Bearer {value}"}
        else:
            self._http.headers.pop("Authorization", None)
            self._api.ws_connection_init_payload = None

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def _read(self, factory: Callable[[], Any]) -> Any:
        return await call(factory, read=True, retries=self.retries)

    async def _write(self, factory: Callable[[], Any]) -> Any:
        return await call(factory, read=False, retries=self.retries)

    # -- accounts ----------------------------------------------------------------------------------------------

    async def login(self, username: str, password: str) -> UserFields:
        """Sign in with a password; the client then uses the new API token (:attr:`token`). Returns the user."""
        result = await self._write(lambda: self._api.login(LoginInput(username=username, password=password)))
        payload = unwrap(result.login, "AuthPayload")
        self.token = payload.token
        return payload.user

    async def register(self, username: str, email: str, password: str) -> UserFields:
        """Create an account and sign in with it. Returns the user."""
        result = await self._write(
            lambda: self._api.register(RegisterInput(username=username, email=email, password=password))
        )
        payload = unwrap(result.account, "AuthPayload")
        self.token = payload.token
        return payload.user

    async def me(self) -> UserFields | None:
        """The signed-in user, or None without a token. A token that signs nobody in (not valid, revoked, expired)
        raises NotAuthenticated: the server answers such requests as anonymous ones, so this is the way to check."""
        user = (await self._read(self._api.me)).me
        if user is None and self.token:
            raise errors.NotAuthenticated("the client's API token does not sign anyone in: it is not valid, revoked "
                                          "or expired; sign in again (login) or create a new one")  # fmt: skip
        return user

    # -- tasks and rounds --------------------------------------------------------------------------------------

    async def tasks(self) -> list[TaskFields]:
        """Every task you can see."""
        return list((await self._read(self._api.tasks)).tasks)

    async def task(self, code: str) -> TaskTask:
        """One task, with its rounds; NotFound when there is none you can see."""
        task = (await self._read(lambda: self._api.task(code))).task
        if task is None:
            raise errors.NotFound(f"no task {code!r} that you can see")
        return task

    async def round(self, task: str, number: int | None = None) -> RoundFields:
        """A round of a task (default: the current one), with its statistics."""
        found = (await self._read(lambda: self._api.round(task, number))).round
        if found is None:
            raise errors.NotFound(f"task {task!r} has no round {number if number is not None else '(current)'}")
        return found

    async def stats(self, task: str) -> MyStatsTaskViewerStats:
        """Your own statistics on a task: per round and in all, and how many examples you may still write today."""
        found = (await self._read(lambda: self._api.my_stats(task))).task
        if found is None or found.viewer_stats is None:
            raise errors.NotFound(f"no task {task!r} that you can see")
        return found.viewer_stats

    async def datasets(self, task: str) -> list[DatasetFields]:
        """The task's data sets you can see (scoring sets, round splits, uploads)."""
        out: list[DatasetFields] = []
        after = None
        while True:
            found = (await self._read(functools.partial(self._api.datasets, task, after=after))).task
            page = None if found is None else found.datasets
            if page is None:
                raise errors.NotFound(f"no task {task!r} that you can see")
            out.extend(page.nodes)
            if not page.page_info.has_next_page:
                return out
            after = page.page_info.end_cursor

    async def dataset_items(self, dataset: Any) -> list[DatasetItemsDatasetItemsNodes]:
        """A data set's items in order (``position``, ``fields``; gold targets only where you may see them): what
        :meth:`upload_predictions` follows, one prediction per item."""
        out: list[DatasetItemsDatasetItemsNodes] = []
        after = None
        while True:
            page = (
                await self._read(functools.partial(self._api.dataset_items, _id(dataset), after=after))
            ).dataset_items
            if page is None:
                raise errors.NotFound(f"no data set {_id(dataset)} that you can see")
            out.extend(page.nodes)
            if not page.page_info.has_next_page:
                return out
            after = page.page_info.end_cursor

    async def create_round_datasets(self, task: str, round: int, *, seed: int = 0) -> list[DatasetFields]:
        """Owners turn a round's accepted examples into train, dev and test data sets (a seeded split; the test set
        scores models). Returns the new data sets."""
        data = CreateRoundDatasetsInput(task_code=task, round=round, seed=seed)
        result = await self._write(lambda: self._api.create_round_datasets(data))
        return list(unwrap(result.create_round_datasets, "DatasetsCreated").datasets)

    async def execute(self, query: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Any GraphQL operation the surface does not cover, as a dict of its ``data``; errors are raised typed. A
        ``mutation`` is sent once (retried only when the connection never opened), anything else retried as reads
        are. Result unions are returned as they are: check their ``__typename``."""
        is_write = query.lstrip().startswith("mutation")

        async def send() -> dict[str, Any]:
            response = await self._api.execute(query=query, variables=dict(variables or {}))
            return self._api.get_data(response)

        return await call(send, read=not is_write, retries=self.retries)

    # -- writing and validating examples -----------------------------------------------------------------------

    async def next_context(
        self, task: str, *, tag: str | None = None, strategy: str | ContextStrategy | None = None
    ) -> NextContextNextContext | None:
        """A context of the current round to write against; NotFound when the round has none (tasks without contexts,
        such as sentiment, take examples without one)."""
        chosen = ContextStrategy(strategy) if strategy is not None else None
        return (await self._read(lambda: self._api.next_context(task, tag=tag, strategy=chosen))).next_context

    async def create_example(
        self,
        task: str,
        fields: Mapping[str, Any],
        *,
        context: Any = None,
        tag: str | None = None,
        time_taken_ms: int | None = None,
        suggestion: Any = None,
        on_reply: Callable[[str], None] | None = None,
        allow_near_duplicate: bool = False,
    ) -> ExampleFields:
        """Write an example in the task's open round. The target model predicts at once: the returned example's
        ``fooled`` and ``prediction`` say how it went (both None while the prediction is pending; ``fooled`` None
        and ``status`` PENDING_VERDICT while the task's judge model or its validators decide, see ``verdict``;
        ``prediction.generation`` holds a writing model's raw reply, tokens and time to first token). ``suggestion``:
        the suggestion (from :meth:`suggest_edits`, or its id) the example was written from; it then counts as
        ASSISTED (``source``) and names the adversary. ``on_reply``: called with each piece of the target's reply
        as the model writes it (a model that writes; over the ``replyStream`` subscription, opened first), before
        this returns; when the stream cannot be opened within a few seconds the example is sent without it.

        Where the task's owners check near-duplicates, a fooling example close to an earlier one of the round raises
        :class:`~dynaforge_client.errors.NearDuplicate` and nothing is stored; ``allow_near_duplicate=True`` sends it
        anyway (its ``near_duplicate`` then says how close)."""
        data = CreateExampleInput(
            task_code=task,
            fields=dict(fields),
            context_id=_id(context) if context is not None else None,
            tag=tag,
            time_taken_ms=time_taken_ms,
            suggestion_id=_id(suggestion) if suggestion is not None else None,
            allow_near_duplicate=allow_near_duplicate,
        )
        if on_reply is None:
            result = await self._write(lambda: self._api.create_example(data))
        else:
            async with self._reply_stream(on_reply) as stream_id:
                data.reply_stream = stream_id
                result = await self._write(lambda: self._api.create_example(data))
        return unwrap(result.create_example, "ExampleCreated", "PredictionPending", "VerdictPending").example

    @contextlib.asynccontextmanager
    async def _reply_stream(self, on_reply: Callable[[str], None]) -> AsyncIterator[str | None]:
        """A reply stream listening (its id), whose pieces go to ``on_reply`` until it is done (None when it could
        not be opened in time)."""
        stream_id = uuid.uuid4().hex
        listening = asyncio.Event()

        async def follow() -> None:
            async with contextlib.aclosing(_subscription(self._api.reply_stream(stream_id))) as events:
                async for event in events:
                    piece = event.reply_stream
                    if piece.index == 0:
                        listening.set()
                    elif piece.text:
                        on_reply(piece.text)
                    if piece.done:
                        return

        task = asyncio.create_task(follow())
        waiting = asyncio.create_task(listening.wait())
        await asyncio.wait({task, waiting}, timeout=_REPLY_STREAM_OPEN_S, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if not listening.is_set():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            yield None
            return
        try:
            yield stream_id
            with contextlib.suppress(TimeoutError):  # the last pieces are on their way; done comes after them
                await asyncio.wait_for(asyncio.shield(task), _REPLY_STREAM_OPEN_S)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def overrule_verdict(self, example: Any, *, fooled: bool, reason: str) -> ExampleFields:
        """As a task's owner (or an admin), overrule its judge model: set whether a judged example fooled the model,
        with the reason. The counters move with it; ``verdict`` keeps the judge's rationale beside yours."""
        data = OverruleVerdictInput(id=_id(example), fooled=fooled, reason=reason)
        result = await self._write(lambda: self._api.overrule_verdict(data))
        return unwrap(result.overrule_verdict, "VerdictOverruled").example

    async def example(self, example: Any) -> ExampleFields:
        """One example (yours, or any of a task you own)."""
        found = (await self._read(lambda: self._api.example(_id(example)))).example
        if found is None:
            raise errors.NotFound(f"no example {_id(example)} that you can see")
        return found

    async def example_to_validate(self, task: str, *, mode: str | ValidationMode = "CROWD") -> ExampleFields | None:
        """The next example in your validation queue (None when it is empty)."""
        chosen = ValidationMode(mode)
        return (await self._read(lambda: self._api.example_to_validate(task, chosen))).example_to_validate

    async def validate(
        self,
        example: Any,
        label: str | ValidationLabel,
        *,
        corrected_target: Mapping[str, Any] | None = None,
        reason: str | None = None,
        time_taken_ms: int | None = None,
    ) -> ExampleFields:
        """Vote on an example: CORRECT, INCORRECT or FLAGGED (``reason`` then). ``time_taken_ms``: how long the
        validator spent on it (0 to one day), stored with the vote. Returns the example after the vote."""
        data = ValidateExampleInput(
            id=_id(example),
            label=ValidationLabel(label),
            corrected_target=dict(corrected_target) if corrected_target is not None else None,
            reason=reason,
            time_taken_ms=time_taken_ms,
        )
        result = await self._write(lambda: self._api.validate_example(data))
        return unwrap(result.validate_example, "ValidationRecorded").example

    async def withdraw_validation(self, example: Any) -> ExampleFields:
        """Take back your vote on an example within 15 seconds of casting it, while the example still awaits votes
        (a vote that decided it stays: Conflict). Returns the example without your vote."""
        data = WithdrawValidationInput(id=_id(example))
        result = await self._write(lambda: self._api.withdraw_validation(data))
        return unwrap(result.withdraw_validation, "ValidationWithdrawn").example

    async def tutorial(self, task: str) -> TutorialFields:
        """The task's tutorial and where you stand in it (``required``: your examples and votes wait for it)."""
        found = (await self._read(lambda: self._api.tutorial(task))).task
        if found is None or found.tutorial is None:  # a null comes with an error, which _read raises
            raise errors.NotFound(f"no task {task!r} that you can see")
        return found.tutorial

    async def answer_tutorial(
        self, item: Any, label: str | ValidationLabel
    ) -> AnswerTutorialAnswerTutorialTutorialAnswered:
        """Answer a tutorial item (its ``example_id``, or the item) for practice: CORRECT (the label is right) or
        INCORRECT. The answer's ``item`` says whether you were right and why; its ``tutorial`` where you stand."""
        example_id = getattr(item, "example_id", item)
        data = AnswerTutorialInput(example_id=str(example_id), label=ValidationLabel(label))
        result = await self._write(lambda: self._api.answer_tutorial(data))
        return unwrap(result.answer_tutorial, "TutorialAnswered")

    async def restart_tutorial(self, task: str) -> TutorialFields:
        """Clear your tutorial answers to try again (a pass already earned stays)."""
        result = await self._write(lambda: self._api.restart_tutorial(RestartTutorialInput(task_code=task)))
        return unwrap(result.restart_tutorial, "TutorialRestarted").tutorial

    async def round_analytics(
        self, task: str, round: int, bucket: str | TimeBucket = TimeBucket.HOUR
    ) -> RoundAnalyticsTaskRoundAnalytics:
        """The task's owners and admins: a round's collection per hour (or ``"DAY"``), per annotator and per source;
        every column adds up to the round's counters. Raises Forbidden for anyone else."""
        found = (await self._read(lambda: self._api.round_analytics(task, round, TimeBucket(bucket)))).task
        if found is None or found.round is None or found.round.analytics is None:
            raise errors.NotFound(f"no round {round} of a task {task!r} that you can see")
        return found.round.analytics

    async def validator_quality(self, task: str, round: int | None = None) -> ValidatorQualityFields:
        """The task's owners and admins: each crowd validator's agreement with decided outcomes and with owners'
        overrides, median time and weight, and Krippendorff's alpha per round (``round``: only that round's votes).
        Raises Forbidden for anyone else."""
        found = (await self._read(lambda: self._api.validator_quality(task, round=round))).task
        if found is None or found.validator_quality is None:  # a null comes with an error, which _read raises
            raise errors.NotFound(f"no task {task!r} that you can see")
        return found.validator_quality

    async def set_validator_weights(self, task: str, weights: Mapping[str, float]) -> ValidatorQualityFields:
        """The task's owners and admins weigh validators in its quorum: ``{user id: weight}`` (``User.id``, as
        ``validator_quality`` lists them), 0 to 10, 1 the default, 0 excluding the validator; all or none. Returns
        the task's validator quality after."""
        data = SetValidatorWeightsInput(
            task_code=task,
            weights=[ValidatorWeightInput(user_id=str(user), weight=float(w)) for user, w in weights.items()],
        )
        result = await self._write(lambda: self._api.set_validator_weights(data))
        return unwrap(result.set_validator_weights, "ValidatorWeightsSet").quality

    def model_fooled(
        self, task: str, *, after: Any = None, max_attempts: int | None = None, max_backoff: float = 30.0
    ) -> EventStream[ExampleFields]:
        """Examples that fool the task's target model, live: ``async for example in client.model_fooled("nli")``.

        Reconnects with backoff and resumes after the last example received, so nothing is missed or repeated; see
        :mod:`dynaforge_client.events` for how to tell when events may have been missed (``stream.gaps``) and for
        ``after`` (resume from an example id stored earlier)."""

        async def open_(last: str | None) -> AsyncIterator[ExampleFields]:
            async with contextlib.aclosing(_subscription(self._api.model_fooled(task, after=last))) as events:
                async for event in events:
                    yield event.model_fooled

        return EventStream(
            open_,
            key=lambda example: example.id,
            last_id=_id(after) if after is not None else None,
            max_attempts=max_attempts,
            max_backoff=max_backoff,
        )

    # -- machine adversaries -----------------------------------------------------------------------------------

    async def adversaries(self, task: str) -> list[AdversariesTaskAdversaries]:
        """The machine adversaries installed on the server, each with whether it can serve the task."""
        found = (await self._read(lambda: self._api.adversaries(task))).task
        if found is None or found.adversaries is None:  # a null list comes with an error, which _read raises
            raise errors.NotFound(f"no task {task!r} that you can see")
        return list(found.adversaries)

    async def suggest_edits(
        self,
        task: str,
        draft: Mapping[str, Any],
        *,
        context: Any = None,
        adversary: str | None = None,
        limit: int = 3,
    ) -> SuggestEditsSuggestEditsEditsSuggested:
        """Edits of ``draft`` (the example's fields, with the gold you claim) that flip the round's target: the
        target's verdict on the draft (``draft``), and ``suggestions``, each with its fields, edits, rationale,
        verdict and how the probabilities moved. Write one with ``create_example(..., suggestion=s)``. ``adversary``
        asks one only (:meth:`adversaries`); None asks every available one."""
        data = SuggestEditsInput(
            task_code=task,
            draft=dict(draft),
            context_id=_id(context) if context is not None else None,
            adversary=adversary,
            limit=limit,
        )
        result = await self._write(lambda: self._api.suggest_edits(data))
        return unwrap(result.suggest_edits, "EditsSuggested")

    async def generate_candidates(
        self, task: str, adversary: str, budget: int, *, seed: int | None = None
    ) -> AdversaryRunFields:
        """Start a generation run (task owners and admins): ``adversary`` attacks the open round within ``budget``
        target queries; the candidates that fool the target enter the validation queue as MACHINE examples. Follow
        it with :meth:`generation_run` or :meth:`wait_for_generation`."""
        data = GenerateCandidatesInput(task_code=task, adversary=adversary, budget=budget, seed=seed)
        result = await self._write(lambda: self._api.generate_candidates(data))
        return unwrap(result.generate_candidates, "GenerationStarted").run

    async def generation_run(self, run: Any) -> AdversaryRunFields:
        """A generation run as it is now (its task's owners and admins)."""
        node = (await self._read(lambda: self._api.adversary_run(_id(run)))).node
        if node is None or getattr(node, "typename__", None) != "AdversaryRun":
            raise errors.NotFound(f"no generation run {_id(run)} that you can see")
        return cast(AdversaryRunFields, node)

    async def wait_for_generation(
        self,
        run: Any,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - the blocking Client has the same surface and needs it
        interval: float = 1.0,
    ) -> AdversaryRunFields:
        """Poll a generation run until it is DONE, FAILED or CANCELLED; TimeoutError after ``timeout`` seconds."""

        async def follow() -> AdversaryRunFields:
            while True:
                current = await self.generation_run(run)
                if current.status.value in ("DONE", "FAILED", "CANCELLED"):
                    return current
                await asyncio.sleep(interval)

        return await asyncio.wait_for(follow(), timeout)

    async def cancel_generation(self, run: Any) -> AdversaryRunFields:
        """Stop a generation run; what it stored stays. A run that has ended is returned as it is."""
        result = await self._write(lambda: self._api.cancel_generation(CancelGenerationInput(id=_id(run))))
        return unwrap(result.cancel_generation, "GenerationCancelled").run

    # -- crowd studies -----------------------------------------------------------------------------------------

    async def crowd_platforms(self) -> list[CrowdPlatformFields]:
        """The crowd platforms the server runs studies on (``name``, such as ``prolific``; the URL ``parameters`` its
        study links carry; ``pays``: whether :meth:`pay_crowd_bonuses` pays through its API)."""
        return list((await self._read(self._api.crowd_platforms)).crowd_platforms)

    async def crowd_studies(self, task: str) -> list[CrowdStudyFields]:
        """The task's owners and admins: its crowd studies, newest first, each with its participants (the
        platform's id for them, their pseudonymous username) and their work and pay (``work``: examples, verified
        fooling ones, votes, agreeing ones, ``earned``, ``paid``, ``owed``; amounts in the currency's minor units).
        Raises Forbidden for anyone else."""
        found = (await self._read(lambda: self._api.crowd_studies(task))).task
        if found is None or found.crowd_studies is None:  # a null list comes with an error, which _read raises
            raise errors.NotFound(f"no task {task!r} that you can see")
        return list(found.crowd_studies)

    async def crowd_study(self, study: Any) -> CrowdStudyFields:
        """One crowd study (a study from :meth:`crowd_studies`, or its id) as it is now, for its task's owners and
        admins; NotFound for anyone else, as for a study that does not exist."""
        node = (await self._read(lambda: self._api.crowd_study(_id(study)))).node
        if not isinstance(node, CrowdStudyNodeCrowdStudy):
            raise errors.NotFound(f"no crowd study {_id(study)} that you can see")
        return node

    async def create_crowd_study(
        self,
        task: str,
        *,
        platform: str,
        external_id: str,
        name: str,
        completion_code: str,
        currency: str = "GBP",
        pay_per_verified_fooling: int = 0,
        pay_per_agreeing_validation: int = 0,
        minimum_examples: int = 0,
        minimum_validations: int = 0,
    ) -> CrowdStudyFields:
        """The task's owners and admins create a study on a crowd platform (:meth:`crowd_platforms`): the
        platform's own id for the study (``external_id``), its ``name`` as participants see it, and the
        ``completion_code`` the platform expects. Pay is in the ``currency``'s minor units (pence, cents; 0 to
        10000): ``pay_per_verified_fooling`` for each example that fooled the model and was accepted,
        ``pay_per_agreeing_validation`` for each vote that agrees with its example's decision. A participant may
        finish after ``minimum_examples`` examples and ``minimum_validations`` votes. Paste the web app's address and
        the study's ``link_path`` into the platform."""
        data = CreateCrowdStudyInput(
            task_code=task,
            platform=platform,
            external_id=external_id,
            name=name,
            completion_code=completion_code,
            currency=currency,
            pay_per_verified_fooling=pay_per_verified_fooling,
            pay_per_agreeing_validation=pay_per_agreeing_validation,
            minimum_examples=minimum_examples,
            minimum_validations=minimum_validations,
        )
        result = await self._write(lambda: self._api.create_crowd_study(data))
        return unwrap(result.create_crowd_study, "CrowdStudyCreated").study

    async def set_crowd_study_open(self, study: Any, is_open: bool) -> CrowdStudyFields:
        """Close a crowd study (a study, or its id) to new participants (those who joined may still finish), or
        open it again. Returns the study after."""
        data = SetCrowdStudyOpenInput(study_id=_id(study), is_open=is_open)
        result = await self._write(lambda: self._api.set_crowd_study_open(data))
        return unwrap(result.set_crowd_study_open, "CrowdStudyChanged").study

    async def pay_crowd_bonuses(self, study: Any) -> PayCrowdBonusesPayCrowdBonusesCrowdBonusesPaid:
        """Pay every participant of a crowd study (a study, or its id) what they are owed, through the platform's
        API: the payout's ``reference`` on the platform, how many ``participants`` it paid, the ``amount`` in all
        (minor units) and the ``study`` after. What is paid is recorded, so paying again pays only new work.
        InvalidInput when nobody is owed (rule ``nothing_owed``), when the platform refused and nothing was paid
        (``payout``; without the operator's API token, pay :meth:`crowd_bonus_file` on the platform by hand) or when
        the outcome is unknown (``payout_uncertain``: it counts as paid until you check on the platform);
        AlreadyExists while another payout of the study is under way."""
        data = PayCrowdBonusesInput(study_id=_id(study))
        result = await self._write(lambda: self._api.pay_crowd_bonuses(data))
        return unwrap(result.pay_crowd_bonuses, "CrowdBonusesPaid")

    async def crowd_bonus_file(self, study: Any) -> str:
        """What a crowd study's participants are owed now, as the bonus file its platform takes (Prolific: CSV
        lines ``participant id,amount`` in major units, ready for its bulk bonus page; empty when nobody is owed).
        Once you paid it there, :meth:`record_crowd_bonuses` records it, so that it is not owed (or paid) again."""
        found = await self.crowd_study(study)
        if found.bonus_file is None:
            raise errors.NotFound(f"the {found.platform} crowd platform is not loaded on the server")
        return found.bonus_file

    async def record_crowd_bonuses(
        self, study: Any, reference: str, bonuses: Mapping[str, int] | str
    ) -> RecordCrowdBonusesRecordCrowdBonusesCrowdBonusesRecorded:
        """Record bonuses paid on the platform by hand: ``bonuses`` is ``{participant id: amount in minor units}``,
        or the text of the bonus file you uploaded there (:meth:`crowd_bonus_file`); ``reference`` is the
        platform's id for the payment. All or nothing; InvalidInput for a participant not in the study, or an
        amount above what they are owed now (recorded already?)."""
        if isinstance(bonuses, str):
            rows = {}
            for line in bonuses.splitlines():
                participant, _, amount = line.partition(",")
                if participant and amount:
                    rows[participant] = round(float(amount) * 100)
            bonuses = rows
        data = RecordCrowdBonusesInput(
            study_id=_id(study),
            reference=reference,
            bonuses=[CrowdBonusInput(participant=p, amount=int(a)) for p, a in bonuses.items()],
        )
        result = await self._write(lambda: self._api.record_crowd_bonuses(data))
        return unwrap(result.record_crowd_bonuses, "CrowdBonusesRecorded")

    # -- models and results ------------------------------------------------------------------------------------

    async def submit_model(
        self,
        task: str,
        *,
        path: str | Path | None = None,
        url: str | None = None,
        name: str | None = None,
        card: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
        backend: str | None = None,
        config: Mapping[str, Any] | None = None,
        published: bool = False,
        anonymous: bool = False,
        progress: Progress | None = None,
    ) -> ModelFields:
        """Submit a model for evaluation on every scoring set of the task; returns it (status SUBMITTED).

        Exactly one of: ``path``, a Hugging Face model folder (what ``save_pretrained`` wrote, safetensors only),
        packed and uploaded (``options``: how the model reads the task, see the server's docs/model-server.md);
        ``url``, a model server you run (the ``http`` backend); or ``backend`` with its ``config``. ``progress`` is
        called as the upload goes, with bytes sent and bytes in all. Follow the evaluation with
        :meth:`evaluation_progress` or :meth:`wait_for_results`."""
        if sum(x is not None for x in (path, url, backend)) != 1:
            raise ValueError("pass exactly one of path= (a model folder), url= (a model server) or backend=")
        display = name or (Path(path).name if path is not None else url) or str(backend)
        if path is not None:
            return await self._upload_model(
                task, Path(path), display, card=card, options=options, published=published, anonymous=anonymous,
                progress=progress,
            )  # fmt: skip
        data = SubmitModelInput(
            task_code=task,
            name=display,
            backend="http" if url is not None else str(backend),
            config={"url": url} if url is not None else dict(config or {}),
            card=_card(card),
            published=published,
            anonymous=anonymous,
        )
        result = await self._write(lambda: self._api.submit_model(data))
        return unwrap(result.submit_model, "ModelSubmitted").model

    async def _upload_model(
        self,
        task: str,
        folder: Path,
        name: str,
        *,
        card: Mapping[str, Any] | None,
        options: Mapping[str, Any] | None,
        published: bool,
        anonymous: bool,
        progress: Progress | None,
    ) -> ModelFields:
        archive = pack_folder(folder)
        try:
            total = archive.stat().st_size
            sent = 0

            def on_read(size: int) -> None:
                nonlocal sent
                sent += size
                if progress is not None:
                    progress(min(sent, total), total)

            async def upload() -> Any:
                nonlocal sent
                sent = 0
                with ProgressReader(archive, on_read) as stream:
                    data = UploadModelInput(
                        task_code=task,
                        name=name,
                        file=Upload(filename=f"{folder.name or 'model'}.tar.gz", content=stream,
                                    content_type="application/gzip"),
                        options=dict(options) if options is not None else None,
                        card=_card(card),
                        published=published,
                        anonymous=anonymous,
                    )  # fmt: skip
                    return await self._api.upload_model(data, headers={"Apollo-Require-Preflight": "true"})

            result = await self._write(upload)
        finally:
            archive.unlink(missing_ok=True)
        return unwrap(result.upload_model, "ModelUploaded").model

    async def upload_predictions(
        self,
        task: str,
        dataset: str,
        predictions: Iterable[Mapping[str, Any]],
        *,
        name: str,
        card: Mapping[str, Any] | None = None,
        published: bool = False,
        anonymous: bool = False,
    ) -> ModelFields:
        """Submit predictions for one data set instead of a model: one output per item, in the data set's order,
        shaped like a model server's output (``{"label": "positive"}``). Scored at once: read :meth:`results`."""
        data = SubmitPredictionsInput(
            task_code=task,
            name=name,
            dataset_name=dataset,
            predictions=[dict(p) for p in predictions],
            card=_card(card),
            published=published,
            anonymous=anonymous,
        )
        result = await self._write(lambda: self._api.submit_predictions(data))
        return unwrap(result.submit_predictions, "ModelSubmitted").model

    async def results(self, model: Any) -> ModelResults:
        """A model's evaluations so far: metrics with intervals, slices, perturbations, throughput and memory."""
        model_id = _id(model)
        evaluations: list[Any] = []
        after = None
        while True:
            found = (await self._read(functools.partial(self._api.model_results, model_id, after=after))).model
            if found is None:
                raise errors.NotFound(f"no model {model_id} that you can see")
            evaluations.extend(found.evaluations.nodes)
            if not found.evaluations.page_info.has_next_page:
                fields = ModelFields.model_validate(found.model_dump(by_alias=True, exclude={"evaluations"}))
                return ModelResults(model=fields, evaluations=evaluations)
            after = found.evaluations.page_info.end_cursor

    def evaluation_progress(
        self, model: Any, *, max_attempts: int | None = None
    ) -> EventStream[EvaluationProgressEvaluationProgress]:
        """Progress events of the model's evaluations, live (each start, each chunk, each end)."""
        model_id = _id(model)

        async def open_(_last: str | None) -> AsyncIterator[EvaluationProgressEvaluationProgress]:
            async with contextlib.aclosing(_subscription(self._api.evaluation_progress(model_id))) as events:
                async for event in events:
                    yield event.evaluation_progress

        return EventStream(open_, key=None, max_attempts=max_attempts)

    async def wait_for_results(
        self,
        model: Any,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - the blocking Client has the same surface and needs it
        on_progress: Callable[[EvaluationProgressEvaluationProgress], object] | None = None,
        on_results: Callable[[ModelResults], object] | None = None,
    ) -> ModelResults:
        """Follow the model's evaluations until the model is DONE or FAILED (every evaluation ended, and robustness
        and fairness added), then return :meth:`results`. ``on_progress`` gets each progress event; ``on_results``
        the results each time they are read (at least every 2 seconds while waiting), where a QUEUED evaluation says
        its ``queue_position`` (1: next; the workers are shared by every task); TimeoutError after ``timeout``
        seconds."""

        async def follow() -> ModelResults:
            stream = self.evaluation_progress(model)
            iterator = stream.__aiter__()
            # subscribe first, then read: an evaluation that ends in between is not waited for
            first = asyncio.ensure_future(iterator.__anext__())
            try:
                await asyncio.sleep(0.2)
                while True:
                    results = await self.results(model)
                    if on_results is not None:
                        on_results(results)
                    if results.done:
                        return results
                    done, _ = await asyncio.wait({first}, timeout=2.0)
                    if done:
                        event = first.result()
                        if on_progress is not None:
                            on_progress(event)
                        first = asyncio.ensure_future(iterator.__anext__())
            finally:
                first.cancel()
                with contextlib.suppress(BaseException):
                    await first  # the generator must be idle before it is closed
                await iterator.aclose()  # type: ignore[attr-defined]

        return await asyncio.wait_for(follow(), timeout)

    async def leaderboard(
        self,
        task: str,
        weights: Mapping[str, float] | None = None,
        *,
        dataset_weights: Mapping[str, float] | None = None,
        sort_metric: str | None = None,
    ) -> Leaderboard:
        """The task's leaderboard under your weights (``{"accuracy": 4, "throughput": 1}``; unnamed metrics keep
        the task's defaults), ranked by Dynascore, or by ``sort_metric``. ``.to_pandas()`` when pandas is there."""
        sort = LeaderboardSort.METRIC if sort_metric else LeaderboardSort.DYNASCORE
        board = (
            await self._read(
                lambda: self._api.leaderboard(
                    task,
                    sort,
                    metric_weights=_weights(weights),
                    dataset_weights=_weights(dataset_weights),
                    sort_metric=sort_metric,
                )
            )
        ).task
        if board is None or board.leaderboard is None:
            raise errors.NotFound(f"no task {task!r} that you can see")
        return Leaderboard(board.leaderboard)

    async def item_predictions(self, evaluation: Any) -> list[dict[str, Any]]:
        """An evaluation item by item (``GET /evaluations/{id}/predictions``), in its set's order: each item's
        ``position``, its gold ``fields``, the model's raw ``output``, the task's reading of it (``prediction``; None
        when unusable, ``unusable`` says why), ``fooled`` and ``right``, with the API's ids (``evaluation``,
        ``model``, ``dataset``, ``item``). For the task's owners and admins, and the model's submitter on a STANDARD
        set; ``Forbidden`` for a set whose gold you may not see, ``NotFound`` for an evaluation you cannot see."""
        url = f"{self.base_url}/evaluations/{_id(evaluation)}/predictions"
        async with _ExportResponse(self._http, url, {"format": "jsonl"}, self.retries) as response:
            return [json.loads(line) async for line in response.aiter_lines() if line.strip()]

    async def paired_test(self, task: str, model: Any, against: Any, dataset: Any) -> PairedTestTaskPairedTest:
        """Two models on the same items of one of the task's data sets (ids or objects): McNemar's exact test on
        which items each got right (``mcnemar_p_value``, the discordant counts) and a paired bootstrap of the
        principal metric (``difference`` of ``model`` minus ``against``, ``bootstrap_p_value``). The task's owners
        and admins; ``Conflict`` until both evaluations are DONE."""
        found = (await self._read(lambda: self._api.paired_test(task, _id(model), _id(against), _id(dataset)))).task
        if found is None or found.paired_test is None:  # a null test comes with an error, which _read raises
            raise errors.NotFound(f"no task {task!r} that you can see")
        return found.paired_test

    # -- data --------------------------------------------------------------------------------------------------

    async def export(
        self,
        task: str,
        round: int | None = None,
        *,
        status: str | None = None,
        records: bool = False,
        progress: Progress | None = None,
    ) -> Any:
        """The task's collected examples (one round, or all; ``status`` such as ``ACCEPTED`` narrows them).

        With the datasets package (and unless ``records``): a ``datasets.Dataset`` of the server's ``hf`` export, the
        same schema as ``download_export(format="hf")`` loaded with ``datasets.load_dataset``: a column per task field
        (labels as ``ClassLabel``, typed nullable columns, span answers as structs), the example's global ``id`` and
        ``context_id``, ``round``, ``status``, ``fooled``, the ``prediction`` (a struct typed like the fields),
        ``votes`` and ``validations``; the rounds one after the other. Otherwise (``records=True``, or no datasets
        package): the JSONL export as a list of dicts, one ``dynaforge.example/2`` record per example. An empty export
        warns (:class:`errors.EmptyExport`) with the server's reason: most often, you do not own the task and none of
        its rounds is published yet."""
        if not records:
            try:
                import datasets
            except ImportError:
                pass
            else:
                return await self._export_dataset(datasets, task, round, status, progress)
        rows = [json.loads(line) async for line in self._export_lines(task, round, status, progress) if line.strip()]
        if not rows:
            _warn_empty(self.last_export_note)
        return rows

    async def _export_dataset(
        self, datasets: Any, task: str, round: int | None, status: str | None, progress: Progress | None
    ) -> Any:
        try:
            blob = b"".join(
                [c async for c in self.stream_export(task, round, status=status, format="hf", progress=progress)]
            )
        except errors.NotFound:
            # A Hugging Face folder cannot be empty, so the server refuses an empty one; the JSONL export tells an
            # empty export (with its reason) from no such task (which raises again here).
            rows = [json.loads(line) async for line in self._export_lines(task, round, status, None) if line.strip()]
            if rows:  # examples arrived in between: ask again
                return await self._export_dataset(datasets, task, round, status, progress)
            _warn_empty(self.last_export_note)
            return datasets.Dataset.from_list([])
        return await asyncio.to_thread(_load_hf_export, datasets, blob)

    async def download_export(
        self,
        task: str,
        path: str | Path,
        round: int | None = None,
        *,
        status: str | None = None,
        format: str = "jsonl",
        progress: Progress | None = None,
    ) -> Path:
        """Write the export to ``path`` in any format the server registers (jsonl, csv, hf as a zip, ...). The file
        appears once the download is complete (it is written beside it as ``path.part`` until then)."""
        target = Path(path)
        partial = target.with_name(target.name + ".part")
        chunks = self.stream_export(task, round, status=status, format=format, progress=progress)
        try:
            first = await chunks.__anext__()  # a refused export raises here, before any file is made
        except StopAsyncIteration:
            first = b""
        try:
            with partial.open("wb") as out:  # noqa: ASYNC230 - a local file, written chunk by chunk as they arrive
                out.write(first)
                async for chunk in chunks:
                    out.write(chunk)
            partial.replace(target)  # complete or not there: never half-written
        finally:
            partial.unlink(missing_ok=True)
            await chunks.aclose()
        return target

    async def stream_export(
        self,
        task: str,
        round: int | None = None,
        *,
        status: str | None = None,
        format: str = "jsonl",
        progress: Progress | None = None,
    ) -> AsyncGenerator[bytes, None]:
        """The export's bytes as they arrive (to pipe them somewhere); ``progress`` gets bytes so far and the total
        (0 when the server does not say)."""
        async with self._export_response(task, round, status, format) as response:
            self.last_export_note = response.headers.get("x-dynaforge-export-note")
            total = int(response.headers.get("content-length") or 0)
            done = 0
            async for chunk in response.aiter_bytes():
                done += len(chunk)
                if progress is not None:
                    progress(done, total)
                yield chunk

    async def _export_lines(
        self, task: str, round: int | None, status: str | None, progress: Progress | None
    ) -> AsyncIterator[str]:
        async with self._export_response(task, round, status, "jsonl") as response:
            self.last_export_note = response.headers.get("x-dynaforge-export-note")
            done = 0
            async for line in response.aiter_lines():
                done += len(line) + 1
                if progress is not None:
                    progress(done, 0)
                yield line

    def _export_response(self, task: str, round: int | None, status: str | None, format: str) -> Any:
        params: dict[str, Any] = {"format": format}
        if round is not None:
            params["round"] = round
        if status is not None:
            params["status"] = status
        return _ExportResponse(self._http, f"{self.base_url}/export/{task}", params, self.retries)


def _load_hf_export(datasets: Any, blob: bytes) -> Any:
    """The ``hf`` export (a zip of the dataset folder) as one in-memory ``Dataset``, loaded by ``datasets`` from its
    card (features) and Parquet files, its ``round{N}`` splits in round order."""
    import tempfile
    import zipfile

    with tempfile.TemporaryDirectory(prefix="dynaforge-export-") as folder:
        with zipfile.ZipFile(io.BytesIO(blob)) as archive:
            archive.extractall(folder)  # noqa: S202 - the server's own archive, of plain relative names
        cards = sorted(Path(folder).rglob("README.md"), key=lambda p: len(p.parts))
        root = cards[0].parent if cards else Path(folder)
        loaded = datasets.load_dataset(str(root), keep_in_memory=True, cache_dir=str(Path(folder) / ".cache"))
        splits = sorted(loaded, key=lambda name: int("".join(c for c in name if c.isdigit()) or 0))
        return datasets.concatenate_datasets([loaded[name] for name in splits])


def _warn_empty(note: str | None) -> None:
    warnings.warn(errors.EmptyExport(note or "The export holds no example"), stacklevel=3)


class _ExportResponse:
    """``GET /export/...`` as a streamed response; the server's JSON errors become the client's exceptions."""

    def __init__(self, http: httpx.AsyncClient, url: str, params: dict[str, Any], retries: int):
        self._http, self._url, self._params, self._retries = http, url, params, retries
        self._context: Any = None

    async def __aenter__(self) -> httpx.Response:
        async def open_() -> httpx.Response:
            self._context = self._http.stream("GET", self._url, params=self._params)
            return await self._context.__aenter__()

        response = await call(open_, read=True, retries=self._retries)  # a GET: safe to repeat
        if response.status_code >= 400:
            body = await response.aread()
            await self._context.__aexit__(None, None, None)
            try:
                error = json.loads(body)["error"]
            except (ValueError, KeyError, TypeError):
                raise errors.TransportError(
                    f"HTTP {response.status_code} from the export", status=response.status_code
                ) from None
            raise errors.from_graphql_error({"message": error.get("message"), "extensions": error})
        return response

    async def __aexit__(self, *exc: Any) -> None:
        await self._context.__aexit__(*exc)
