"""``GET /export/{task_code}?round=N&format=NAME&status=S``: download collected data over HTTP; and
``GET /evaluations/{id}/predictions?format=jsonl|parquet``: an evaluation item by item.

Authenticated like ``/graphql`` (``Authorization: Bearer <token>``). ``format`` is any registered export format
(default ``jsonl``; an unknown one is refused with the list of registered ones). A format that streams (``jsonl``)
is sent page by page as it is read; any other is written to a temporary directory, sent (a folder, such as ``hf``'s,
as a zip) and deleted afterwards. Expected failures are JSON ``{"error": {"code", "message"}}`` with 400, 401, 403,
404 or 429 (more than ``DYNAFORGE_EXPORTS_PER_MINUTE`` downloads a minute).
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import shutil
import tempfile
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from dynaforge import errors
from dynaforge.api.credentials import bearer_token
from dynaforge.api.node import global_id, parse_id
from dynaforge.exporters import ExportFormat
from dynaforge.services import auth as auth_service
from dynaforge.services import exports as export_service
from dynaforge.services import per_item as per_item_service
from dynaforge.services.actor import require_user
from dynaforge.services.platform import Platform

log = logging.getLogger(__name__)

_CHUNK = 1 << 16
_STATUS_CODES: dict[type, int] = {
    errors.InvalidInput: 400,
    errors.NotAuthenticated: 401,
    errors.Forbidden: 403,
    errors.NotFound: 404,
    errors.RateLimited: 429,
}


def error_response(exc: errors.DynaforgeError) -> JSONResponse:
    """The JSON body and status of an expected failure."""
    status = next((code for kind, code in _STATUS_CODES.items() if isinstance(exc, kind)), 400)
    headers = {}
    if isinstance(exc, errors.NotAuthenticated):
        headers["WWW-Authenticate"] = "Bearer"
    if isinstance(exc, errors.RateLimited):
        headers["Retry-After"] = str(max(1, round(exc.retry_after_s)))
    return JSONResponse({"error": {"code": exc.code, "message": exc.message}}, status_code=status, headers=headers)


def _query(request: Request, platform: Platform) -> tuple[int | None, ExportFormat | None, list[str] | None]:
    params = request.query_params
    problems = []
    round_number = None
    raw_round = params.get("round")
    if raw_round not in (None, ""):
        try:
            round_number = int(raw_round)
            if round_number < 1:
                raise ValueError
        except ValueError:
            problems.append(
                errors.FieldError("round", "type", "must be a round number (1, 2, ...); leave it out for every round")
            )
    fmt = None
    try:
        fmt = export_service.choose_format(platform, params.get("format") or "jsonl")
    except errors.InvalidInput as exc:
        problems.extend(exc.field_errors)
    statuses = [s for value in params.getlist("status") for s in value.split(",") if s.strip()] or None
    if problems:
        raise errors.InvalidInput.from_errors(problems)
    return round_number, fmt, statuses


async def export_endpoint(request: Request) -> Response:
    """The route handler; ``request.app.state.platform`` is the platform."""
    platform: Platform = request.app.state.platform
    try:
        actor = require_user(await auth_service.authenticate(platform, bearer_token(request.headers)))
        round_number, fmt, statuses = _query(request, platform)
        assert fmt is not None  # _query raised otherwise
        plan = await export_service.prepare_download(
            platform, actor, request.path_params["task_code"], round_number=round_number, statuses=statuses
        )
        if (chunks := fmt.stream(export_service.export_of(platform, plan))) is not None:
            return _streamed_response(fmt, plan, chunks)
        return await _written_response(platform, fmt, plan)
    except errors.DynaforgeError as exc:
        return error_response(exc)


def _say_why_empty(headers: dict[str, str], plan: export_service.ExportPlan) -> None:
    """An export with no example says why in ``X-Dynaforge-Export-Note`` (clients show it: an empty file alone
    does not tell a reader that the round is not published yet)."""
    reason = plan.empty_reason
    if reason:
        headers["X-Dynaforge-Export-Note"] = reason.encode("ascii", "replace").decode("ascii")


def _attachment(filename: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="{filename}"', "Cache-Control": "no-store"}


def _streamed_response(
    fmt: ExportFormat, plan: export_service.ExportPlan, chunks: AsyncIterator[bytes]
) -> StreamingResponse:
    async def body() -> AsyncIterator[bytes]:
        try:
            async for chunk in chunks:
                yield chunk
        except Exception:  # the status line is sent already: log it; the client sees a truncated body
            log.exception("export of %s broke off", plan.code)
            raise

    headers = _attachment(f"{plan.basename}{fmt.extension}")
    headers["X-Dynaforge-Examples"] = str(plan.total)
    _say_why_empty(headers, plan)
    return StreamingResponse(body(), media_type=fmt.media_type, headers=headers)


async def _written_response(platform: Platform, fmt: ExportFormat, plan: export_service.ExportPlan) -> Response:
    """The format writes into a temporary directory; a folder is zipped. The directory goes once it is sent."""
    workdir = Path(tempfile.mkdtemp(prefix="dynaforge-export-"))
    try:
        written = workdir / f"{plan.basename}{fmt.extension}"
        await export_service.write(platform, plan, fmt, written)
        archive = written
        if fmt.folder:
            archive = workdir / f"{plan.basename}.zip"
            await asyncio.to_thread(_zip, written, archive)
            await asyncio.to_thread(shutil.rmtree, written)
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise

    async def body() -> AsyncIterator[bytes]:
        try:
            f = await asyncio.to_thread(archive.open, "rb")
            try:
                while chunk := await asyncio.to_thread(f.read, _CHUNK):
                    yield chunk
            finally:
                f.close()
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    headers = _attachment(archive.name)
    headers["Content-Length"] = str(archive.stat().st_size)
    headers["X-Dynaforge-Examples"] = str(plan.total)
    _say_why_empty(headers, plan)
    # The background task removes the directory too if the client went away before the body was read.
    return StreamingResponse(
        body(),
        media_type="application/zip" if fmt.folder else fmt.media_type,
        headers=headers,
        background=BackgroundTask(shutil.rmtree, workdir, ignore_errors=True),
    )


def _zip(folder: Path, archive: Path) -> None:
    """Zip ``folder`` under its own name; parquet is compressed already, so it is stored as is."""
    with zipfile.ZipFile(archive, "w") as z:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                kind = zipfile.ZIP_STORED if path.suffix == ".parquet" else zipfile.ZIP_DEFLATED
                z.write(path, Path(folder.name) / path.relative_to(folder), compress_type=kind)


# --------------------------------------------------------------------------- per-item predictions

#: The formats of ``GET /evaluations/{id}/predictions``: JSON lines (streamed) and Parquet.
PREDICTION_FORMATS = {"jsonl": "application/x-ndjson", "parquet": "application/vnd.apache.parquet"}


def prediction_records(found: per_item_service.ItemPredictions) -> list[dict[str, object]]:
    """The download's records: one per item, in the set's order, named with the API's global ids."""
    evaluation = global_id("Evaluation", found.evaluation.id)
    model = global_id("Model", found.model.id)
    dataset = global_id("Dataset", found.dataset.id)
    return [
        {
            "evaluation": evaluation,
            "model": model,
            "dataset": dataset,
            "item": global_id("DatasetItem", f"{found.dataset.id}:{r.item.position}"),
            "position": r.item.position,
            "fields": r.item.fields,
            "output": r.output,
            "prediction": r.prediction,
            "unusable": r.unusable,
            "fooled": r.fooled,
            "right": r.right,
        }
        for r in found.results
    ]


