"""Context files in the API: the ``uploadContexts`` mutation (a GraphQL multipart request) and its file formats.
``ContextStrategy`` (what ``nextContext`` takes) lives with the other enums in :mod:`dynaforge.api.enums`."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

import strawberry
from cross_web import HTTPException
from strawberry.file_uploads import Upload

from dynaforge.api.context import RequestContext
from dynaforge.api.errors import Forbidden, InvalidInput, NotAuthenticated, NotFound, errors_as_union
from dynaforge.api.mutations import ContextsAdded
from dynaforge.api.node import global_id
from dynaforge.errors import FieldError
from dynaforge.errors import InvalidInput as DomainInvalidInput
from dynaforge.services import contexts as context_service

Info = strawberry.Info[RequestContext]


@strawberry.enum(description="Formats of context files.")
class ContextFileFormat(Enum):
    JSONL = strawberry.enum_value(
        "jsonl", description="One JSON object per line: the context fields and an optional tag."
    )
    CSV = strawberry.enum_value(
        "csv", description="UTF-8 CSV whose header names the context fields and an optional tag column."
    )


@strawberry.input(description="A file of contexts for a task's current round, all or nothing.")
class UploadContextsInput:
    task_code: str = strawberry.field(description="The code of the task (Task.code).")
    file: Upload = strawberry.field(
        description="The file, sent as a GraphQL multipart request with the header 'Apollo-Require-Preflight: "
        "true' and a Content-Length (else HTTP 400, 411 or 413); at most 10 MiB and 20000 contexts unless the server "
        "is configured otherwise."
    )
    format: ContextFileFormat | None = strawberry.field(
        default=None, description="Default: from the file name (.jsonl, .ndjson or .csv)."
    )
    tag: str | None = strawberry.field(
        default=None, description="The tag of rows that do not give their own, 1 to 100 characters; null: none."
    )


UploadContextsResult = Annotated[
    ContextsAdded | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "UploadContextsResult",
        description="ContextsAdded: every context of the file was added. The other members are the expected "
        "failures, and add none: InvalidInput (not a multipart upload, an unknown format, a file over the size or "
        "row limit, or wrong rows, each named by line and field), NotAuthenticated, Forbidden (not an owner of the "
        "task or an admin), NotFound (no such task you can see, or it has no round yet).",
    ),
]


def binary_upload(upload: Any) -> tuple[Any, str | None]:
    """The uploaded file's binary stream and name; a JSON request cannot carry a file."""
    stream = getattr(upload, "file", None)
    if stream is None or not hasattr(stream, "readline"):
        raise DomainInvalidInput.from_errors(
            [
                FieldError(
                    "file",
                    "upload",
                    "send the file as a GraphQL multipart request (a form with operations, map and the file), "
                    "with the header Apollo-Require-Preflight: true",
                )
            ]
        )
    return stream, getattr(upload, "filename", None)


@strawberry.type
class ContextMutation:
    @strawberry.mutation(
        description="Task owners and admins add every context of a JSONL or CSV file to the current round. All or "
        "nothing: a wrong row adds none, and each problem is named by line and field ('line 7.passage')."
    )
    @errors_as_union
    async def upload_contexts(
        self,
        info: Info,
        input: Annotated[UploadContextsInput, strawberry.argument(description="The task and the file.")],
    ) -> UploadContextsResult:
        stream, filename = binary_upload(input.file)
        stream.seek(0)
        added = await context_service.upload_contexts(
            *info.context.caller,
            input.task_code,
            stream,
            filename=filename,
            file_format=None if input.format is None else context_service.ContextFileFormat[input.format.name],
            tag=input.tag,
        )
        return ContextsAdded(ids=[global_id("Context", i) for i in added.ids])


#: Room for the multipart envelope (the operations and map fields, part headers) beyond the largest allowed file.
MULTIPART_OVERHEAD_BYTES = 256 * 1024
PREFLIGHT_HEADERS = ("apollo-require-preflight", "x-apollo-operation-name")


def check_multipart_request(headers: Any, max_file_bytes: int) -> None:
    """Refuse a multipart request before its body is read, unless it is safe and small enough.

    CSRF: a browser posts multipart/form-data cross-site without asking the server first, so such a request must
    carry a non-empty ``Apollo-Require-Preflight`` (or ``X-Apollo-Operation-Name``) header: a custom header makes the
    browser ask first (a CORS preflight), which only origins the server allows pass. Size: the request must declare a
    Content-Length within the upload limit, so an oversized body is refused without being stored.
    """
    if not any((headers.get(name) or "").strip() for name in PREFLIGHT_HEADERS):
        raise HTTPException(
            400,
            "Multipart requests must send the header 'Apollo-Require-Preflight: true' (protection against "
            "cross-site request forgery)",
        )
    length = (headers.get("content-length") or "").strip()
    if not length.isdigit():
        raise HTTPException(411, "Multipart requests must send a Content-Length header")
    limit = max_file_bytes + MULTIPART_OVERHEAD_BYTES
    if int(length) > limit:
        raise HTTPException(
            413, f"The request has {length} bytes, more than the {limit} allowed; split the file and upload each part"
        )
