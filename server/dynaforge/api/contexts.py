"""Context files in the API: the ``uploadContexts`` mutation (a GraphQL multipart request) and its file formats.
``ContextStrategy`` (what ``nextContext`` takes) lives with the other enums in :mod:`dynaforge.api.enums`."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

import strawberry
from cross_web import HTTPException
from strawberry.file_uploads import Upload
from strawberry.scalars import JSON

from dynaforge.api.context import Info
from dynaforge.api.errors import Conflict, Forbidden, InvalidInput, NotAuthenticated, NotFound, errors_as_union
from dynaforge.api.mutations import ContextsAdded
from dynaforge.api.node import global_id, parse_id
from dynaforge.api.types.context_type import ContextType
from dynaforge.errors import FieldError
from dynaforge.errors import InvalidInput as DomainInvalidInput
from dynaforge.services import contexts as context_service


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


@strawberry.input(description="An owner's edit of a context: what is left out stays as it is.")
class UpdateContextInput:
    id: strawberry.ID = strawberry.field(description="The context to edit (Context.id); it must be in service.")
    fields: JSON | None = strawberry.field(
        default=None, description="The new values of the task's CONTEXT fields (the task's shape); null: unchanged."
    )
    tag: str | None = strawberry.field(default=None, description="A new tag (1 to 100 characters); null: unchanged.")


@strawberry.input(description="A context to take out of service.")
class DeleteContextInput:
    id: strawberry.ID = strawberry.field(description="The context (Context.id).")


@strawberry.type(description="The context was replaced by an edited successor in the same round.")
class ContextUpdated:
    context: ContextType = strawberry.field(description="The successor, now in service (a new id).")
    previous: ContextType = strawberry.field(description="The retired original, kept for its examples.")


@strawberry.type(description="The context is out of service: no longer served, listed or copied to the next round.")
class ContextDeleted:
    context: ContextType = strawberry.field(description="The retired context, kept for its examples.")


UpdateContextResult = Annotated[
    ContextUpdated | InvalidInput | NotAuthenticated | Forbidden | NotFound | Conflict,
    strawberry.union(
        "UpdateContextResult",
        description="ContextUpdated on success. The other members are the expected failures: fields the task refuses "
        "(InvalidInput), not signed in, not an owner or admin (Forbidden), no such context (NotFound), already "
        "retired (Conflict: edit its successor).",
    ),
]
DeleteContextResult = Annotated[
    ContextDeleted | InvalidInput | NotAuthenticated | Forbidden | NotFound | Conflict,
    strawberry.union(
        "DeleteContextResult",
        description="ContextDeleted on success. The other members are the expected failures: not an id "
        "(InvalidInput), not signed in, not an owner or admin (Forbidden), no such context (NotFound), already "
        "retired (Conflict).",
    ),
]


@strawberry.type
class ContextMutation:
    @strawberry.mutation(
        description="Task owners and admins edit a context. Contexts never change in place (examples point into "
        "their text): the original is retired and a successor with the new values takes its place in the round."
    )
    @errors_as_union
    async def update_context(
        self, info: Info, input: Annotated[UpdateContextInput, strawberry.argument(description="The edit.")]
    ) -> UpdateContextResult:
        new, old = await context_service.replace_context(
            *info.context.caller,
            parse_id(input.id, "id", "Context"),
            fields=input.fields,
            tag=input.tag,
        )
        return ContextUpdated(context=ContextType.from_row(new), previous=ContextType.from_row(old))

    @strawberry.mutation(
        description="Task owners and admins take a context out of service; it stays for the examples written "
        "against it."
    )
    @errors_as_union
    async def delete_context(
        self, info: Info, input: Annotated[DeleteContextInput, strawberry.argument(description="The context.")]
    ) -> DeleteContextResult:
        row = await context_service.retire_context(*info.context.caller, parse_id(input.id, "id", "Context"))
        return ContextDeleted(context=ContextType.from_row(row))

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
