"""The Starlette application: /graphql over HTTP and websockets, /export/{task_code}, /healthz, and the web app at /
(see :mod:`dynaforge.webapp`)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
from typing import Any

from cross_web import AsyncHTTPRequestAdapter
from cross_web import HTTPException as StrawberryHTTPException  # what strawberry answers as an HTTP status
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types import ExecutionResult

from dynaforge import jsonio
from dynaforge.api.context import RequestContext
from dynaforge.api.contexts import check_multipart_request
from dynaforge.api.credentials import bearer_token
from dynaforge.api.documents import UNKNOWN_DOCUMENT, registered_documents, requested_document_id
from dynaforge.api.export_http import export_endpoint, predictions_endpoint
from dynaforge.api.media import GRAPHQL_RESPONSE_JSON, is_request_error, response_media_type
from dynaforge.api.media_uploads import media_endpoint
from dynaforge.api.schema import DatabaseUnavailable, build_schema
from dynaforge.errors import database_unreachable
from dynaforge.inference.client import spec_key
from dynaforge.services import adversaries as adversary_service
from dynaforge.services import auth as auth_service
from dynaforge.services import examples as example_service
from dynaforge.services import submissions as submission_service
from dynaforge.services import tasks as task_service
from dynaforge.services import training as training_service
from dynaforge.services.actor import Actor
from dynaforge.services.platform import Platform
from dynaforge.services.task_loading import load_stored
from dynaforge.settings import Settings
from dynaforge.webapp import WebApp

log = logging.getLogger(__name__)


class DynaforgeGraphQL(GraphQL[RequestContext, None]):
    """Strawberry's ASGI app with our request context."""

    def __init__(self, platform: Platform, **kwargs: Any):
        super().__init__(build_schema(platform.settings), **kwargs)
        self.platform = platform
        self.documents = registered_documents(platform.settings)
        self.webapp = WebApp(platform.settings)

    def encode_json(self, data: object) -> str:
        """Responses through orjson (see :mod:`dynaforge.jsonio`): a page of examples is one large document. Text,
        not bytes: Strawberry sends bytes over a websocket as binary frames, which graphql-ws clients refuse."""
        return jsonio.dumps(data).decode()

    async def render_graphql_ide(self, request: Request) -> Response:
        """GraphiQL from the web app's own build (no CDN: it works offline, under the app's CSP)."""
        return self.webapp.graphiql(request)

    def should_render_graphql_ide(self, request: Any) -> bool:
        """Not for a GET that names its document by id (it has no ``query`` parameter either)."""
        params = request.query_params
        return "documentId" not in params and "extensions" not in params and super().should_render_graphql_ide(request)

    async def parse_http_body(self, request: AsyncHTTPRequestAdapter) -> GraphQLRequestData | list[GraphQLRequestData]:
        """Strawberry's parsing, plus documents sent by id (``documentId``, or a persisted-query hash): the
        registered text takes the place of the missing ``query`` (see :mod:`dynaforge.api.documents`)."""
        parsed = await super().parse_http_body(request)
        if isinstance(parsed, list) or parsed.query is not None:
            return parsed
        if request.method == "GET":
            raw: Any = dict(request.query_params)
        elif "application/json" in (request.content_type or ""):
            raw = self.decode_json(await request.get_body())
        else:  # a multipart upload: its operations part names the document (a persisted-query hash), as urql sends
            raw = {"extensions": parsed.extensions}
        if request.method == "GET" and parsed.extensions is not None:
            raw["extensions"] = parsed.extensions
        try:
            document_id = requested_document_id(raw)
        except ValueError as exc:
            raise StrawberryHTTPException(400, str(exc)) from exc
        if document_id is None:
            return parsed
        text = self.documents.text(document_id)
        if text is None:
            known = f"the {len(self.documents)} it registered" if len(self.documents) else "none: none are registered"
            raise StrawberryHTTPException(
                400,
                f"{UNKNOWN_DOCUMENT}: no document has the id {document_id!r} on this server (it knows {known}); send "
                "the document's text, or register it in DYNAFORGE_TRUSTED_DOCUMENTS",
            )
        parsed.query = text
        return parsed

    async def get_context(self, request, response) -> RequestContext:
        token = bearer_token(request.headers)
        try:
            actor = await auth_service.authenticate(self.platform, token)
        except Exception as exc:
            if not database_unreachable(exc):
                raise
            raise StrawberryHTTPException(503, DatabaseUnavailable.MESSAGE) from exc
        return RequestContext.create(self.platform, actor, request, response, token)

    async def get_sub_response(self, request: Request | WebSocket) -> Response:
        """Chooses the answer's media type from ``Accept`` (see :mod:`dynaforge.api.media`) and keeps the sub-response
        on the request, so that ``process_result`` can set a request error's status."""
        sub_response = await super().get_sub_response(request)
        if isinstance(request, Request):
            sub_response.media_type = response_media_type(request.headers.get("accept"))
            request.state.graphql_sub_response = sub_response
        return sub_response

    async def process_result(self, request: Request, result: ExecutionResult) -> GraphQLHTTPResponse:
        """Under ``application/graphql-response+json`` a request error is a 400 without a ``data`` entry."""
        response_data = await super().process_result(request, result)
        sub_response = getattr(request.state, "graphql_sub_response", None)
        if sub_response is not None and sub_response.media_type == GRAPHQL_RESPONSE_JSON and is_request_error(result):
            response_data.pop("data", None)
            sub_response.status_code = 400
        return response_data

    def create_response(
        self, response_data: GraphQLHTTPResponse | list[GraphQLHTTPResponse], sub_response: Response
    ) -> Response:
        response = super().create_response(response_data, sub_response)
        if sub_response.media_type == GRAPHQL_RESPONSE_JSON:
            response.headers["content-type"] = f"{GRAPHQL_RESPONSE_JSON}; charset=utf-8"
        return response

    async def on_ws_connect(self, context: RequestContext):
        """graphql-transport-ws ``connection_init``: its payload's ``authorization`` (or ``token``) signs the
        connection in, in place of the HTTP header (browsers cannot set headers on websockets). A bad token is
        not refused here: each subscription then answers NotAuthenticated, saying why."""
        params = context.connection_params if isinstance(context.connection_params, dict) else {}
        value = next((params[k] for k in ("authorization", "Authorization", "token") if params.get(k)), None)
        if isinstance(value, str) and value.strip():
            token = bearer_token({"authorization": value if " " in value.strip() else f"Bearer {value.strip()}"})
            context.actor, context.token = await auth_service.authenticate(self.platform, token), token
        elif value is not None:
            context.actor = Actor.anonymous("The authorization connection parameter must be a string")
        return await super().on_ws_connect(context)

    def decode_json(self, data: str | bytes) -> object:
        """Request bodies: UTF-8 JSON objects only; a bad body is a 400 that says what was wrong, never a 500."""
        if isinstance(data, bytes):
            try:
                data = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise StrawberryHTTPException(
                    400, f"The request body is not UTF-8 (byte {exc.start + 1}); send JSON text encoded as UTF-8"
                ) from exc
        try:
            value = json.loads(data, parse_constant=_refuse_constant)
        except RecursionError:
            value = None  # nested past the interpreter's limit: refused below, as any over-deep body
            deep = True
        else:
            deep = _deeper_than(value, MAX_JSON_DEPTH)
        if deep:
            raise StrawberryHTTPException(
                400, f"The request body nests arrays and objects deeper than {MAX_JSON_DEPTH} levels; flatten it"
            )
        if not isinstance(value, dict):
            raise StrawberryHTTPException(
                400, 'The request body must be a JSON object: {"query": "...", "variables": {...}}'
            )
        return value

    async def parse_multipart(self, request):
        """File uploads: refused unless they force a CORS preflight (CSRF) and fit the upload limit. The limit is
        that of context files; a model archive (``MODEL_UPLOAD_MAX_MB``, larger) only from a signed-in caller, so
        nobody anonymous makes the server spool gigabytes. Each mutation holds its own file to its own limit."""
        settings = self.platform.settings
        limit = settings.context_upload_max_bytes
        model_limit = settings.model_upload_max_mb * 1024 * 1024
        if model_limit > limit and await self._signed_in(request):
            limit = model_limit
        check_multipart_request(request.headers, limit)
        return await super().parse_multipart(request)

    async def _signed_in(self, request) -> bool:
        token = bearer_token(request.headers)
        if not token:
            return False
        try:
            return (await auth_service.authenticate(self.platform, token)).is_authenticated
        except Exception as exc:
            if not database_unreachable(exc):
                raise
            raise StrawberryHTTPException(503, DatabaseUnavailable.MESSAGE) from exc


