"""Training jobs and the model registry, in-process on SQLite and PostgreSQL (the recipe runs in a real child).

The toy task's recipe (``toy_plugin.train_words``, a naive Bayes over words in JSON) keeps every job fast. The
child process finds the toy task as an entry-point plugin (a dist-info folder on its ``PYTHONPATH``), as a
deployment's worker finds an installed task. tests/test_retraining.py drives the same loop through a real server.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from support import HERE, make_settings, toy_process_env

from dynaforge import ModelSpec, Task, TrainingRecipe, hookimpl
from dynaforge.db.models import (
    DatasetAccess,
    Evaluation,
    ModelRow,
    RegisteredModel,
    RegisteredModelOrigin,
    Round,
    TrainingJob,
    TrainingStatus,
)
from dynaforge.errors import Forbidden, InvalidInput, NotFound, QuotaExceeded
from dynaforge.model_artifacts import ArtifactStore
from dynaforge.model_store import ModelStore, content_hash
from dynaforge.plugins import Plugins
from dynaforge.services import datasets as dataset_service
from dynaforge.services import submissions as submission_service
from dynaforge.services import tasks as task_service
from dynaforge.services import training as training_service
from dynaforge.services.actor import Actor
from dynaforge.services.platform import Platform
from dynaforge.training.runner import JobRun

GOOD = ["a lovely walk", "an excellent soup", "a superb film", "a cheerful song", "a splendid view", "a lovely game"]
BAD = ["not good at all", "no good soup", "never good films", "hardly good songs", "not so good views", "no good game"]


@pytest.fixture
async def trainer(live_platform, tmp_path, monkeypatch) -> Platform:
    """The live platform with a data directory of its own, an admin, and the toy task findable by a child."""
    env = toy_process_env(tmp_path, live_platform.settings.database_url)
    monkeypatch.setenv("PYTHONPATH", env["PYTHONPATH"])
    live_platform.settings = live_platform.settings.model_copy(
        update={"data_dir": tmp_path / "data", "load_plugins": "toy"}
    )
    return live_platform


async def _admin(p: Platform) -> Actor:
    from dynaforge.services import auth as auth_service

    user = await auth_service.create_user(
        p,
        Actor.system(),
        username="trainer",
        email="trainer@example.org",
        password="correct horse battery",
        is_admin=True,
    )
    return Actor(user_id=user.id, username=user.username, is_admin=True)


async def _dataset(p: Platform, name: str, rows: list[tuple[str, str]], access: str = DatasetAccess.STANDARD) -> int:
    records = [(f"line {i}", {"text": text, "label": label}) for i, (text, label) in enumerate(rows)]
    made = await dataset_service.create_dataset(p, Actor.system(), "toy", name, records, access=access)
    return made[0].id


def _rows() -> list[tuple[str, str]]:
    return [(t, "good") for t in GOOD] + [(t, "bad") for t in BAD]


async def _count(p: Platform, table: Any) -> int:
    async with p.db.session() as s:
        return int(await s.scalar(select(func.count()).select_from(table)) or 0)


async def test_a_job_trains_registers_and_queues_the_candidate_and_its_parent(trainer):
    p = trainer
    admin = await _admin(p)
    train = await _dataset(p, "words-train", _rows())
    scoring = await _dataset(p, "words-test", _rows()[::2], access=DatasetAccess.SCORING)
    job = await training_service.train_candidate(
        p, admin, task_code="toy", dataset_ids=[train], hyperparameters={"smoothing": 0.5}, seed=4
    )
    assert (job.status, job.recipe, job.hyperparameters) == (
        TrainingStatus.QUEUED,
        "words",
        {"smoothing": 0.5, "min_count": 1, "pause_s": 0.0, "ballast_mb": 0},
    )
    sent: list[list[int]] = []
    events: list[tuple[str, dict[str, Any]]] = []
    await JobRun(
        p.settings, job.id, enqueue=sent.append, publish=lambda t, e: events.append((t, e)), plugins=p.plugins
    ).run()

    done = await training_service.get_job(p, admin, job.id)
    assert done.status == TrainingStatus.SUCCEEDED, (done.error, done.log_tail)
    assert (done.progress, done.attempts) == (1.0, 1)
    candidate = await training_service.get_registered(p, admin, done.candidate_id)
    assert candidate.origin == RegisteredModelOrigin.TRAINED and candidate.training_job_id == job.id
    assert candidate.config == {"factory": "toy_plugin:load_words", "kwargs": {"weights_artifact": candidate.weights}}
    folder = ArtifactStore.from_settings(p.settings).folder(candidate.weights)
    assert content_hash(folder) == candidate.weights
    record = json.loads((folder / "training.json").read_text())
    assert record["seed"] == 4 and record["data"]["examples"] == len(_rows())
    assert candidate.training_data["datasets"][0]["id"] == train
    assert candidate.training_data["examples_sha256"] == record["data"]["examples_sha256"]
    assert candidate.metrics["training_accuracy"] == 1.0
    async with p.db.session() as s:
        round_ = await s.scalar(select(Round))
        assert candidate.parent_id == round_.target_registry_ids[0]
        parent = await s.get(RegisteredModel, candidate.parent_id)
        models = {m.id: m for m in await s.scalars(select(ModelRow))}
        evaluations = list(await s.scalars(select(Evaluation)))
    # the candidate and its parent are unpublished models of the admin, each queued on the scoring set
    assert {models[candidate.model_id].published, models[parent.model_id].published} == {False}
    assert sorted((e.model_id, e.dataset_id) for e in evaluations) == sorted(
        [(candidate.model_id, scoring), (parent.model_id, scoring)]
    )
    assert sorted(sum(sent, [])) == sorted(e.id for e in evaluations)
    progress = [e for t, e in events if t == f"trainingProgress:{job.id}"]
    assert progress[-1]["status"] == "SUCCEEDED" and progress[-1]["candidate_id"] == candidate.id
    assert [e["progress"] for e in progress] == sorted(e["progress"] for e in progress)
    # the task's update subscribers hear of the job (after each stored change) and of the evaluations it queued
    updates = [(t, e["ids"]) for t, e in events if t != f"trainingProgress:{job.id}"]
    task_id = job.task_id
    assert updates[0] == (f"trainingJobUpdated:#{task_id}", [job.id])  # started
    assert (f"evaluationUpdated:#{task_id}", sorted(e.id for e in evaluations)) in [
        (t, sorted(ids)) for t, ids in updates
    ]
    assert updates[-1] == (f"trainingJobUpdated:#{task_id}", [job.id])  # succeeded
    assert {t for t, _ in updates} == {f"trainingJobUpdated:#{task_id}", f"evaluationUpdated:#{task_id}"}

    # the candidate and its parent are no submissions of the admin's: the day's three remain
    for i in range(3):
        await submission_service.submit_model(
            p,
            admin,
            task_code="toy",
            name=f"mine-{i}",
            backend="python",
            config={"callable": "toy_plugin:keyword_model"},
        )

    # delivered again (a worker died before acknowledging): nothing more happens
    await JobRun(p.settings, job.id, enqueue=sent.append, plugins=p.plugins).run()
    assert await _count(p, RegisteredModel) == 2 and await _count(p, Evaluation) == 2 + 3

    # the same data, recipe and seed give the same weights
    again = await training_service.train_candidate(
        p, admin, task_code="toy", dataset_ids=[train], hyperparameters={"smoothing": 0.5}, seed=4
    )
    await JobRun(p.settings, again.id, plugins=p.plugins).run()
    second = await training_service.get_job(p, admin, again.id)
    assert (await training_service.get_registered(p, admin, second.candidate_id)).weights == candidate.weights


async def test_owners_put_the_round_targets_on_the_matrix(trainer):
    p = trainer
    admin = await _admin(p)
    scoring = await _dataset(p, "words-test", _rows(), access=DatasetAccess.SCORING)
    [model] = await training_service.evaluate_round_targets(p, admin, "toy")
    assert (model.name, model.published, model.user_id) == ("keyword", False, admin.user_id)
    assert await training_service.evaluate_round_targets(p, admin, "toy") == []  # once per registry entry
    async with p.db.session() as s:
        [evaluation] = list(await s.scalars(select(Evaluation)))
        entry = await s.scalar(select(RegisteredModel))
    assert (evaluation.model_id, evaluation.dataset_id, entry.model_id) == (model.id, scoring, model.id)
    matrix = await training_service.round_model_matrix(p, admin, "toy")
    assert [row.entry.id for row in matrix.rows] == [entry.id] and matrix.test_sets == {}
    with pytest.raises(Forbidden):
        await training_service.evaluate_round_targets(p, await _writer(p), "toy")


async def _writer(p: Platform) -> Actor:
    from dynaforge.services import auth as auth_service

    user = await auth_service.create_user(
        p, Actor.system(), username="writer", email="writer@example.org", password="correct horse battery"
    )
    return Actor(user_id=user.id, username=user.username)


async def test_a_job_a_dead_worker_left_running_starts_over(trainer):
    p = trainer
    admin = await _admin(p)
    job = await training_service.train_candidate(
        p, admin, task_code="toy", dataset_ids=[await _dataset(p, "words", _rows())]
    )
    async with p.db.write() as s:
        await training_service.mark(s, job.id, status=TrainingStatus.RUNNING, attempts=1, progress=0.2)
    await JobRun(p.settings, job.id, plugins=p.plugins).run()
    done = await training_service.get_job(p, admin, job.id)
    assert (done.status, done.attempts) == (TrainingStatus.SUCCEEDED, 2)


async def test_a_failing_recipe_or_a_slow_one_fails_the_job_and_registers_nothing(trainer):
    p = trainer
    admin = await _admin(p)
    one_label = await _dataset(p, "only-good", [(t, "good") for t in GOOD])
    job = await training_service.train_candidate(p, admin, task_code="toy", dataset_ids=[one_label])
    await JobRun(p.settings, job.id, plugins=p.plugins).run()
    failed = await training_service.get_job(p, admin, job.id)
    assert failed.status == TrainingStatus.FAILED
    assert "need both labels" in failed.error and "Traceback" in failed.log_tail

    p.settings = p.settings.model_copy(update={"training_memory_limit_mb": 400})
    greedy = await training_service.train_candidate(
        p, admin, task_code="toy", dataset_ids=[one_label], hyperparameters={"ballast_mb": 2000}
    )
    await JobRun(p.settings, greedy.id, plugins=p.plugins).run()
    starved = await training_service.get_job(p, admin, greedy.id)
    assert starved.status == TrainingStatus.FAILED and "TRAINING_MEMORY_LIMIT_MB is 400" in starved.error

    p.settings = p.settings.model_copy(update={"training_timeout_s": 1.5})
    slow = await training_service.train_candidate(
        p, admin, task_code="toy", dataset_ids=[await _dataset(p, "words", _rows())], hyperparameters={"pause_s": 30.0}
    )
    await JobRun(p.settings, slow.id, plugins=p.plugins).run()
    stopped = await training_service.get_job(p, admin, slow.id)
    assert stopped.status == TrainingStatus.FAILED and "TRAINING_TIMEOUT_S" in stopped.error
    async with p.db.session() as s:
        trained = await s.scalar(
            select(func.count())
            .select_from(RegisteredModel)
            .where(RegisteredModel.origin == RegisteredModelOrigin.TRAINED)
        )
    assert trained == 0
    assert not list((p.settings.data_dir / "training").iterdir())  # working folders are removed


async def test_a_queued_job_is_cancelled_at_once(trainer):
    p = trainer
    admin = await _admin(p)
    job = await training_service.train_candidate(
        p, admin, task_code="toy", dataset_ids=[await _dataset(p, "words", _rows())]
    )
    cancelled = await training_service.cancel_training(p, admin, job.id)
    assert cancelled.status == TrainingStatus.CANCELLED
    await JobRun(p.settings, job.id, plugins=p.plugins).run()  # its message still arrives: nothing happens
    assert (await training_service.get_job(p, admin, job.id)).candidate_id is None


async def test_a_job_tunes_on_the_dev_set_and_keeps_the_most_accurate(trainer):
    p = trainer
    admin = await _admin(p)
    train = await _dataset(p, "words-train", _rows())
    # a dev set whose words the training set has seen once each: how much smoothing and pruning is right shows here
    dev_rows = [("a lovely soup", "good"), ("a superb view", "good"), ("not a cheerful game", "bad")]
    dev_rows += [("never a splendid walk", "bad"), ("no excellent film", "bad"), ("a good good song", "good")]
    dev = await _dataset(p, "words-dev", dev_rows)
    job = await training_service.train_candidate(
        p, admin, task_code="toy", dataset_ids=[train], hyperparameters={"smoothing": 1.0}, tune_on=dev
    )
    # smoothing was given: only min_count is tuned, the default first
    assert job.tuning_dataset_id == dev and job.tuning_grid == [{"min_count": 1}, {"min_count": 2}]
    events: list[dict[str, Any]] = []
    await JobRun(p.settings, job.id, publish=lambda t, e: events.append(e), plugins=p.plugins).run()
    done = await training_service.get_job(p, admin, job.id)
    assert done.status == TrainingStatus.SUCCEEDED, (done.error, done.log_tail)
    candidate = await training_service.get_registered(p, admin, done.candidate_id)
    tuning = candidate.metrics["tuning"]
    assert [t["hyperparameters"] for t in tuning["trials"]] == job.tuning_grid
    assert tuning["dataset"]["id"] == dev and tuning["dataset"]["size"] == len(dev_rows)
    accuracies = [t["dev_accuracy"] for t in tuning["trials"]]
    best = accuracies.index(max(accuracies))  # the first of the best
    assert tuning["chosen"] == job.tuning_grid[best]
    # words seen once are noise on this dev set: pruning them is better, so the default is not kept
    assert accuracies == [2 / 6, 3 / 6] and tuning["chosen"] == {"min_count": 2}
    assert candidate.hyperparameters == {**job.hyperparameters, **tuning["chosen"]}
    # the kept model is what a plain job with the chosen values trains, and scores on the dev set what it said
    folder = ArtifactStore.from_settings(p.settings).folder(candidate.weights)
    record = json.loads((folder / "training.json").read_text())
    assert record["tuning"] == tuning and record["hyperparameters"] == candidate.hyperparameters
    from toy_plugin import load_words

    model = load_words(weights_dir=folder)
    predicted = model.predict([{"text": text} for text, _ in dev_rows])
    assert sum(o["label"] == gold for o, (_, gold) in zip(predicted, dev_rows, strict=True)) / len(dev_rows) == max(
        accuracies
    )
    plain = await training_service.train_candidate(
        p, admin, task_code="toy", dataset_ids=[train], hyperparameters=candidate.hyperparameters
    )
    await JobRun(p.settings, plain.id, plugins=p.plugins).run()
    plain_done = await training_service.get_job(p, admin, plain.id)
    plain_folder = ArtifactStore.from_settings(p.settings).folder(
        (await training_service.get_registered(p, admin, plain_done.candidate_id)).weights
    )
    assert (plain_folder / "words.json").read_bytes() == (folder / "words.json").read_bytes()
    # the progress covers every trial, in order
    fractions = [e["progress"] for e in events if "progress" in e and e.get("status") == "RUNNING"]
    assert fractions == sorted(fractions)
    assert any("trial 2/2 (min_count=2)" in str(e.get("stage")) for e in events)


async def test_tuning_refuses_sets_it_must_not_see(trainer):
    p = trainer
    admin = await _admin(p)
    train = await _dataset(p, "words-train", _rows())
    scoring = await _dataset(p, "words-test", _rows()[::2], access=DatasetAccess.SCORING)
    cases = [
        ({"tune_on": scoring}, "unsuitable"),  # what candidates are ranked on
        ({"tune_on": train}, "unsuitable"),  # what the job trains on
        ({"tune_on": 10_000}, "not_found"),
        ({"tune_on": scoring, "hyperparameters": {"smoothing": 2.0, "min_count": 2}}, "nothing_to_tune"),
    ]
    for change, rule in cases:
        with pytest.raises(InvalidInput) as raised:
            await training_service.train_candidate(p, admin, task_code="toy", dataset_ids=[train], **change)
        assert [(e.field, e.rule) for e in raised.value.field_errors] == [("tuneOn", rule)], change
    assert await _count(p, TrainingJob) == 0


async def test_bad_requests_say_what_to_change_and_store_nothing(trainer):
    p = trainer
    admin = await _admin(p)
    train = await _dataset(p, "words", _rows())
    cases = [
        ({"recipe": "bert"}, "recipe"),
        ({"hyperparameters": {"smoothing": "much"}}, "hyperparameters.smoothing"),
        ({"hyperparameters": {"depth": 3}}, "hyperparameters.depth"),
        ({"seed": -1}, "seed"),
        ({"dataset_ids": []}, "datasets"),
        ({"dataset_ids": [train, 10_000]}, "datasets"),
        ({"include_base_data": True}, "includeBaseData"),
    ]
    for change, field in cases:
        arguments: dict[str, Any] = {"task_code": "toy", "dataset_ids": [train], **change}
        with pytest.raises(InvalidInput) as raised:
            await training_service.train_candidate(p, admin, **arguments)
        assert field in [e.field for e in raised.value.field_errors], (change, raised.value.field_errors)
    assert await _count(p, TrainingJob) == 0
    with pytest.raises(NotFound):
        await training_service.cancel_training(p, admin, 12345)

    p.settings = p.settings.model_copy(update={"training_jobs_per_day": 1})
    await training_service.train_candidate(p, admin, task_code="toy", dataset_ids=[train])
    with pytest.raises(QuotaExceeded) as refused:
        await training_service.train_candidate(p, admin, task_code="toy", dataset_ids=[train])
    assert (refused.value.quota, refused.value.limit) == ("TRAINING_JOBS_PER_DAY", 1)
    assert 23 * 3600 < (refused.value.retry_after_s or 0) <= 24 * 3600  # when the job just started leaves the window


# --------------------------------------------------------------------------- pinning a round's targets


class PinnedTask(Task):
    """A task whose default target is its recipe's model, with shipped weights in a folder the test writes."""

    code = "pinned"
    name = "Pinned"
    labels = ("good", "bad")
    fields = __import__("toy_plugin").ToyTask.fields
    shipped: Path = Path()

    @property
    def training_recipes(self):  # type: ignore[override]
        return (
            TrainingRecipe(
                name="words",
                model="words",
                trainer="toy_plugin:train_words",
                factory="toy_plugin:load_words",
                shipped=self.shipped,
            ),
        )

    @property
    def default_target_models(self):  # type: ignore[override]
        return (ModelSpec("words", "python", {"factory": "toy_plugin:load_words"}),)


