"""What the loaded plugins offer (model backends with their configuration schema, metrics, perturbations, export
formats) and a user look-up: the facts the owners' and model builders' forms are built from."""

from __future__ import annotations

from typing import Annotated

import strawberry
from strawberry.scalars import JSON

from dynaforge.api.context import Info
from dynaforge.api.enums import MetricDirection, PerturbationGold, PerturbationKind, PerturbationScope
from dynaforge.api.errors import errors_as_null
from dynaforge.api.types.user import User
from dynaforge.services import auth as auth_service
from dynaforge.services import exports as export_service
from dynaforge.services import submissions as submission_service


@strawberry.type(description="A model backend a plugin registered: what `submitModel` and `setTargetModels` take.")
class Backend:
    name: str = strawberry.field(description="Its name, as the `backend` argument takes it.")
    description: str = strawberry.field(description="What it runs, in the plugin's words (may be empty).")
    config_schema: JSON = strawberry.field(
        description="JSON Schema (draft 2020-12) of its `config` (the backend's own shape): enough to build a form; "
        "the server's checks on submission remain the authority."
    )
    open_to_submissions: bool = strawberry.field(
        description="Whether every signed-in user may submit models with it; false: only the task's owners and "
        "admins (a backend that runs code on the server)."
    )


@strawberry.type(description="A metric a plugin registered, as evaluations and leaderboards name it.")
class Metric:
    name: str = strawberry.field(description="Its name, as in `Evaluation.metrics` and the leaderboard's axes.")
    description: str = strawberry.field(description="What it measures, in the plugin's words (may be empty).")
    direction: MetricDirection = strawberry.field(description="Which way is better.")


@strawberry.type(description="A perturbation a plugin registered: a seeded edit the platform applies to scoring sets.")
class Perturbation:
    name: str = strawberry.field(description="Its name, as `Dataset.perturbation` and `Evaluation.perturbations` say.")
    kind: PerturbationKind = strawberry.field(description="What its copies measure.")
    description: str = strawberry.field(description="What it changes, in the plugin's words (may be empty).")
    scope: PerturbationScope = strawberry.field(description="Which text fields of an example it changes.")
    gold: PerturbationGold = strawberry.field(
        description="What happens to its copies' gold, and so what they are scored on."
    )


@strawberry.type(description="A plugin's export format, as `/export?format=` and `dynaforge export` use it.")
class ExportFormat:
    name: str = strawberry.field(description="Its name, as the `format` parameter takes it.")
    description: str = strawberry.field(description="What it writes, in the plugin's words (may be empty).")
    media_type: str = strawberry.field(
        description="The Content-Type of what `/export` sends (application/zip for a format that writes a folder)."
    )
    extension: str = strawberry.field(
        description="The written file's extension (e.g. `.jsonl`); empty for a format that writes a folder."
    )


@strawberry.type
class RegistryQuery:
    @strawberry.field(description="The model backends this server has, by name. Anyone.")
    def backends(self, info: Info) -> list[Backend]:
        p = info.context.platform
        open_to_all = submission_service.open_backends(p)
        return [
            Backend(
                name=name,
                description=backend.description,
                config_schema=JSON(backend.config_schema),
                open_to_submissions=name in open_to_all,
            )
            for name, backend in sorted(p.plugins.registry.backends.items())
        ]

    @strawberry.field(description="The metrics this server has, by name. Anyone.")
    def metrics(self, info: Info) -> list[Metric]:
        return [
            Metric(
                name=name,
                description=metric.description,
                direction=MetricDirection.HIGHER if metric.higher_is_better else MetricDirection.LOWER,
            )
            for name, metric in sorted(info.context.platform.plugins.registry.metrics.items())
        ]

    @strawberry.field(description="The perturbations this server has, by name. Anyone.")
    def perturbations(self, info: Info) -> list[Perturbation]:
        return [
            Perturbation(
                name=name,
                kind=PerturbationKind.FAIRNESS if perturbation.kind == "fairness" else PerturbationKind.ROBUSTNESS,
                description=perturbation.description,
                scope=PerturbationScope(perturbation.scope),
                gold=PerturbationGold(perturbation.gold),
            )
            for name, perturbation in sorted(info.context.platform.plugins.registry.perturbations.items())
        ]

    @strawberry.field(
        description="The export formats this server has, the core's first (what `dynaforge export --list-formats` "
        "prints). Anyone."
    )
    def export_formats(self, info: Info) -> list[ExportFormat]:
        return [
            ExportFormat(name=f.name, description=f.description, media_type=f.media_type, extension=f.extension)
            for f in export_service.export_formats(info.context.platform)
        ]

    @strawberry.field(
        description="A user by username (compared without case), for signed-in users (owners look people up to "
        "grant ownership); null when there is none, or for anonymous callers. The email shows only to the user and "
        "admins."
    )
    @errors_as_null
    async def user(
        self, info: Info, username: Annotated[str, strawberry.argument(description="The username to look up.")]
    ) -> User | None:
        return User.from_row(await auth_service.lookup_user(*info.context.caller, username))
