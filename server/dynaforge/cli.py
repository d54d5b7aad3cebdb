"""The ``dynaforge`` command: serve, demo, db upgrade, users, tokens, export, contexts, import, train, check,
artifacts collect, schema."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import secrets
from pathlib import Path
from typing import Any

import click
from sqlmodel import col

from dynaforge.errors import DynaforgeError, InvalidInput
from dynaforge.settings import Settings

DEMO_DIR = Path("dynaforge-data")
DEMO_USER = "demo"


def _settings(database_url: str | None = None, **overrides) -> Settings:
    if database_url:
        overrides["database_url"] = database_url
    return Settings(**overrides)


def _run(coro):
    try:
        return asyncio.run(coro)
    except DynaforgeError as exc:
        raise click.ClickException(exc.message) from exc


def _field_lines(exc: InvalidInput) -> list[str]:
    """An InvalidInput's problems, one indented line each (field: message), for a command's error."""
    return [f"  {e.field}: {e.message}" for e in exc.field_errors]


def _demo_dir() -> Path:
    """The demo's folder: DYNAFORGE_DATA_DIR when set, else ./dynaforge-data."""
    return Path(os.environ.get("DYNAFORGE_DATA_DIR") or DEMO_DIR)


def _demo_url(folder: Path | None = None) -> str:
    return f"sqlite+aiosqlite:///{((folder or _demo_dir()) / 'dynaforge.db').as_posix()}"


def _default_url() -> str | None:
    """Beside the demo's folder (./dynaforge-data, or DYNAFORGE_DATA_DIR) the CLI talks to the demo database unless
    DYNAFORGE_DATABASE_URL says otherwise."""
    if "DYNAFORGE_DATABASE_URL" not in os.environ and (_demo_dir() / "dynaforge.db").exists():
        return _demo_url()
    return None


#: What the demo lets its models reach when it listens on loopback only: model servers on this machine.
LOOPBACK_MODELS = "127.0.0.0/8,::1,localhost"


def _loopback(host: str) -> bool:
    """Whether ``host`` (what the server listens on) is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


database_option = click.option(
    "--database-url", envvar="DYNAFORGE_DATABASE_URL", default=None, help="SQLAlchemy async URL of the database."
)


@click.group()
@click.option("--log-level", default="INFO", show_default=True)
def main(log_level: str) -> None:
    """Dynaforge: dynamic adversarial data collection and benchmarking."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)


# --------------------------------------------------------------------------- serve / demo


def _serve(settings: Settings, host: str, port: int, *, warm_models: bool, access_log: bool = False) -> None:
    import uvicorn

    from dynaforge.app import create_app

    app = create_app(settings, warm_models=warm_models)
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="info",
        access_log=access_log,
        timeout_keep_alive=int(settings.http_keep_alive_s),
        # X-Forwarded-For names the client only when it comes from a proxy the operator names: otherwise anyone on
        # loopback (uvicorn's default trust) could pose as any address and dodge the per-address limits.
        proxy_headers=bool(settings.forwarded_allow_ips),
        forwarded_allow_ips=settings.forwarded_allow_ips or None,
    )


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@database_option
@click.option(
    "--warm-models/--no-warm-models",
    default=True,
    show_default=True,
    help="Load target models in the background at start-up.",
)
@click.option(
    "--access-log/--no-access-log",
    default=False,
    show_default=True,
    help="Log every request (costs about half a millisecond of CPU per request).",
)
def serve(host: str, port: int, database_url: str | None, warm_models: bool, access_log: bool) -> None:
    """Serve the GraphQL API (migrations must be applied: dynaforge db upgrade)."""
    settings = _settings(database_url or _default_url())
    _run(_check_migrated(settings))
    click.echo(f"Dynaforge serving http://{host}:{port}/graphql")
    click.echo(_web_line(settings, host, port))
    _serve(settings, host, port, warm_models=warm_models, access_log=access_log)


