"""Importing through the API: examples and evaluation data sets from a file one of the task's importers reads, sent
as a GraphQL multipart request (like ``uploadContexts``), for the task's owners and admins. The CLI's ``dynaforge
import`` and ``dynaforge datasets import`` do the same from a path on the server."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import strawberry
from strawberry.file_uploads import Upload

from dynaforge.api.context import Info
from dynaforge.api.contexts import binary_upload
from dynaforge.api.datasets import Dataset, DatasetsCreated
from dynaforge.api.enums import DatasetAccess, raw
from dynaforge.api.errors import Forbidden, InvalidInput, NotAuthenticated, NotFound, errors_as_union
from dynaforge.errors import FieldError
from dynaforge.errors import InvalidInput as DomainInvalidInput
from dynaforge.services import datasets as dataset_service
from dynaforge.services import imports as import_service


@contextlib.contextmanager
def saved_upload(upload: Any, max_bytes: int) -> Iterator[Path]:
    """The uploaded file written to a temporary file (keeping its name's suffix, which some importers read), at
    most ``max_bytes``; removed when the block ends."""
    stream, filename = binary_upload(upload)
    stream.seek(0)
    suffix = Path(filename or "upload").suffix[:16]
    handle, name = tempfile.mkstemp(prefix="dynaforge-import-", suffix=suffix)
    path = Path(name)
    try:
        with os.fdopen(handle, "wb") as out:
            total = 0
            while chunk := stream.read(1 << 16):
                total += len(chunk)
                if total > max_bytes:
                    raise DomainInvalidInput.from_errors(
                        [FieldError("file", "max_bytes", f"is larger than {max_bytes} bytes; split it")]
                    )
                out.write(chunk)
        yield path
    finally:
        path.unlink(missing_ok=True)


@strawberry.input(description="A file of examples to import into a task, read by one of the task's importers.")
class ImportExamplesInput:
    task_code: str = strawberry.field(description="The task's code (Task.code).")
    file: Upload = strawberry.field(description="The file, sent as a GraphQL multipart request.")
    format: str = strawberry.field(
        default="jsonl", description="The importer's name (`jsonl`: Dynaforge's own export; plugins add others)."
    )
    round: int | None = strawberry.field(
        default=None, description="The round the examples go into (Round.number); null: the current round."
    )
    username: str | None = strawberry.field(
        default=None,
        description="Their author: yourself or a machine account, never another person (Forbidden); null: the "
        "`importer` service account.",
    )


@strawberry.type(description="How many records of the file were left out, and why.")
class SkippedRecords:
    reason: str = strawberry.field(description="Why, in the importer's words.")
    count: int = strawberry.field(description="How many records.")


@strawberry.type(description="Every usable example of the file was stored (or, on any error, none).")
class ExamplesImported:
    count: int = strawberry.field(description="How many examples were stored.")
    round_number: int = strawberry.field(description="The round they went into.")
    username: str = strawberry.field(description="Their author.")
    skipped: list[SkippedRecords] = strawberry.field(description="Records the importer leaves out by design.")


@strawberry.input(description="A file of complete examples to add as an evaluation data set.")
class ImportDatasetInput:
    task_code: str = strawberry.field(description="The task's code (Task.code).")
    name: str = strawberry.field(description="The data set's name: 1 to 100 lowercase letters, digits, _ . -.")
    file: Upload = strawberry.field(description="The file, sent as a GraphQL multipart request.")
    format: str = strawberry.field(default="jsonl", description="The importer's name (see importExamples).")
    access: DatasetAccess = strawberry.field(
        default=DatasetAccess.SCORING, description="Who sees it; a SCORING set gets its perturbed copies."
    )
    description: str = strawberry.field(default="", description="What the set is, for people.")
    public_share: float | None = strawberry.field(
        default=None,
        description="A SCORING set: the share of its items (more than 0, at most 1) whose figures every model shows "
        "before the set's round ends, the rest held (null: the server's SCORING_PUBLIC_SHARE, half). 1 for a set "
        "whose gold is public anyway, a published benchmark.",
    )


ImportExamplesResult = Annotated[
    ExamplesImported | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "ImportExamplesResult",
        description="ExamplesImported on success. The other members are the expected failures: unusable records "
        "named by line, an unknown format or a file too large (InvalidInput; nothing is stored), not signed in, not "
        "an owner or admin, or another person named as the author (Forbidden), no such task, round or user "
        "(NotFound).",
    ),
]
ImportDatasetResult = Annotated[
    DatasetsCreated | InvalidInput | NotAuthenticated | Forbidden | NotFound,
    strawberry.union(
        "ImportDatasetResult",
        description="DatasetsCreated on success (the set and, for SCORING, its perturbed copies). The other members "
        "are the expected failures, as for importExamples.",
    ),
]


@strawberry.type
class ImportMutation:
    @strawberry.mutation(
        description="Task owners and admins import examples from a file (a GraphQL multipart request with the "
        "header Apollo-Require-Preflight: true). All or nothing: a wrong record stores none, each named by line."
    )
    @errors_as_union
    async def import_examples(
        self, info: Info, input: Annotated[ImportExamplesInput, strawberry.argument(description="The file and task.")]
    ) -> ImportExamplesResult:
        p = info.context.platform
        with saved_upload(input.file, p.settings.context_upload_max_bytes) as path:
            report = await import_service.import_examples(
                p,
                info.context.actor,
                task_code=input.task_code,
                format=input.format,
                path=path,
                round_number=input.round,
                username=input.username,
            )
        return ExamplesImported(
            count=report.count,
            round_number=report.round_number,
            username=report.username,
            skipped=[SkippedRecords(reason=r, count=n) for r, n in sorted(report.skipped.items())],
        )

    @strawberry.mutation(
        description="Task owners and admins add an evaluation data set from a file of complete examples (a GraphQL "
        "multipart request, as importExamples). All or nothing."
    )
    @errors_as_union
    async def import_dataset(
        self, info: Info, input: Annotated[ImportDatasetInput, strawberry.argument(description="The file and set.")]
    ) -> ImportDatasetResult:
        p = info.context.platform
        with saved_upload(input.file, p.settings.context_upload_max_bytes) as path:
            made = await dataset_service.import_dataset(
                p,
                info.context.actor,
                input.task_code,
                input.name,
                format=input.format,
                path=path,
                access=raw(input.access),
                description=input.description,
                public_share=input.public_share,
            )
        return DatasetsCreated(datasets=[Dataset.from_row(d) for d in made])
