"""``GET /export/{task_code}?round=N&format=jsonl|hf&status=S``: download collected data over HTTP.

Authenticated like ``/graphql`` (``Authorization: Bearer <token>``). ``jsonl`` streams JSON Lines page by page;
``hf`` writes the Hugging Face folder to a temporary directory, streams it as a zip and deletes it afterwards.
Expected failures are JSON ``{"error": {"code", "message"}}`` with 400, 401, 403, 404 or 429 (more than
``DYNAFORGE_EXPORTS_PER_MINUTE`` downloads a minute).
"""

from __future__ import annotations

import asyncio
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
from dynaforge.services import auth as auth_service
from dynaforge.services import exports as export_service
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


def _query(request: Request) -> tuple[int | None, str, list[str] | None]:
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
    fmt = (params.get("format") or "jsonl").lower()
    if fmt not in export_service.FORMATS:
        problems.append(errors.FieldError("format", "choice", f"must be one of {', '.join(export_service.FORMATS)}"))
    statuses = [s for value in params.getlist("status") for s in value.split(",") if s.strip()] or None
    if problems:
        raise errors.InvalidInput.from_errors(problems)
    return round_number, fmt, statuses


async def export_endpoint(request: Request) -> Response:
    """The route handler; ``request.app.state.platform`` is the platform."""
    platform: Platform = request.app.state.platform
    try:
        actor = require_user(await auth_service.authenticate(platform, bearer_token(request.headers)))
        round_number, fmt, statuses = _query(request)
        plan = await export_service.prepare_download(
            platform, actor, request.path_params["task_code"], round_number=round_number, statuses=statuses
        )
        if fmt == "jsonl":
            return _jsonl_response(platform, plan)
        return await _hf_response(platform, plan)
    except errors.DynaforgeError as exc:
        return error_response(exc)


def _attachment(filename: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="{filename}"', "Cache-Control": "no-store"}


def _jsonl_response(platform: Platform, plan: export_service.ExportPlan) -> StreamingResponse:
    async def body() -> AsyncIterator[bytes]:
        try:
            async for chunk in export_service.iter_jsonl(platform, plan):
                yield chunk
        except Exception:  # the status line is sent already: log it; the client sees a truncated body
            log.exception("export of %s broke off", plan.code)
            raise

    headers = _attachment(f"{plan.basename}.jsonl")
    headers["X-Dynaforge-Examples"] = str(plan.total)
    return StreamingResponse(body(), media_type="application/x-ndjson", headers=headers)


async def _hf_response(platform: Platform, plan: export_service.ExportPlan) -> Response:
    workdir = Path(tempfile.mkdtemp(prefix="dynaforge-export-"))
    try:
        folder = workdir / plan.basename
        await export_service.write_hf(platform, plan, folder)
        archive = workdir / f"{plan.basename}.zip"
        await asyncio.to_thread(_zip, folder, archive)
        await asyncio.to_thread(shutil.rmtree, folder)
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
    # The background task removes the directory too if the client went away before the body was read.
    return StreamingResponse(
        body(),
        media_type="application/zip",
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