async def _check_migrated(settings: Settings) -> None:
    from dynaforge.db.engine import Database
    from dynaforge.db.migrate import current_revision, head_revision

    db = Database(settings.database_url)
    try:
        current = await current_revision(db)
    finally:
        await db.dispose()
    if current != head_revision():
        raise click.ClickException(
            f"The database is at revision {current or 'none'}, not {head_revision()}: run 'dynaforge db upgrade' first"
        )


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the demo keeps its database and model store (default: DYNAFORGE_DATA_DIR, else ./dynaforge-data).",
)
def demo(host: str, port: int, data_dir: Path | None) -> None:
    """The embedded demo: SQLite under ./dynaforge-data/ (or --data-dir), every task with round 1 open, a demo user
    and token, and each task's target models ranked on its demo scoring set."""
    folder = data_dir or _demo_dir()
    overrides: dict[str, object] = {"data_dir": folder}
    allowed = None
    if _loopback(host) and "DYNAFORGE_OUTBOUND_ALLOW" not in os.environ:
        # Nobody but this machine can reach the demo, so its users may submit models they serve on it too
        # (`dynaforge model-server`); a demo listening on a network keeps the policy's refusal of internal addresses.
        # In the environment, so that every process the demo starts (model worker, evaluation jobs) follows it.
        os.environ["DYNAFORGE_OUTBOUND_ALLOW"] = allowed = LOOPBACK_MODELS
    engine, engine_line = _demo_engine(folder)
    settings = _settings(_demo_url(folder), **overrides)
    token, password = _run(_prepare_demo(settings))
    if allowed:
        logging.getLogger("dynaforge.demo").info(
            "the demo listens on loopback only, so models served on this machine may be submitted "
            "(DYNAFORGE_OUTBOUND_ALLOW=%s); set DYNAFORGE_OUTBOUND_ALLOW to choose yourself",
            allowed,
        )
    click.echo("")
    click.echo("Dynaforge demo")
    click.echo(f"  web app:   {_web_line(settings, host, port)}")
    click.echo(f"  GraphiQL:  http://{host}:{port}/graphql")
    click.echo(f"  user:      {DEMO_USER}  (password {password})" if password else f"  user:      {DEMO_USER}")
    click.echo(f"  token:     {token}")
    click.echo('  header:    {"Authorization": "Bearer ' + token + '"}')
    click.echo(f"  data:      {folder.absolute()}")
    if allowed:
        click.echo(f"  models:    served on this machine may be submitted ({allowed}: the demo is on loopback only)")
    click.echo(f"  engine:    {engine_line}")
    click.echo("")
    try:
        _serve(settings, host, port, warm_models=True)
    finally:
        if engine is not None:
            from dynaforge.inference import engine as local_engine

            local_engine.stop(engine)


def _demo_engine(folder: Path) -> tuple[Any, str]:
    """The local engine for the demo's tasks whose targets write (dynaforge.inference.engine): started unless one
    answers already or DYNAFORGE_DEMO_ENGINE=off; the demo runs without it (those tasks' targets then fail, and say
    so to their owners) when it cannot start. Returns the process (None when the demo did not start one) and a line
    for the banner."""
    from dynaforge.inference import engine

    url = engine.llm_url()
    if os.environ.get("DYNAFORGE_DEMO_ENGINE", "on").lower() in ("off", "0", "false", "no"):
        return None, f"not started (DYNAFORGE_DEMO_ENGINE=off); tasks that write call {url}"
    if engine.answers(url):
        return None, f"{url} (already running)"
    folder.mkdir(parents=True, exist_ok=True)
    try:
        process = engine.start(url, log_file=folder / "engine.log")
    except RuntimeError as exc:
        click.echo(f"warning: {exc}", err=True)
        return None, f"not running ({exc})"
    return process, f"{url} ({engine.DEFAULT_MODEL_NAME} on llama.cpp; Gemma Terms of Use apply)"


@main.command("engine")
@click.option(
    "--url", default=None, help="Where to serve it (default: DYNAFORGE_LLM_URL, else http://127.0.0.1:8089/v1)."
)
def engine_command(url: str | None) -> None:
    """Run the local engine for models that write (llama.cpp serving Gemma 3 270M) until interrupted."""
    from dynaforge.inference import engine

    try:
        process = engine.start(url)
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"engine: {url or engine.llm_url()} serves {engine.DEFAULT_MODEL_NAME} (Gemma Terms of Use apply)")
    try:
        process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        engine.stop(process)


def _web_line(settings: Settings, host: str, port: int) -> str:
    from dynaforge.webapp import web_dir

    if web_dir(settings) is None:
        return "the web app is not built (make setup, or: cd web && npm ci && npm run build)"
    return f"http://{host}:{port}/"


async def _prepare_demo(settings: Settings) -> tuple[str, str | None]:
    from dynaforge.db.migrate import upgrade
    from dynaforge.services import auth, contexts, tasks
    from dynaforge.services.actor import Actor
    from dynaforge.services.platform import Platform

    platform = Platform.create(settings)
    try:
        await upgrade(platform.db)
        created = await tasks.sync_registered_tasks(platform)
        system = Actor.system()
        for code in created:
            task = platform.plugins.task(code)
            if task is not None and task.demo_contexts:
                await contexts.add_contexts(platform, system, code, list(task.demo_contexts))
        password = None
        user = await auth.find_user(platform, DEMO_USER)
        if user is None:
            password = secrets.token_urlsafe(9)
            user = await auth.create_user(
                platform, system, username=DEMO_USER, email="demo@dynaforge.invalid", password=password, is_admin=True
            )
        _, token = await auth.create_token(platform, system, name="demo", username=DEMO_USER)
        await _seed_demo_evaluations(platform, await auth.find_user(platform, DEMO_USER))
        for name, error in platform.plugins.errors.items():
            click.echo(f"warning: plugin {name} is broken: {error}", err=True)
        return token, password
    finally:
        await platform.close()