async def test_rounds_pin_the_weights_their_targets_load(live_template, db_url, tmp_path, monkeypatch):
    from dynaforge.db.engine import Database
    from dynaforge.inference.client import LocalInferenceClient

    shipped = tmp_path / "shipped"
    shipped.mkdir()
    words = {"format": "toy-words/1", "smoothing": 1.0, "priors": {"good": 1, "bad": 1}, "counts": {"good": {}}}
    (shipped / "words.json").write_text(json.dumps(words))
    task = PinnedTask()
    task.shipped = shipped

    class Plugin:
        __name__ = "pinned"

        @hookimpl
        def register_tasks(self, register):
            register(task)

    monkeypatch.setenv("DYNAFORGE_DATA_DIR", str(tmp_path / "data"))  # where the model's loader looks
    url = await _fresh_database(live_template, db_url, tmp_path)
    plugins = Plugins(allowlist=set(), extra=[Plugin()])
    settings = make_settings(url, data_dir=tmp_path / "data")
    p = Platform.create(
        settings, db=Database(url), plugins=plugins, inference=LocalInferenceClient(plugins.registry.backends)
    )
    try:
        await task_service.sync_registered_tasks(p)
        async with p.db.session() as s:
            first = await s.scalar(select(Round))
            shipped_entry = await s.get(RegisteredModel, first.target_registry_ids[0])
        digest = content_hash(shipped)
        assert first.target_models[0]["config"] == {
            "factory": "toy_plugin:load_words",
            "kwargs": {"weights_artifact": digest},
        }
        assert (shipped_entry.origin, shipped_entry.weights) == (RegisteredModelOrigin.SHIPPED, digest)

        # an operator trains into the store: the next round pins that version, round 1 keeps its own
        trained = tmp_path / "trained"
        trained.mkdir()
        (trained / "words.json").write_text(json.dumps({**words, "counts": {"good": {"fine": 3}}}))
        version = ModelStore.from_settings(settings).add("pinned", "words", trained)
        opened, _ = await task_service.open_next_round(
            p,
            Actor.system(),
            "pinned",
            models=[{"name": "words", "backend": "python", "config": {"factory": "toy_plugin:load_words"}}],
        )
        async with p.db.session() as s:
            entry = await s.get(RegisteredModel, opened.target_registry_ids[0])
        assert (entry.origin, entry.weights) == (RegisteredModelOrigin.STORE, version.version)
        assert opened.target_models[0]["config"]["kwargs"]["weights_artifact"] == version.version
        predictor = plugins.registry.backends["python"].load(opened.target_models[0]["config"])
        assert predictor.predict([{"text": "fine"}])[0]["label"] == "good"

        # the same target again reuses its entry; a promoted registry entry of another task is not found
        again, _ = await task_service.open_next_round(p, Actor.system(), "pinned")
        assert again.target_registry_ids == opened.target_registry_ids
        with pytest.raises(NotFound):
            await task_service.open_next_round(p, Actor.system(), "pinned", candidate_id=99_999)
    finally:
        await p.close()


