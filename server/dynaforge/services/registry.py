"""The model registry: every model a task targets or trains, as an immutable, versioned record.

A round's target models are *pinned* when the round is opened or its targets are set: a task's default model that a
training recipe loads (``TrainingRecipe.loads``) is given the digest of the weights it would load now (what
``dynaforge train`` last made current in the model store, else the weights the package ships), copied into the model
store by content hash. Its configuration then names those weights (``kwargs.weights_artifact``), so the round runs
against exactly them whatever is trained later, and the registry entry says where they came from. Other targets (an
endpoint, an uploaded artifact) are registered as configured. ``Round.target_registry_ids`` lists the entries in the
order of ``Round.target_models``.

Candidates that training jobs produce are registered by :mod:`dynaforge.services.training` with their recipe,
hyper-parameters, seed, data (data sets with their hashes), held-out metrics and parent (the round's target when the
job was asked for). Nothing in the registry is ever updated but the link to the submission that evaluates a model.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from dynaforge.db.models import RegisteredModel, RegisteredModelOrigin
from dynaforge.model_artifacts import ArtifactStore
from dynaforge.model_store import ModelStore
from dynaforge.services.platform import Platform
from dynaforge.tasks.base import ModelSpec, Task, TrainingRecipe


def spec_sha256(backend: str, config: dict[str, Any]) -> str:
    """SHA-256 of a model's backend and configuration as canonical JSON: the same model, the same hash."""
    text = json.dumps({"backend": backend, "config": config}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Pinned:
    """A target model with its weights pinned, and what the registry records about it."""

    spec: ModelSpec
    origin: str
    weights: str | None
    recipe: TrainingRecipe | None = None


def _recipe_for(task: Task, spec: ModelSpec) -> TrainingRecipe | None:
    return next((r for r in task.training_recipes if r.loads(spec)), None)


def _weights_of(p: Platform, task: Task, spec: ModelSpec) -> str | None:
    backend = p.plugins.registry.backends.get(spec.backend)
    found = backend.artifacts(spec.config) if backend is not None else []
    return str(found[0]) if found else None


def _pin_one(p: Platform, task: Task, spec: ModelSpec) -> Pinned:
    """Blocking (it may copy weights into the store): run it on a thread."""
    recipe = _recipe_for(task, spec)
    weights = _weights_of(p, task, spec)
    if recipe is None or weights is not None:
        return Pinned(spec, RegisteredModelOrigin.CONFIGURED, weights, recipe)
    current = ModelStore.from_settings(p.settings).current(task.code, recipe.model)
    if current is not None:
        folder, origin = current.path, RegisteredModelOrigin.STORE
    elif recipe.shipped is not None and Path(recipe.shipped).is_dir():
        folder, origin = Path(recipe.shipped), RegisteredModelOrigin.SHIPPED
    else:  # nothing to pin: the factory finds its weights some other way
        return Pinned(spec, RegisteredModelOrigin.CONFIGURED, None, recipe)
    digest = ArtifactStore.from_settings(p.settings).add_folder(folder).digest
    kwargs = {**(spec.config.get("kwargs") or {}), "weights_artifact": digest}
    pinned = ModelSpec(name=spec.name, backend=spec.backend, config={**spec.config, "kwargs": kwargs})
    return Pinned(pinned, origin, digest, recipe)


async def pin(p: Platform, task: Task, specs: list[ModelSpec]) -> list[Pinned]:
    """Each target with the weights it would load now pinned by digest (see the module's docstring)."""
    return [await asyncio.to_thread(_pin_one, p, task, spec) for spec in specs]


async def register(s: AsyncSession, task_id: int, pinned: list[Pinned], *, user_id: int | None) -> list[int]:
    """The registry entries of pinned targets (an existing entry of the same model is reused), in order."""
    ids = []
    for item in pinned:
        digest = spec_sha256(item.spec.backend, item.spec.config)
        existing = await s.scalar(
            select(col(RegisteredModel.id))
            .where(col(RegisteredModel.task_id) == task_id, col(RegisteredModel.spec_sha256) == digest)
            .order_by(col(RegisteredModel.id))
            .limit(1)
        )
        if existing is not None:
            ids.append(int(existing))
            continue
        row = RegisteredModel(
            task_id=task_id,
            name=item.spec.name,
            backend=item.spec.backend,
            config=item.spec.config,
            spec_sha256=digest,
            weights=item.weights,
            origin=item.origin,
            recipe=item.recipe.name
            if item.recipe is not None and item.origin != RegisteredModelOrigin.CONFIGURED
            else None,
            created_by=user_id,
        )
        s.add(row)
        await s.flush()
        ids.append(row.id)
    return ids


async def entries(s: AsyncSession, ids: list[int]) -> dict[int, RegisteredModel]:
    if not ids:
        return {}
    rows = await s.scalars(select(RegisteredModel).where(col(RegisteredModel.id).in_(ids)))
    return {row.id: row for row in rows}