async def _seed_demo_evaluations(platform, user) -> None:
    """Each task's demo scoring set (:meth:`~dynaforge.Task.demo_scoring_set`) becomes the scoring set
    ``demo-scoring`` (with its perturbed copies; its gold ships with the plugin, so every item is public) and its
    round's target models are evaluated as published models, so the demo's leaderboards fill as the jobs finish."""
    from dynaforge.errors import DynaforgeError, InvalidInput
    from dynaforge.services import datasets, training
    from dynaforge.services.actor import Actor

    system, demo = Actor.system(), Actor(user.id, user.username, user.is_admin)
    for code, task in platform.plugins.registry.tasks.items():
        examples = list(task.demo_scoring_set())
        if not examples:
            continue
        if len(examples) < platform.settings.min_scoring_set_size:
            click.echo(
                f"note: {code} has {len(examples)} demo examples, fewer than MIN_SCORING_SET_SIZE "
                f"({platform.settings.min_scoring_set_size}): its board stays empty (see Task.demo_scoring_set)",
                err=True,
            )
            continue
        try:
            await datasets.create_dataset(
                platform,
                system,
                code,
                "demo-scoring",
                [(f"demo example {i}", dict(e)) for i, e in enumerate(examples)],
                description="The task's demo scoring set, written by its plugin (Task.demo_scoring_set)",
                public_share=1.0,
            )
        except InvalidInput as exc:
            click.echo(f"warning: the demo scoring set of {code} is refused: {exc.message}", err=True)
            continue
        except DynaforgeError:
            continue  # seeded by an earlier run of the demo
        try:  # round 1's targets, pinned, so that the board and the round x model matrix show the same models
            await training.evaluate_round_targets(platform, demo, code, published=True)
        except DynaforgeError as exc:
            click.echo(f"warning: could not evaluate the targets of {code}: {exc.message}", err=True)


# --------------------------------------------------------------------------- db


@main.command()
@click.option("--threads", default=1, show_default=True, type=int, help="Evaluations run at once by this worker.")
@database_option
def worker(threads: int, database_url: str | None) -> None:
    """Run evaluation jobs and webhook deliveries from the Redis broker (DYNAFORGE_BROKER_URL) that the API servers
    enqueue to; evaluation progress goes back to them through Redis pub/sub."""
    from dynaforge.jobs import worker_main

    worker_main(_settings(database_url or _default_url()), threads)


@main.group()
def datasets() -> None:
    """Evaluation data sets."""


@datasets.command("import")
@click.option("--task", "task_code", required=True)
@click.option("--format", "format_name", required=True, help="An importer of the task (see `dynaforge import`).")
@click.option("--name", required=True, help="The data set's name, e.g. anli-r1-dev.")
@click.option("--access", default="SCORING", show_default=True, type=click.Choice(["SCORING", "STANDARD", "HIDDEN"]))
@click.option(
    "--public-share",
    type=float,
    default=None,
    help="A SCORING set: the share of its items whose figures models show before its round ends (default: "
    "SCORING_PUBLIC_SHARE); 1 for a set whose gold is public anyway.",
)
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@database_option
def datasets_import(
    task_code: str,
    format_name: str,
    name: str,
    access: str,
    public_share: float | None,
    path: Path,
    database_url: str | None,
) -> None:
    """Add an evaluation data set read by one of the task's importers (all or nothing; SCORING sets get their
    perturbed copies)."""
    from dynaforge.services import datasets as dataset_service
    from dynaforge.services import imports as import_service
    from dynaforge.services import tasks as task_service
    from dynaforge.services.actor import Actor

    async def go():
        platform = _platform(database_url)
        _jobs_through_the_broker(platform)
        try:
            await task_service.sync_registered_tasks(platform)
            task = platform.plugins.task(task_code)
            if task is None:
                raise click.ClickException(f"no task {task_code!r} is installed")
            importer = import_service.choose_importer(platform, task, format_name)
            records = import_service.records_of(importer, path, task)
            made = await dataset_service.create_dataset(
                platform, Actor.system(), task_code, name, records, access=access, public_share=public_share
            )
            return made, await _queued_line(platform, [d.id for d in made])
        finally:
            _close_jobs(platform)
            await platform.close()

    made, queued = _run(go())
    for dataset in made:
        click.echo(f"data set {dataset.name}: {dataset.size} examples ({dataset.access.lower()})")
    if queued:
        click.echo(queued)


