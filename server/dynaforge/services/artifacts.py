"""Uploaded model artifacts in the platform's terms: which ones rows name, how much of the store each user's models
take (``MODEL_UPLOAD_QUOTA_MB``), what a refused upload leaves behind, and collecting what nothing names
(``dynaforge artifacts collect``, and the job every ``ARTIFACT_GC_INTERVAL_S``).

A row names an artifact when a 64-hex-digit string sits anywhere in: a model's configuration, a registry entry's
configuration or weights, a round's target models, a task's settings, a declared task's or a task proposal's
definition; so do the installed tasks' default target models. Any such string counts, whatever its key: a string
that only looks like a digest keeps an artifact longer, it never deletes one too early. What no row names is deleted
once it has been neither stored nor touched for ``ARTIFACT_GC_GRACE_S``: an upload stores its artifact before its
model row exists, and a submission by digest touches it (:meth:`~dynaforge.model_artifacts.ArtifactStore.claim`)
before its row does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from sqlalchemy import select
from sqlmodel import col

from dynaforge.db.models import DeclaredTaskRow, ModelRow, RegisteredModel, Round, TaskProposal, TaskRow
from dynaforge.errors import FieldError, Forbidden, InvalidInput
from dynaforge.model_artifacts import ArtifactStore, Collected, StagedArtifact, is_digest
from dynaforge.services.actor import Actor
from dynaforge.services.platform import Platform

log = logging.getLogger(__name__)

MIB = 1024 * 1024
#: The columns whose JSON (or text) may name an artifact.
NAMING_COLUMNS = (
    ModelRow.config,
    RegisteredModel.config,
    RegisteredModel.weights,
    Round.target_models,
    TaskRow.settings,
    DeclaredTaskRow.definition,
    TaskProposal.definition,
)


def digests_in(value: Any) -> set[str]:
    """Every string in a JSON value (keys included) that could name an artifact."""
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if is_digest(item):
                found.add(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return found


async def referenced_artifacts(p: Platform) -> set[str]:
    """The digests that rows and the installed tasks name (see the module's docstring)."""
    found: set[str] = set()
    for task in p.plugins.registry.tasks.values():
        for spec in task.default_target_models:
            found |= digests_in(spec.config)
    async with p.db.session() as s:
        for column in NAMING_COLUMNS:
            for value in await s.scalars(select(col(column))):
                found |= digests_in(value)
    return found


async def stored_bytes(p: Platform, user_id: int, store: ArtifactStore) -> tuple[int, set[str]]:
    """What the artifacts that ``user_id``'s models name take in the store (each counted once), and their digests.
    An artifact no model of theirs names any more (the model was deleted) no longer counts."""
    async with p.db.session() as s:
        configs = await s.scalars(
            select(col(ModelRow.config)).where(col(ModelRow.user_id) == user_id, col(ModelRow.backend).is_not(None))
        )
        digests = set().union(*(digests_in(config) for config in configs))
    sizes = await asyncio.to_thread(lambda: [store.storage.size(digest) for digest in sorted(digests)])
    return sum(size or 0 for size in sizes), digests


async def check_quota(p: Platform, actor: Actor, store: ArtifactStore, incoming: StagedArtifact | None = None) -> None:
    """InvalidInput (on ``file``, rule ``quota``) when the artifacts ``actor``'s models name, with ``incoming`` (an
    upload not stored yet; nothing more when their models name it already), would pass ``MODEL_UPLOAD_QUOTA_MB``.
    Without ``incoming``: when they already fill it, before anything is unpacked."""
    quota_mb = p.settings.model_upload_quota_mb
    if not quota_mb:
        return
    used, named = await stored_bytes(p, actor.person_id, store)
    adds = 0 if incoming is None or incoming.digest in named else incoming.size
    over = used + adds > quota_mb * MIB if incoming is not None else used >= quota_mb * MIB
    if not over:
        return
    this = f"; this archive's files take {adds / MIB:.1f} MiB" if incoming is not None else ""
    raise InvalidInput.from_errors(
        [
            FieldError(
                "file",
                "quota",
                f"your models' uploaded files take {used / MIB:.1f} MiB of the {quota_mb} MiB each user may keep "
                f"stored (MODEL_UPLOAD_QUOTA_MB){this}: delete models you no longer need (deleteModel), then upload "
                "again",
            )
        ]
    )


async def forget_upload(p: Platform, store: ArtifactStore, digest: str, stamp: str | None) -> None:
    """Delete the artifact a refused or failed upload stored (its ``stamp`` taken as it was stored), unless a row
    names it or another upload stored or claimed it since. Never raises: what is left, collection deletes later."""
    try:
        if stamp is None or digest in await referenced_artifacts(p):
            return
        await asyncio.to_thread(store.storage.remove, digest, stamp=stamp)
    except Exception:  # noqa: BLE001 - the caller's error is the one to report
        log.warning(
            "could not delete artifact %s of a refused upload; collection deletes it later", digest, exc_info=True
        )


async def collect_artifacts(p: Platform, actor: Actor, *, dry_run: bool = False) -> Collected:
    """Delete the artifacts (in the store and in its local cache) that nothing names and that were neither stored
    nor touched in the last ``ARTIFACT_GC_GRACE_S`` seconds, with old leftovers of stopped uploads. The operator's:
    the ``dynaforge artifacts collect`` command and the periodic job. ``dry_run`` deletes nothing and says what
    would go."""
    if not actor.is_system:
        raise Forbidden("collecting unreferenced model artifacts is the operator's: run dynaforge artifacts collect")
    store = ArtifactStore.from_settings(p.settings)
    older_than = time.time() - p.settings.artifact_gc_grace_s  # before reading the rows: see ArtifactStore.collect
    referenced = await referenced_artifacts(p)
    collected = await asyncio.to_thread(store.collect, referenced, older_than, dry_run=dry_run)
    if collected.removed or collected.leftovers or collected.cached:
        log.info(
            "artifacts%s: %d unreferenced removed (%.1f MiB), %d cached copies, %d leftovers; %d kept in the grace "
            "period",
            " (dry run)" if dry_run else "",
            len(collected.removed),
            collected.freed / MIB,
            collected.cached,
            collected.leftovers,
            len(collected.young),
        )
    return collected