async def _fresh_database(live_template: Any, db_url: str, tmp_path: Path) -> str:
    import shutil
    import uuid

    from support import asyncpg_url, pg_execute

    if db_url.startswith("postgresql"):
        name = f"dynaforge_pinned_{uuid.uuid4().hex[:10]}"
        await pg_execute(f'CREATE DATABASE "{name}" TEMPLATE "{live_template}"')
        return asyncpg_url(name)
    shutil.copyfile(live_template, tmp_path / "pinned.db")
    return f"sqlite+aiosqlite:///{tmp_path}/pinned.db"


def test_a_recipe_declares_what_it_tunes():
    recipe = TrainingRecipe(
        name="r",
        model="m",
        trainer="a:b",
        factory="a:c",
        hyperparameters={"n": 1, "x": 0.5, "s": "a"},
        tuning={"x": (0.5, 0.1, 0.9), "n": (2, 1)},
    )
    # every combination, the defaults first
    assert recipe.tuning_grid() == [
        {"x": 0.5, "n": 1},
        {"x": 0.5, "n": 2},
        {"x": 0.1, "n": 1},
        {"x": 0.1, "n": 2},
        {"x": 0.9, "n": 1},
        {"x": 0.9, "n": 2},
    ]
    assert recipe.tuning_grid(given={"x"}) == [{"n": 1}, {"n": 2}] and recipe.tuning_grid({"x", "n"}) == [{}]
    from dynaforge.tasks.base import tuning_problems

    assert tuning_problems(recipe) == []
    bad = TrainingRecipe(
        name="r",
        model="m",
        trainer="a:b",
        factory="a:c",
        hyperparameters={"n": 1, "x": 0.5},
        tuning={"y": (1,), "n": ("one",), "x": ()},
    )
    problems = tuning_problems(bad)
    assert any("'y', which is not one of its hyper-parameters" in p for p in problems)
    assert any("of n: every value must have the default's type" in p for p in problems)
    assert any("of x must be a non-empty tuple" in p for p in problems)
    many = TrainingRecipe(
        name="r", model="m", trainer="a:b", factory="a:c", hyperparameters={"n": 1}, tuning={"n": tuple(range(7))}
    )
    assert any("at most 6" in p for p in tuning_problems(many))