@datasets.command("attach-copy")
@click.option("--task", "task_code", required=True)
@click.option("--dataset", "dataset_name", required=True, help="The scoring set the copy was made from, e.g. r1-test.")
@click.option("--perturbation", required=True, help="The copy's perturbation name, e.g. dialect-rewrite.")
@click.option("--kind", required=True, type=click.Choice(["robustness", "fairness"]))
@click.option("--replace", is_flag=True, help="Put it in place of a copy of the same name (the platform's or yours).")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@database_option
def datasets_attach_copy(
    task_code: str, dataset_name: str, perturbation: str, kind: str, replace: bool, path: Path, database_url: str | None
) -> None:
    """Attach your own perturbed copy of a scoring set: a JSONL file of objects with original_position (the
    item's position in the set) and the task's fields (targets left out are copied from the original)."""
    from sqlalchemy import select

    from dynaforge.db.models import Dataset, TaskRow
    from dynaforge.services import datasets as dataset_service
    from dynaforge.services import tasks as task_service
    from dynaforge.services.actor import Actor

    async def go():
        platform = _platform(database_url)
        _jobs_through_the_broker(platform)
        try:
            await task_service.sync_registered_tasks(platform)
            async with platform.db.session() as s:
                dataset_id = await s.scalar(
                    select(col(Dataset.id))
                    .join(TaskRow, col(TaskRow.id) == col(Dataset.task_id))
                    .where(col(TaskRow.code) == task_code, col(Dataset.name) == dataset_name)
                )
            if dataset_id is None:
                raise click.ClickException(f"task {task_code!r} has no data set {dataset_name!r}")
            with path.open("rb") as source:
                records = dataset_service.read_jsonl(source, platform.settings.context_upload_max_bytes)
            copy = await dataset_service.attach_perturbed_copy(
                platform, Actor.system(), dataset_id, perturbation, kind, records, replace=replace
            )
            return copy, await _queued_line(platform, [copy.id])
        finally:
            _close_jobs(platform)
            await platform.close()

    copy, queued = _run(go())
    click.echo(f"data set {copy.name}: {copy.size} items ({copy.perturbation_kind})")
    if queued:
        click.echo(queued)


@main.group()
def db() -> None:
    """Database migrations."""


@db.command("upgrade")
@database_option
@click.option("--revision", default="head", show_default=True)
def db_upgrade(database_url: str | None, revision: str) -> None:
    """Apply migrations up to REVISION."""
    from dynaforge.db.engine import Database
    from dynaforge.db.migrate import current_revision, upgrade

    async def go() -> str | None:
        database = Database(_settings(database_url or _default_url()).database_url)
        try:
            await upgrade(database, revision)
            return await current_revision(database)
        finally:
            await database.dispose()

    click.echo(f"database at revision {_run(go())}")


# --------------------------------------------------------------------------- users and tokens


@main.group()
def users() -> None:
    """User accounts."""


@users.command("create")
@click.option("--username", required=True)
@click.option("--email", required=True)
@click.option("--password", prompt=True, hide_input=True, confirmation_prompt=True)
@click.option("--admin", is_flag=True, help="Make the user an admin.")
@database_option
def users_create(username: str, email: str, password: str, admin: bool, database_url: str | None) -> None:
    """Create a user (as the operator: admins may be created)."""
    from dynaforge.services import auth
    from dynaforge.services.actor import Actor

    async def go():
        platform = _platform(database_url)
        try:
            return await auth.create_user(
                platform, Actor.system(), username=username, email=email, password=password, is_admin=admin
            )
        finally:
            await platform.close()

    user = _run(go())
    click.echo(f"created user {user.username} (id {user.id}{', admin' if user.is_admin else ''})")


@main.group()
def tokens() -> None:
    """API tokens."""


@tokens.command("create")
@click.option("--username", required=True)
@click.option("--name", default="cli", show_default=True, help="A name to recognise the token by.")
@database_option
def tokens_create(username: str, name: str, database_url: str | None) -> None:
    """Create an API token for a user; the token is the last line printed."""
    from dynaforge.services import auth
    from dynaforge.services.actor import Actor

    async def go():
        platform = _platform(database_url)
        try:
            return await auth.create_token(platform, Actor.system(), name=name, username=username)
        finally:
            await platform.close()

    row, token = _run(go())
    click.echo(f"token {row.prefix}… created for {username}; it is shown only once:")
    click.echo(token)


def _platform(database_url: str | None):
    from dynaforge.services.platform import Platform

    return Platform.create(_settings(database_url or _default_url()))


def _jobs_through_the_broker(platform) -> None:
    """With DYNAFORGE_BROKER_URL, what a command queues is sent to the broker at once (the workers run it); without
    one, a running server's sweep finds it (QUEUED_SWEEP_S), or the next server to start."""
    if platform.settings.broker_url:
        from dynaforge.jobs import Jobs

        platform.jobs = Jobs(platform.settings)


def _close_jobs(platform) -> None:
    if platform.jobs is not None:
        platform.jobs.stop()
        platform.jobs = None


async def _queued_line(platform, dataset_ids: list[int]) -> str | None:
    """What happens to the evaluations a command queued on ``dataset_ids`` (None: it queued none)."""
    from dynaforge.services.evaluation_jobs import queued_on

    count = await queued_on(platform, dataset_ids)
    if not count:
        return None
    if platform.jobs is not None:
        return f"{count} evaluations queued and sent to the job broker: its workers run them"
    return (
        f"{count} evaluations queued: a running server with the in-process worker runs them within "
        f"{platform.settings.queued_sweep_s:g} s (QUEUED_SWEEP_S), else the next server to start"
    )


# --------------------------------------------------------------------------- export