def _parquet(records: list[dict[str, object]]) -> bytes:
    """One row per item; the free-form values (fields, output, prediction) as JSON text, the rest typed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def text(value: object) -> str | None:
        return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)

    table = pa.table(
        {
            "evaluation": pa.array([r["evaluation"] for r in records], pa.string()),
            "model": pa.array([r["model"] for r in records], pa.string()),
            "dataset": pa.array([r["dataset"] for r in records], pa.string()),
            "item": pa.array([r["item"] for r in records], pa.string()),
            "position": pa.array([r["position"] for r in records], pa.int64()),
            "fields": pa.array([text(r["fields"]) for r in records], pa.string()),
            "output": pa.array([text(r["output"]) for r in records], pa.string()),
            "prediction": pa.array([text(r["prediction"]) for r in records], pa.string()),
            "unusable": pa.array([r["unusable"] for r in records], pa.string()),
            "fooled": pa.array([r["fooled"] for r in records], pa.bool_()),
            "right": pa.array([r["right"] for r in records], pa.bool_()),
        }
    )
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


async def predictions_endpoint(request: Request) -> Response:
    """``GET /evaluations/{id}/predictions?format=jsonl|parquet``: an evaluation item by item (its set's items with
    their gold, the model's output, the task's reading of it, ``fooled`` and ``right``), for those who may see the
    set's gold (:func:`dynaforge.services.per_item.item_predictions`). ``id`` is the Evaluation's API id."""
    platform: Platform = request.app.state.platform
    try:
        actor = require_user(await auth_service.authenticate(platform, bearer_token(request.headers)))
        name = request.query_params.get("format") or "jsonl"
        if name not in PREDICTION_FORMATS:
            raise errors.InvalidInput(f"Unknown format {name!r}; use one of: {', '.join(PREDICTION_FORMATS)}")
        evaluation_id = parse_id(request.path_params["evaluation_id"], "id", "Evaluation")
        found = await per_item_service.item_predictions(platform, actor, evaluation_id)
        records = prediction_records(found)
    except errors.DynaforgeError as exc:
        return error_response(exc)
    headers = _attachment(f"{found.basename}.{name}")
    headers["X-Dynaforge-Items"] = str(len(records))
    if name == "parquet":
        body = await asyncio.to_thread(_parquet, records)
        return Response(body, media_type=PREDICTION_FORMATS[name], headers=headers)

    async def lines() -> AsyncIterator[bytes]:
        for record in records:
            yield (json.dumps(record, ensure_ascii=False) + "\n").encode()

    return StreamingResponse(lines(), media_type=PREDICTION_FORMATS[name], headers=headers)