MAX_JSON_DEPTH = 64  # request bodies: far beyond any real query's variables, far below any recursion limit


def _deeper_than(value: object, limit: int) -> bool:
    """Whether JSON ``value`` nests arrays and objects more than ``limit`` levels deep (iteratively: no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        current, depth = stack.pop()
        children = current.values() if isinstance(current, dict) else current if isinstance(current, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _refuse_constant(name: str) -> None:
    raise StrawberryHTTPException(400, f"The request body holds {name}, which is not JSON; send numbers only")


class BodyLimit:
    """Refuse request bodies larger than ``limit`` bytes with 413 before they are read whole: by Content-Length
    when it is declared, by counting otherwise (chunked bodies). Multipart uploads are left to the upload limit
    (``check_multipart_request``)."""

    def __init__(self, app: Any, limit: int):
        self.app, self.limit = app, limit

    def refusal(self) -> JSONResponse:
        return JSONResponse(
            {
                "errors": [
                    {
                        "message": f"The request body is larger than {self.limit} bytes; send a smaller query or fewer "
                        "variables (files go through a multipart upload)",
                        "extensions": {"code": "PAYLOAD_TOO_LARGE"},
                    }
                ]
            },
            status_code=413,
        )

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and len(scope.get("query_string", b"")) > self.limit:
            # A GET query carries its document and variables in the URL: bounded like a body.
            return await JSONResponse(
                {
                    "errors": [
                        {
                            "message": f"The query string is longer than {self.limit} bytes; send the query as a POST "
                            "body or register it as a trusted document",
                            "extensions": {"code": "URI_TOO_LONG"},
                        }
                    ]
                },
                status_code=414,
            )(scope, receive, send)
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if headers.get("content-type", "").lower().startswith("multipart/"):
            return await self.app(scope, receive, send)
        length = headers.get("content-length", "").strip()
        if length.isdigit() and int(length) > self.limit:
            return await self.refusal()(scope, receive, send)
        seen = 0
        started = False

        async def counted_receive():
            nonlocal seen
            event = await receive()
            if event["type"] == "http.request":
                seen += len(event.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge()
            return event

        async def watched_send(event):
            nonlocal started
            if event["type"] == "http.response.start":
                started = True
            await send(event)

        try:
            await self.app(scope, counted_receive, watched_send)
        except _TooLarge:
            if not started:
                await self.refusal()(scope, receive, send)


class _TooLarge(Exception):
    pass


def create_app(
    settings: Settings | None = None,
    *,
    platform: Platform | None = None,
    sync_tasks: bool = True,
    warm_models: bool = False,
    run_jobs: bool | None = None,
) -> Starlette:
    """Build the app. ``platform`` lets tests inject their own database, plugins and inference client.

    ``run_jobs`` (default: when the app builds its own platform) starts the job system: the in-process broker and
    worker of the embedded default, or a Redis broker that ``dynaforge worker`` processes consume.
    """
    if run_jobs is None:
        run_jobs = platform is None
    settings = settings or (platform.settings if platform else Settings())
    platform = platform or Platform.create(settings)
    graphql = DynaforgeGraphQL(
        platform,
        graphql_ide="graphiql" if settings.graphiql_enabled else None,
        multipart_uploads_enabled=True,
        # Only graphql-transport-ws: the legacy graphql-ws protocol is not offered.
        subscription_protocols=[GRAPHQL_TRANSPORT_WS_PROTOCOL],
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        if sync_tasks:
            await load_stored(platform.db, platform.plugins)  # tasks declared as data, beside the plugins' tasks
            await task_service.sync_registered_tasks(platform)
        await platform.events.start()
        if run_jobs:
            _start_jobs(platform)
        if sync_tasks:
            await adversary_service.recover(platform)  # generation runs a stopped process left behind
        # Everything made so far (modules, plugins, the schema) lives as long as the process: move it out of the
        # garbage collector's generations, so that the collections that requests trigger stop re-scanning it.
        gc.collect()
        gc.freeze()
        background = [asyncio.create_task(_retry_pending(platform), name="pending-predictions")]
        if run_jobs and platform.settings.artifact_gc_interval_s > 0:
            background.append(asyncio.create_task(_collect_artifacts(platform), name="collect-artifacts"))
        if run_jobs and platform.jobs is not None and platform.jobs.embedded and platform.settings.queued_sweep_s > 0:
            background.append(asyncio.create_task(_send_unsent_evaluations(platform), name="queued-evaluations"))
        if warm_models:
            background.append(asyncio.create_task(_warm(platform), name="warm-models"))
        try:
            yield
        finally:
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            if run_jobs and platform.jobs is not None:
                platform.jobs.stop()
            await platform.close()

    async def healthz(request: Request) -> JSONResponse:
        """For load balancers and operators: up, how many tasks are loaded (not their codes: a hidden task's code
        is its owners' to show) and the model worker's state."""
        return JSONResponse(
            {
                "status": "ok",
                "tasks": len(platform.plugins.registry.tasks),
                "inference": platform.inference.status(),
            }
        )

    app = Starlette(
        routes=[
            Route("/healthz", healthz),
            Route("/export/{task_code}", export_endpoint, methods=["GET"]),
            Route("/evaluations/{evaluation_id}/predictions", predictions_endpoint, methods=["GET"]),
            Route("/media/{key}", media_endpoint, methods=["GET"]),
            Route("/graphql", graphql, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", graphql),
            Route("/assets/{path:path}", graphql.webapp.asset, methods=["GET"]),
            Route("/{path:path}", graphql.webapp.page, methods=["GET"]),  # last: the app's client routes
        ],
        lifespan=lifespan,
    )
    app.state.platform = platform
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    return app


def _start_jobs(platform: Platform) -> None:
    from dynaforge.jobs import Jobs

    platform.jobs = Jobs(platform.settings, events=platform.events)
    if platform.jobs.embedded:
        platform.jobs.start_worker()
    asyncio.get_running_loop().create_task(
        submission_service.requeue_unfinished(platform, running_too=platform.jobs.embedded), name="requeue-evaluations"
    )
    asyncio.get_running_loop().create_task(_resend_webhooks(platform), name="resend-webhooks")
    asyncio.get_running_loop().create_task(
        training_service.requeue_unfinished(platform, running_too=platform.jobs.embedded), name="requeue-training"
    )


async def _resend_webhooks(platform: Platform) -> None:
    """Deliveries left pending by a stopped server or a broker that was down are sent again."""
    from dynaforge.services import webhooks

    try:
        ids = await webhooks.pending_ids(platform)
        # An in-process broker lost its messages when the server stopped; Redis keeps them (and their delays).
        if ids and platform.jobs is not None and platform.jobs.embedded:
            platform.jobs.send_webhooks(ids)
    except Exception:
        log.exception("pending webhook deliveries could not be sent again; they are retried at the next start")


async def _retry_pending(platform: Platform) -> None:
    """Predict examples stored without a prediction, and ask the judge about those whose judge's verdict is still
    waited for, every ``pending_retry_s`` seconds, for the server's life."""
    from dynaforge.services import verdicts

    while True:
        await asyncio.sleep(platform.settings.pending_retry_s)
        try:
            while await example_service.predict_pending(platform) > 0:
                pass
            while await verdicts.judge_pending(platform) > 0:
                pass
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("predicting pending examples or judging waiting ones failed; trying again later")


async def _collect_artifacts(platform: Platform) -> None:
    """Have the job system delete the model artifacts nothing names, every ``artifact_gc_interval_s`` seconds."""
    while True:
        await asyncio.sleep(platform.settings.artifact_gc_interval_s)
        try:
            if platform.jobs is not None:
                platform.jobs.collect_artifacts()
        except Exception:
            log.exception("could not send the job that collects model artifacts; trying again at the next period")


async def _send_unsent_evaluations(platform: Platform) -> None:
    """Run the queued evaluations no process sent (a data set imported with the CLI while the server runs), every
    ``queued_sweep_s`` seconds: the in-process broker is this server's alone, so nobody else would."""
    from dynaforge.services.evaluation_jobs import send_unsent

    while True:
        await asyncio.sleep(platform.settings.queued_sweep_s)
        try:
            await send_unsent(platform)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("could not look for queued evaluations; trying again at the next period")


async def _warm(platform: Platform) -> None:
    """Start the model worker and load each open round's target models (and every task's defaults) in the
    background, so that the first annotator does not wait for them; then ask each open round's targets about
    their task's sample examples once (:func:`dynaforge.services.examples.probe_targets`: a target that cannot
    answer at all is logged with its task named, and shown to the task's owners and admins in ``Task.problems``)."""
    await platform.inference.start()
    specs = await task_service.open_round_targets(platform)
    for task in platform.plugins.registry.tasks.values():
        specs.extend(task.default_target_models)
    seen = set()
    for spec in specs:
        if spec_key(spec) in seen:
            continue
        seen.add(spec_key(spec))
        try:
            await platform.inference.warm_up(spec)
        except Exception:
            log.exception("could not load target model %s", spec.name)
    try:
        await example_service.probe_targets(platform)
    except Exception:
        log.exception("could not ask the round targets about their tasks' sample examples")