@main.command("export")
@click.option("--task", "task_code", required=True, help="The task's code, e.g. nli.")
@click.option(
    "--round",
    "round_number",
    type=click.IntRange(min=1),
    default=None,
    help="Export this round only (default: every round).",
)
@click.option(
    "--format",
    "fmt",
    required=True,
    help="A registered export format: jsonl (one example per line), hf (a folder that datasets.load_dataset "
    "reads) or a plugin's; --list-formats lists them.",
)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path),
    help="The file to write (e.g. a .jsonl file), or for a format that writes a folder (hf) a new or empty folder.",
)
@click.option(
    "--list-formats",
    is_flag=True,
    is_eager=True,
    expose_value=False,
    callback=lambda ctx, _, value: _list_export_formats(ctx, value),
    help="List the registered export formats and exit.",
)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    help="Export examples with this status (repeat it for several; default: all but RETRACTED and PENDING_PREDICTION).",
)
@database_option
def export(
    task_code: str, round_number: int | None, fmt: str, out: Path, statuses: tuple[str, ...], database_url: str | None
) -> None:
    """Export a task's collected examples (as the operator, so every status may be asked for)."""
    from tqdm import tqdm

    from dynaforge.services import exports
    from dynaforge.services.actor import Actor

    async def go():
        platform = _platform(database_url)
        try:
            chosen = exports.choose_format(platform, fmt)
            plan = await exports.prepare_export(
                platform, Actor.system(), task_code, round_number=round_number, statuses=statuses or None
            )
            with tqdm(total=plan.total, unit="example", desc=f"export {task_code}", disable=None) as bar:

                def progress(written: int) -> None:
                    bar.update(written)

                return await exports.write(platform, plan, chosen, out, progress=progress)
        finally:
            await platform.close()

    result = _run(go())
    splits = ", ".join(f"{split}: {count}" for split, count in result.counts.items())
    noun = "example" if result.total == 1 else "examples"
    click.echo(f"wrote {result.total} {noun} of {task_code} ({splits}) to {result.path}")
    for path in result.files:
        click.echo(f"  {path}")


def _list_export_formats(ctx: click.Context, value: bool) -> None:
    """``dynaforge export --list-formats``: the formats the installed plugins register, then exit."""
    if not value or ctx.resilient_parsing:
        return
    from dynaforge.plugins import Plugins

    plugins = Plugins(allowlist=Settings().plugin_allowlist())
    for name, fmt in plugins.registry.export_formats.items():
        where = "a folder" if fmt.folder else f"a {fmt.extension} file"
        click.echo(f"{name}\t{where}: {fmt.description}")
    ctx.exit()


# --------------------------------------------------------------------------- contexts


@main.group()
def contexts() -> None:
    """Contexts annotators write against."""


@contexts.command("upload")
@click.option("--task", "task_code", required=True, help="The task's code.")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--tag", default=None, help="The tag of rows that do not give their own.")
@click.option(
    "--format",
    "file_format",
    type=click.Choice(["jsonl", "csv"], case_sensitive=False),
    default=None,
    help="Default: from the file name (.jsonl, .ndjson or .csv).",
)
@database_option
def contexts_upload(
    task_code: str, path: Path, tag: str | None, file_format: str | None, database_url: str | None
) -> None:
    """Add every context of a JSONL or CSV file at PATH to the task's current round (as the operator; all or
    nothing: a wrong row adds none, and each problem is printed with its line)."""
    from dynaforge.services import contexts as context_service
    from dynaforge.services import tasks as task_service
    from dynaforge.services.actor import Actor

    async def go():
        platform = _platform(database_url)
        try:
            await task_service.sync_registered_tasks(platform)  # a task installed since the server last started
            with path.open("rb") as source:
                return await context_service.upload_contexts(
                    platform, Actor.system(), task_code, source, filename=path.name, file_format=file_format, tag=tag
                )
        finally:
            await platform.close()

    try:
        added = asyncio.run(go())
    except InvalidInput as exc:
        lines = [exc.message, *_field_lines(exc)]
        raise click.ClickException("\n".join(lines)) from exc
    except DynaforgeError as exc:
        raise click.ClickException(exc.message) from exc
    click.echo(f"added {len(added.ids)} contexts to round {added.round_number} of {added.task_code}")


# --------------------------------------------------------------------------- import