def test_the_recipe_checks_its_declaration():
    assert HERE.is_dir()
    recipe = TrainingRecipe(name="r", model="m", trainer="a:b", factory="a:c", hyperparameters={"n": 1, "x": 0.5})
    values, errors = recipe.check_hyperparameters({"n": 2, "x": 1})
    assert values == {"n": 2, "x": 1.0} and errors == []
    _, errors = recipe.check_hyperparameters({"n": True, "x": "1"})
    assert [(e.field, e.rule) for e in errors] == [("hyperparameters.n", "type"), ("hyperparameters.x", "type")]


def test_the_train_command_runs_the_recipe_into_the_store(tmp_path):
    """`dynaforge train` takes the recipe's path: examples from a JSON-lines file, hyper-parameters, the store."""
    from support import DYNAFORGE, cli

    env = toy_process_env(tmp_path, f"sqlite+aiosqlite:///{tmp_path}/unused.db", data_dir=str(tmp_path / "data"))
    examples = tmp_path / "examples.jsonl"
    examples.write_text("".join(json.dumps({"fields": {"text": t, "label": label}}) + "\n" for t, label in _rows()))
    result = cli(env, tmp_path, "train", "toy", "--examples", str(examples), "--set", "smoothing=0.25", "--seed", "2")
    metrics = json.loads(result.stdout)
    assert metrics["training_accuracy"] == 1.0
    current = ModelStore(tmp_path / "data" / "models").current("toy", "words")
    assert current is not None and metrics["weights_version"] == current.version
    record = json.loads((current.path / "training.json").read_text())
    assert record["hyperparameters"]["smoothing"] == 0.25 and record["seed"] == 2
    assert record["data"]["sources"][0]["name"] == "examples.jsonl"
    refused = subprocess.run(
        [DYNAFORGE, "train", "toy", "--examples", str(examples), "--set", "depth=3"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode != 0 and "no hyper-parameter 'depth'" in refused.stderr
