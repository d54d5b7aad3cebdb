"""Model uploads: a model builder sends a Hugging Face model folder as an archive, the safe way onto a leaderboard.

The archive is checked and unpacked off the event loop (:mod:`dynaforge.model_archive`: config, tokenizer files and
safetensors weights only, no pickle, no code, within ``MODEL_UPLOAD_MAX_MB``), stored by content hash in the model
store (:mod:`dynaforge.model_artifacts`), and submitted as a ``transformers`` model whose configuration names the
stored copy, ``{"artifact": "<sha256>", ...}``: evaluations load that copy, safetensors only, without remote code.
Everything else is :func:`~dynaforge.services.submissions.submit_model`'s: the caller must see the task, the task's
allowance of submissions per 24 hours, the card, the evaluations queued on every scoring set.

Storage is bounded: the allowance is checked before the archive is unpacked and again before its files are stored,
each user's models may keep ``MODEL_UPLOAD_QUOTA_MB`` in the store (:func:`~dynaforge.services.artifacts.check_quota`),
one user's uploads run one at a time in a process, and what a refused or failed submission stored is deleted
(:func:`~dynaforge.services.artifacts.forget_upload`); collection deletes whatever else nothing names.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, BinaryIO

from dynaforge.aio import loop_semaphore
from dynaforge.db.models import Evaluation, ModelRow
from dynaforge.errors import FieldError, InvalidInput
from dynaforge.model_archive import ArchiveLimits
from dynaforge.model_artifacts import ArtifactStore, StoredArtifact, just_stored
from dynaforge.services import artifacts as artifact_service
from dynaforge.services import submissions as submission_service
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor, require_human
from dynaforge.services.platform import Platform

BACKEND = "transformers"
#: What an uploader may not set of the backend's configuration: where the model is and how it is fetched (the
#: archive is the model). Every other key of the backend's schema says how the model reads the task's inputs.
LOCATION_KEYS = frozenset({"path", "revision", "local_files_only", "artifact"})
_PLACEHOLDER = "0" * 64  # stands for the digest while the options are checked, before anything is stored


@dataclass
class UploadedModel:
    """The submitted model, its queued evaluations, and the stored artifact it points at."""

    model: ModelRow
    evaluations: list[Evaluation]
    artifact: StoredArtifact


def check_options(p: Platform, name: str, options: Any) -> dict[str, Any]:
    """The backend options an uploader gave (``label_map``, ``text_fields``...), checked as the backend checks a
    configuration; where the model lives is not theirs to say."""
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise InvalidInput.from_errors([FieldError("options", "type", "must be a JSON object of backend options")])
    allowed = set(p.plugins.registry.backends[BACKEND].config_schema.get("properties", {})) - LOCATION_KEYS
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise InvalidInput.from_errors(
            [
                FieldError(
                    f"options.{key}",
                    "unknown",
                    f"is not an option of an uploaded model; use {', '.join(sorted(allowed))} (the archive is "
                    "the model: it has no path, revision or artifact to set)",
                )
                for key in unknown
            ]
        )
    config = {**options, "artifact": _PLACEHOLDER}
    try:
        task_service.check_target_models(p, [{"name": name, "backend": BACKEND, "config": config}], "majority")
    except InvalidInput as exc:
        # check_target_models names the entry models[0]; here it is this mutation's name and options.
        renamed = [
            FieldError(e.field.replace("models[0].config", "options").replace("models[0].", ""), e.rule, e.message)
            for e in exc.field_errors
        ]
        raise InvalidInput.from_errors(renamed) from None
    return dict(options)


async def upload_model(
    p: Platform,
    actor: Actor,
    *,
    task_code: str,
    name: str,
    archive: BinaryIO,
    options: Any = None,
    card: dict[str, Any] | None = None,
    published: bool = False,
    anonymous: bool = False,
) -> UploadedModel:
    """Check, store and submit an uploaded model folder (see the module's docstring). Every check that needs no
    unpacking runs first, and a submission refused after its files were stored deletes them: a refused submission
    leaves nothing stored."""
    actor = require_human(actor)
    view = await task_service.get_task(p, actor, task_code)
    task_service.check_backend_allowed(p, actor, BACKEND, config={"artifact": _PLACEHOLDER})
    options = check_options(p, name, options)
    submission_service.check_card(card)
    store = ArtifactStore.from_settings(p.settings)
    # One upload of a user at a time in this process: concurrent ones would each pass the checks below before any
    # model is written, and each unpack its archive into staging.
    async with loop_semaphore(f"upload_model:{actor.person_id}", 1):
        await check_allowance(p, view, actor, task_code)
        await artifact_service.check_quota(p, actor, store)
        staged = await asyncio.to_thread(store.stage_archive, archive, ArchiveLimits.from_settings(p.settings))
        try:
            # Unpacking takes a while: both again, the archive's size known, right before storing.
            await check_allowance(p, view, actor, task_code)
            await artifact_service.check_quota(p, actor, store, staged)
            stored = await asyncio.to_thread(store.commit, staged)
        finally:
            await asyncio.to_thread(staged.discard)
        try:
            # check_throttle again, in the transaction that writes the model: another process may have used the
            # allowance meanwhile.
            with just_stored(stored.digest):
                model, evaluations = await submission_service.submit_model(
                    p,
                    actor,
                    task_code=task_code,
                    name=name,
                    backend=BACKEND,
                    config={**options, "artifact": stored.digest},
                    card=card,
                    published=published,
                    anonymous=anonymous,
                )
        except BaseException:
            if stored.created:  # what this upload stored, unless something names it now
                await artifact_service.forget_upload(p, store, stored.digest, stored.stamp)
            raise
    return UploadedModel(model, evaluations, stored)


async def check_allowance(p: Platform, view: task_service.TaskView, actor: Actor, task_code: str) -> None:
    """RateLimited when a submission of ``actor``'s would be refused now (the task's allowance, read only): before
    an archive is unpacked and stored. :func:`~dynaforge.services.submissions.submit_model` checks it again as it
    writes the model."""
    async with p.db.session() as s:
        await submission_service.check_throttle(s, view, actor, task_code)