@main.command("import")
@click.option("--task", "task_code", required=True, help="The task to import into.")
@click.option(
    "--format",
    "format_name",
    required=True,
    help="The importer that reads the file: jsonl (Dynaforge's own export) or a task plugin's (anli, ...).",
)
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--round", "round_number", type=int, default=None, help="The round to import into (default: the current one)."
)
@click.option(
    "--user",
    "username",
    default=None,
    help="The author of the imported examples (default: the 'importer' service account).",
)
@database_option
def import_command(
    task_code: str,
    format_name: str,
    path: Path,
    round_number: int | None,
    username: str | None,
    database_url: str | None,
) -> None:
    """Import the examples of a data set file into a task: all of them, or none when any record is unusable."""
    import sys

    from tqdm import tqdm

    from dynaforge.services import imports, tasks
    from dynaforge.services.actor import Actor

    bars: dict[str, tqdm] = {}

    def progress(phase: str, done: int, total: int | None) -> None:
        bar = bars.get(phase)
        if bar is None:
            for other in bars.values():
                other.close()
            bar = bars[phase] = tqdm(total=total, desc=phase, unit=" examples", file=sys.stderr)
        bar.update(done - bar.n)

    async def go():
        platform = _platform(database_url)
        try:
            await tasks.sync_registered_tasks(platform)
            return await imports.import_examples(
                platform,
                Actor.system(),
                task_code=task_code,
                format=format_name,
                path=path,
                round_number=round_number,
                username=username,
                progress=progress,
            )
        finally:
            for bar in bars.values():
                bar.close()
            await platform.close()

    try:
        report = asyncio.run(go())
    except InvalidInput as exc:
        if len(exc.field_errors) == 1:
            raise click.ClickException(exc.message) from exc
        lines = ["Nothing was imported; fix these records and import the file again:"]
        lines += _field_lines(exc)
        raise click.ClickException("\n".join(lines)) from exc
    except DynaforgeError as exc:
        raise click.ClickException(exc.message) from exc
    click.echo(
        f"imported {report.count} example{'s' if report.count != 1 else ''} into round {report.round_number} of "
        f"{report.task_code} (format {report.format}, author {report.username})"
    )
    for reason, n in sorted(report.skipped.items(), key=lambda kv: -kv[1]):
        click.echo(f"skipped {n}: {reason}")


# --------------------------------------------------------------------------- train, schema


@main.command()
@click.argument("task_code")
@click.option(
    "--data",
    "data_dir",
    default=None,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The task's base data folder (what its training recipe's base_data names).",
)
@click.option(
    "--examples",
    "examples_files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A JSON-lines file of the platform's examples (what `dynaforge export` writes, or one object of field "
    "values per line) to train on besides the base data; repeatable.",
)
@click.option("--recipe", "recipe_name", default=None, help="The training recipe (default: the task's first).")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option(
    "--set",
    "assignments",
    multiple=True,
    metavar="NAME=VALUE",
    help="A hyper-parameter of the recipe (VALUE is read as JSON when it can be: 2.0, true, 10); repeatable.",
)
@click.option(
    "--out",
    "out_dir",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="Where to write the weights (default: a new version in the model store, DYNAFORGE_DATA_DIR/models, "
    "which the task's model then loads instead of the weights its package ships).",
)
@click.option(
    "--limit",
    default=None,
    type=int,
    help="A quick check of the plugin's own trainer on this many base rows (not the recipe path).",
)
def train(
    task_code: str,
    data_dir: Path | None,
    examples_files: tuple[Path, ...],
    recipe_name: str | None,
    seed: int,
    assignments: tuple[str, ...],
    out_dir: Path | None,
    limit: int | None,
) -> None:
    """Train TASK_CODE's default target model and print its held-out metrics as JSON.

    A task with a training recipe is trained by it, the path a training job takes (trainCandidateModel): the base
    data in --data and the examples in --examples, with --set hyper-parameters and --seed. Trained weights never go
    into an installed package: without --out they become a new version in the model store (by content hash) and the
    current one of that model, which the next round that opens pins.
    """
    import json

    from dynaforge.model_store import ModelStore
    from dynaforge.plugins import Plugins
    from dynaforge.tasks.training import TrainingData, examples_digest, read_examples_jsonl, run_recipe

    task = Plugins(allowlist=_settings().plugin_allowlist()).task(task_code)
    if task is None:
        raise click.ClickException(f"No task {task_code!r} is installed")
    recipe = task.training_recipe(recipe_name)
    if recipe_name is not None and recipe is None:
        raise click.ClickException(f"Task {task_code} has no training recipe {recipe_name!r}")
    if recipe is None or limit is not None:
        if data_dir is None or examples_files or assignments:
            raise click.ClickException(
                "--limit runs the plugin's own trainer on --data alone"
                if limit is not None
                else f"Task {task_code} has no training recipe: give --data only"
            )
        try:
            metrics = task.train(data_dir, out_dir, progress=True, limit=limit)
        except NotImplementedError as exc:
            raise click.ClickException(str(exc)) from exc
        click.echo(json.dumps(metrics, indent=2, sort_keys=True))
        return
    hyperparameters = {}
    for assignment in assignments:
        name, sep, text = assignment.partition("=")
        if not sep or not name:
            raise click.ClickException(f"--set takes NAME=VALUE, not {assignment!r}")
        try:
            hyperparameters[name] = json.loads(text)
        except ValueError:
            hyperparameters[name] = text
    examples: list[dict] = []
    sources = []
    for path in examples_files:
        try:
            rows = read_examples_jsonl(path)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from exc
        examples.extend(rows)
        sources.append({"name": path.name, "size": len(rows), "sha256": examples_digest(rows)})
    data = TrainingData(examples=tuple(examples), sources=tuple(sources), base_dir=data_dir)

    def report(fraction: float, stage: str) -> None:
        click.echo(f"[{fraction:4.0%}] {stage}", err=True)

    try:
        if out_dir is not None:
            metrics = run_recipe(recipe, data, out_dir, seed=seed, hyperparameters=hyperparameters, report=report)
        else:
            store = ModelStore.from_settings(_settings())
            with store.staging(task.code, recipe.model) as staging:
                metrics = run_recipe(recipe, data, staging, seed=seed, hyperparameters=hyperparameters, report=report)
                stored = store.add(task.code, recipe.model, staging)
            metrics = {**metrics, "weights_dir": str(stored.path), "weights_version": stored.version}
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(json.dumps(metrics, indent=2, sort_keys=True))


