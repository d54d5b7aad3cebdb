"""Uploaded models in the API: the ``uploadModel`` mutation (a GraphQL multipart request carrying an archive of a
Hugging Face model folder; see :mod:`dynaforge.services.model_uploads`)."""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry.file_uploads import Upload
from strawberry.scalars import JSON

from dynaforge.api.context import Info
from dynaforge.api.contexts import binary_upload
from dynaforge.api.errors import (
    InvalidInput,
    NotAuthenticated,
    NotFound,
    QuotaExceeded,
    errors_as_union,
)
from dynaforge.api.models import Model, ModelCardInput, _card
from dynaforge.services import model_uploads as upload_service


@strawberry.input(
    description="A Hugging Face model folder to submit to a task, as an archive: it is checked, stored by content "
    "hash and evaluated from the stored copy on every scoring data set. Signed-in users; it counts against the "
    "task's 24-hour allowance of submissions like submitModel, and its files against your storage quota (what your "
    "models' uploads take, each stored copy counted once)."
)
class UploadModelInput:
    task_code: str = strawberry.field(description="The code of the task to submit to.")
    name: str = strawberry.field(description="The model's display name, 1 to 100 characters.")
    file: Upload = strawberry.field(
        description="The archive (.tar.gz, .tar or .zip) of the folder that save_pretrained(folder, "
        "safe_serialization=True) and the tokenizer's save_pretrained wrote: config.json, tokenizer files, "
        "*.safetensors weights, optionally README.md; no pickle (*.bin, *.pt), no code, no auto_map. Sent as a "
        "GraphQL multipart request with the header 'Apollo-Require-Preflight: true' and a Content-Length; at most "
        "2 GiB in all, 1 GiB a file and 64 files unless the server is configured otherwise."
    )
    options: JSON | None = strawberry.field(
        default=None,
        description="How the model reads the task (the transformers backend's keys, see docs/model-server.md): "
        "task, label_map, text_fields, target_field, max_length, question_field, context_field, doc_stride, "
        "max_answer_tokens; null: the defaults.",
    )
    card: ModelCardInput | None = strawberry.field(default=None, description="Its model card; null: an empty one.")
    published: bool = strawberry.field(
        default=False,
        description="true puts it on the leaderboard for everyone who can see the task; false (the default) keeps "
        "it to you, the task's owners and admins until you publish it with updateModel.",
    )
    anonymous: bool = strawberry.field(
        default=False, description="true hides your name from everyone but the task's owners and admins."
    )


@strawberry.type(description="The uploaded model is stored and its evaluations are queued.")
class ModelUploaded:
    model: Model = strawberry.field(
        description="The new model, as its submitter sees it: backend transformers, config {artifact: digest, ...}."
    )
    artifact: str = strawberry.field(
        description="The stored copy's digest (SHA-256 of its files' manifest); submitModel and setTargetModels "
        'accept it as the transformers config {"artifact": digest}.'
    )
    files: list[str] = strawberry.field(description="The files stored, by name.")
    size: float = strawberry.field(description="Their size in bytes, all together.")
    stored: bool = strawberry.field(
        description="false when the same files were uploaded before: that copy is used, nothing was stored twice."
    )


UploadModelResult = Annotated[
    ModelUploaded | InvalidInput | NotAuthenticated | NotFound | QuotaExceeded,
    strawberry.union(
        "UploadModelResult",
        description="ModelUploaded, or why not (nothing is submitted or stored then): InvalidInput (not a multipart "
        "upload, an archive refused, each problem with its rule: pickle, code, file_type, link, path, duplicate, "
        "max_bytes, max_items, remote_code, safetensors, json, required, archive; quota: your models' stored files "
        "would pass the server's MODEL_UPLOAD_QUOTA_MB; or a bad name, option or card), "
        "NotAuthenticated, NotFound (no such task you can see), QuotaExceeded (the task's 24-hour allowance is used).",
    ),
]


@strawberry.type
class ModelUploadMutation:
    @strawberry.mutation(
        description="Upload a Hugging Face model folder as an archive and submit it to a task: the safe way to "
        "submit weights (checked, stored by content hash, loaded without remote code, safetensors only)."
    )
    @errors_as_union
    async def upload_model(
        self,
        info: Info,
        input: Annotated[UploadModelInput, strawberry.argument(description="The task, the archive and its card.")],
    ) -> UploadModelResult:
        stream, _ = binary_upload(input.file)
        uploaded = await upload_service.upload_model(
            *info.context.caller,
            task_code=input.task_code,
            name=input.name,
            archive=stream,
            options=input.options,
            card=_card(input.card),
            published=input.published,
            anonymous=input.anonymous,
        )
        artifact = uploaded.artifact
        return ModelUploaded(
            model=Model.from_row(uploaded.model, privileged=True),
            artifact=artifact.digest,
            files=artifact.files,
            size=float(artifact.size),
            stored=artifact.created,
        )