def _import_from_here() -> None:
    """Make the current folder's modules importable, as ``python -m`` would (the ``dynaforge`` script's own folder
    is first on the path instead): a plugin or model being written there is found before it is installed."""
    import sys

    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())


@main.command("model-server")
@click.option(
    "--backend", "backend_name", required=True, help="A registered model backend (python, transformers, ...)."
)
@click.option(
    "--config",
    "config_json",
    required=True,
    help='The backend configuration as JSON, e.g. \'{"path": "/models/classifier", "text_fields": ["text"]}\'.',
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8080, show_default=True, type=int)
@click.option("--name", default=None, help="The model's name in /health (default: the backend's).")
@click.option(
    "--token",
    envvar="DYNAFORGE_MODEL_SERVER_TOKEN",
    default=None,
    help="Require 'Authorization: Bearer TOKEN' (or set DYNAFORGE_MODEL_SERVER_TOKEN).",
)
def model_server(
    backend_name: str, config_json: str, host: str, port: int, name: str | None, token: str | None
) -> None:
    """Serve one model over the HTTP model-server contract (docs/model-server.md), for the http backend. The current
    folder is on the import path, so a python backend's callable or factory may live there."""
    import json

    from dynaforge.inference.http_server import serve_model

    _import_from_here()

    try:
        config = json.loads(config_json)
    except json.JSONDecodeError as exc:
        raise click.ClickException(f"--config is not JSON: {exc}") from exc
    if not isinstance(config, dict):
        raise click.ClickException("--config must be a JSON object")
    try:
        serve_model(backend_name, config, host, port, name=name, token=token)
    except (ValueError, FileNotFoundError) as exc:
        raise click.ClickException(str(exc)) from exc


@main.command()
@click.argument("task_codes", metavar="[TASK]...", nargs=-1)
@click.option(
    "--plugin",
    "plugin_modules",
    multiple=True,
    metavar="MODULE",
    help="Also load the plugin MODULE (pkg.module, or pkg.module:object; importable from here), as an entry point "
    "would: check a task before it is packaged.",
)
@click.option(
    "--check",
    "check_names",
    multiple=True,
    help="Run only this check (repeatable): declaration, json-schema, samples, perturbations, metrics, "
    "default-models, data-selection, adversaries, verdicts.",
)
@click.option(
    "--declared",
    "declared_files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Also load the task declared in this JSON or YAML file (repeatable); without TASKs, check only those.",
)
@click.option("--no-models", is_flag=True, help="Skip the checks that load and run models.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: the broken plugins and every check's result.")
def check(
    task_codes: tuple[str, ...],
    plugin_modules: tuple[str, ...],
    check_names: tuple[str, ...],
    declared_files: tuple[Path, ...],
    no_models: bool,
    as_json: bool,
) -> None:
    """Run the task conformance checks on every installed task, or on the TASKs named. Default models are timed
    against the server's DYNAFORGE_INFERENCE_TIMEOUT_S and DYNAFORGE_INFERENCE_LOAD_TIMEOUT_S, as set here.

    Exit status 1 when a plugin (or a --declared task) is broken or a check fails (each problem is printed), 2 on a
    usage error."""
    import importlib
    import json

    from dynaforge import conformance
    from dynaforge.plugins import Plugins
    from dynaforge.tasks.declarative import DECLARED_PREFIX

    extra = []
    if plugin_modules:
        _import_from_here()
    for module in plugin_modules:
        name, _, attribute = module.partition(":")
        try:
            plugin = importlib.import_module(name)
            extra.append(getattr(plugin, attribute) if attribute else plugin)
        except Exception as exc:
            raise click.UsageError(f"--plugin {module}: cannot import it: {type(exc).__name__}: {exc}") from exc
    plugins = Plugins(allowlist=_settings().plugin_allowlist(), extra=extra)  # what the server would load
    if declared_files:
        from dynaforge.tasks.declarative import load_declaration, read_file

        declared = []
        for path in declared_files:
            try:
                declared.append(load_declaration(read_file(path)))
            except (ValueError, OSError) as exc:  # JSON and YAML errors are ValueErrors
                raise click.ClickException(f"{path}: {exc}") from exc
            except InvalidInput as exc:
                lines = [f"{path} is not a valid declaration:", *_field_lines(exc)]
                raise click.ClickException("\n".join(lines)) from exc
        plugins.replace_declared(declared)
        # A declared task refused at load (a name no plugin registered, say) is a broken plugin, reported as one
        # (exit status 1), not a task to check.
        refused = {task.code for task in declared if DECLARED_PREFIX + task.code in plugins.errors}
        named = task_codes or tuple(task.code for task in declared)
        task_codes = tuple(code for code in named if code not in refused)
    broken = dict(plugins.errors)
    engine = None if no_models else _engine_for_check(plugins, task_codes)
    try:
        if declared_files and not task_codes:
            results = []
        else:
            results = asyncio.run(
                conformance.run_checks(
                    plugins, task_codes or None, models=not no_models, checks=list(check_names) or None
                )
            )
    except KeyError as exc:
        hint = "".join(f"\nplugin {name} is broken: {error}" for name, error in broken.items())
        raise click.UsageError(f"{exc.args[0]}{hint}") from exc
    if as_json:
        click.echo(json.dumps({"broken_plugins": broken, "results": [r.as_dict() for r in results]}, indent=2))
    else:
        for name, error in broken.items():
            click.echo(f"FAIL  plugin {name} is broken and was not loaded: {error}")
        for line in conformance.report_lines(results):
            click.echo(line)
        failed = sum(not r.passed for r in results)
        skipped = sum(r.skipped is not None for r in results)
        tasks = len({r.task for r in results})
        click.echo(
            f"{len(results) - failed - skipped} passed, {failed} failed, {skipped} skipped: {len(results)} checks on "
            f"{tasks} task{'s' if tasks != 1 else ''}"
            + (f"; {len(broken)} plugin{'s' if len(broken) != 1 else ''} broken" if broken else "")
        )
    if engine is not None:
        from dynaforge.inference import engine as local_engine

        local_engine.stop(engine)
    if broken or any(not r.passed for r in results):
        raise SystemExit(1)


def _engine_for_check(plugins: Any, task_codes: tuple[str, ...]) -> Any:
    """The local engine (dynaforge.inference.engine), started for the check when a task to check targets it and
    nothing answers there yet; loopback is then allowed to the checked models (only this machine runs the check,
    as on a demo listening on loopback). None when no task needs it or it cannot start (that task's default-models
    check then says why)."""
    from dynaforge.inference import engine

    url = engine.llm_url()
    wanted = [t for code, t in plugins.registry.tasks.items() if not task_codes or code in task_codes]
    uses = any(
        spec.backend == "openai" and str(spec.config.get("url", "")).rstrip("/") == url
        for task in wanted
        for spec in task.default_target_models
    )
    if not uses:
        return None
    os.environ.setdefault("DYNAFORGE_OUTBOUND_ALLOW", LOOPBACK_MODELS)
    if engine.answers(url) or engine.available() is not None:
        return None
    try:
        return engine.start(url)
    except RuntimeError as exc:
        click.echo(f"warning: {exc}", err=True)
        return None


# --------------------------------------------------------------------------- model artifacts


@main.group()
def artifacts() -> None:
    """Uploaded model artifacts in the model store."""


@artifacts.command("collect")
@click.option("--dry-run", is_flag=True, help="Delete nothing; list what would be deleted.")
@database_option
def artifacts_collect(dry_run: bool, database_url: str | None) -> None:
    """Delete the model artifacts that nothing names (no model, round, registry entry or task) and that were neither
    stored nor touched for ARTIFACT_GC_GRACE_S, from the store and its local cache, with what stopped uploads left
    behind. The server has its job system do it every ARTIFACT_GC_INTERVAL_S."""
    from dynaforge.model_store import ModelStoreError
    from dynaforge.services import artifacts as artifact_service
    from dynaforge.services.actor import Actor

    async def go():
        platform = _platform(database_url)
        try:
            return await artifact_service.collect_artifacts(platform, Actor.system(), dry_run=dry_run)
        finally:
            await platform.close()

    try:
        collected = _run(go())
    except ModelStoreError as exc:
        raise click.ClickException(str(exc)) from exc
    verb = "would remove" if dry_run else "removed"
    for digest, size in collected.removed.items():
        click.echo(f"{verb} {digest} ({size / 2**20:.1f} MiB)")
    click.echo(
        f"{verb} {len(collected.removed)} unreferenced artifacts ({collected.freed / 2**20:.1f} MiB), "
        f"{collected.cached} cached copies and {collected.leftovers} leftovers of stopped uploads; kept "
        f"{len(collected.young)} unreferenced ones younger than ARTIFACT_GC_GRACE_S"
    )


@main.command("declared-schema")
def declared_schema() -> None:
    """Print the JSON Schema a task declared as data follows (docs/declared-task.schema.json is this output)."""
    import json

    from dynaforge.tasks.declarative import DECLARATION_SCHEMA

    click.echo(json.dumps(DECLARATION_SCHEMA, indent=2))


@main.command()
def schema() -> None:
    """Print the GraphQL schema (SDL); schema.graphql is this output."""
    from dynaforge.api.schema import sdl

    click.echo(sdl(), nl=False)


if __name__ == "__main__":  # pragma: no cover
    main()
