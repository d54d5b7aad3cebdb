"""Tasks declared as data (dynaforge.tasks.declarative, declareTask): checked against the published JSON Schema and
the task contract, created and updated by admins through GraphQL with no restart, loaded by another process when it
meets the code, and run like any task: a declared task collects examples against its http target model and ranks
submitted models on its leaderboard. On SQLite and PostgreSQL."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
from support import make_user, register_user, serve_in_thread

from dynaforge.db.models import TaskProposal
from dynaforge.errors import InvalidInput
from dynaforge.inference.backends import ModelBackend
from dynaforge.inference.client import LocalInferenceClient
from dynaforge.inference.http_server import create_model_server
from dynaforge.plugins import Plugins
from dynaforge.services import datasets, examples, leaderboard, submissions, validation
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor
from dynaforge.services.evaluation_runner import Runner
from dynaforge.services.platform import Platform
from dynaforge.tasks.base import Task
from dynaforge.tasks.declarative import DECLARATION_SCHEMA, FOOLED_RULES, load_declaration, read_file
from dynaforge.tasks.fields import Role


class Keyword:
    """Says 'good' when the text has the word 'good' (with its probabilities), else 'bad'."""

    def predict(self, inputs):
        out = []
        for item in inputs:
            good = "good" in item["text"].lower().split()
            p_good = 0.9 if good else 0.2
            out.append({"label": "good" if good else "bad", "probabilities": {"good": p_good, "bad": 1 - p_good}})
        return out


class Contrary:
    """Always the other answer than Keyword's."""

    def predict(self, inputs):
        return [{"label": "bad" if o["label"] == "good" else "good"} for o in Keyword().predict(inputs)]


@pytest.fixture(scope="module")
def keyword_url():
    with serve_in_thread(create_model_server(Keyword(), name="keyword")) as url:
        yield url


@pytest.fixture(scope="module")
def contrary_url():
    with serve_in_thread(create_model_server(Contrary(), name="contrary")) as url:
        yield url


def reviews(url: str, **changes) -> dict:
    """The declaration the tests start from: a two-label review task whose target is the keyword model server."""
    declared = {
        "code": "reviews",
        "name": "Reviews",
        "description": "Short reviews labelled good or bad.",
        "instructions": "Write a short review and say whether it is good or bad. The model reads single words: a "
        "review that praises without the word 'good' fools it.",
        "labels": ["good", "bad"],
        "fields": [
            {"name": "text", "type": "text", "role": "input", "max_length": 200, "description": "Your review."},
            {"name": "label", "type": "choice", "role": "target"},
            {"name": "genre", "type": "choice", "role": "metadata", "choices": ["film", "book"], "required": False},
        ],
        "metrics": ["accuracy", "macro_f1"],
        "principal_metric": "accuracy",
        "perturbations": ["lowercase"],
        "slices": [{"name": "reviews-genre", "field": "genre"}],
        "fooled": {"rule": "target_differs"},
        "target_models": [{"name": "keyword", "backend": "http", "config": {"url": url}}],
        "sample_examples": [
            {"text": "A good film.", "label": "good", "genre": "film"},
            {"text": "A dull book.", "label": "bad", "genre": "book"},
        ],
    }
    declared.update(changes)
    return declared


# ---------------------------------------------------------------- the declaration itself


def test_a_declaration_becomes_a_task():
    task = load_declaration(reviews("http://127.0.0.1:9"))
    assert (task.code, task.name, task.labels, task.principal_metric) == (
        "reviews",
        "Reviews",
        ("good", "bad"),
        "accuracy",
    )
    assert [(f.name, f.role) for f in task.fields] == [
        ("text", Role.INPUT),
        ("label", Role.TARGET),
        ("genre", Role.METADATA),
    ]
    assert task.fairness_slices == ("reviews-genre",) and task.perturbations == ("lowercase",)
    assert task.submission_kinds == ("model", "predictions") and task.data_selection is None
    assert task.default_target_models[0].as_dict() == {
        "name": "keyword",
        "backend": "http",
        "config": {"url": "http://127.0.0.1:9"},
    }
    assert task.json_schema(Role.TARGET)["properties"]["label"]["enum"] == ["good", "bad"]
    assert task.declaration == reviews("http://127.0.0.1:9")


def problems(data) -> list[tuple[str, str]]:
    with pytest.raises(InvalidInput) as caught:
        load_declaration(data)
    return [(e.field, e.rule) for e in caught.value.field_errors]


def test_a_declaration_is_checked_against_the_schema_then_the_contract():
    base = reviews("http://127.0.0.1:9")
    assert problems({**base, "fields": [{"name": "Text", "type": "prose", "role": "input"}]}) == [
        ("definition.fields", "schema"),  # one field is too few
        ("definition.fields[0].name", "schema"),
        ("definition.fields[0].type", "schema"),
    ]
    python = copy.deepcopy(base)
    python["target_models"][0]["backend"] = "python"  # no code of the declaration's own runs on the server
    assert problems(python) == [("definition.target_models[0].backend", "schema")]
    assert problems({**base, "principal_metric": "f1"}) == [("definition", "declaration")]
    assert problems({**base, "fooled": {"rule": "number_off_by", "field": "label"}}) == [
        ("definition.fooled", "declaration"),
        ("definition.fooled", "declaration"),
    ]
    assert problems({**base, "slices": [{"name": "reviews-mood", "field": "mood"}]}) == [
        ("definition.slices[0].field", "declaration")
    ]
    wrong_sample = {**base, "sample_examples": [{"text": "fine", "label": "meh"}, {"text": "ok", "label": "good"}]}
    assert problems(wrong_sample) == [("definition.sample_examples[0].label", "choice")]
    misfit = copy.deepcopy(base)
    misfit["fields"][0]["choices"] = ["a"]
    assert problems(misfit) == [("definition.fields[0]", "declaration")]


def test_the_fooled_rules():
    task = load_declaration(reviews("http://127.0.0.1:9"))
    assert set(FOOLED_RULES) == {
        "target_differs",
        "gold_probability_below",
        "number_off_by",
        "metric_below",
        "judge",
        "people",
    }
    assert task.is_fooled({"label": "good"}, {"label": "bad"}, {}) and not task.is_fooled(
        {"label": "bad"}, {"label": "bad"}, {}
    )
    unsure = load_declaration(
        reviews("http://127.0.0.1:9", fooled={"rule": "gold_probability_below", "field": "label", "threshold": 0.7})
    )
    # right, but not sure enough: fooled; over the whole output, not the label alone
    assert unsure.is_fooled({"label": "good"}, {"label": "good", "probabilities": {"good": 0.6, "bad": 0.4}}, {})
    assert not unsure.is_fooled({"label": "good"}, {"label": "good", "probabilities": {"good": 0.8, "bad": 0.2}}, {})
    assert unsure.is_fooled({"label": "good"}, {"label": "bad"}, {})  # no probabilities: the label decides
    rating = reviews(
        "http://127.0.0.1:9",
        labels=[],
        fields=[
            {"name": "text", "type": "text", "role": "input"},
            {"name": "stars", "type": "number", "role": "target", "minimum": 1, "maximum": 5},
        ],
        slices=[],
        fooled={"rule": "number_off_by", "field": "stars", "tolerance": 1},
        sample_examples=[{"text": "fine", "stars": 3}, {"text": "great", "stars": 5}],
    )
    scored = load_declaration(rating)
    assert not scored.is_fooled({"stars": 4}, {"stars": 3.2}, {}) and scored.is_fooled({"stars": 4}, {"stars": 2.5}, {})
    assert scored.is_fooled({"stars": 4}, {"stars": "four"}, {})


def test_declarations_are_read_from_json_or_yaml(tmp_path: Path):
    import json

    import yaml

    data = reviews("http://127.0.0.1:9")
    (tmp_path / "t.json").write_text(json.dumps(data))
    (tmp_path / "t.yaml").write_text(yaml.safe_dump(data))
    assert read_file(tmp_path / "t.json") == read_file(tmp_path / "t.yaml") == data


def test_the_published_schema_file_is_the_schema():
    import json

    published = Path(__file__).parent.parent / "docs" / "declared-task.schema.json"
    assert json.loads(published.read_text()) == DECLARATION_SCHEMA, (
        "run: dynaforge declared-schema > docs/declared-task.schema.json"
    )


# ---------------------------------------------------------------- through the API, run like any task

DECLARE = """
mutation($input: DeclareTaskInput!) {
  declareTask(input: $input) {
    __typename
    ... on TaskDeclared { task { code name declared declaration currentRound { number targetModels { name } } } }
    ... on Error { message }
    ... on InvalidInput { fieldErrors { field rule } }
  }
}"""
UPDATE = """
mutation($input: UpdateDeclaredTaskInput!) {
  updateDeclaredTask(input: $input) {
    __typename ... on TaskDeclared { task { name labels } } ... on Error { message }
  }
}"""


async def test_admins_declare_a_task_that_collects_and_ranks_at_once(gql, platform, keyword_url, contrary_url):
    token, _ = await register_user(gql, "somebody")
    admin = await make_user(platform, "declarer", admin=True)
    admin_token = await _token(platform, admin)
    schema = await gql("{ declaredTaskSchema }", token=None)
    assert schema["declaredTaskSchema"] == DECLARATION_SCHEMA

    refused = (await gql(DECLARE, {"input": {"definition": reviews(keyword_url)}}, token=token))["declareTask"]
    assert refused["__typename"] == "Forbidden"
    bad = (
        await gql(
            DECLARE,
            {"input": {"definition": reviews(keyword_url, metrics=["acuracy"], principal_metric="acuracy")}},
            token=admin_token,
        )
    )["declareTask"]
    assert bad["fieldErrors"] == [{"field": ["definition"], "rule": "plugin"}], bad
    assert "metric 'acuracy' is not registered" in bad["message"]
    taken = (await gql(DECLARE, {"input": {"definition": reviews(keyword_url, code="toy")}}, token=admin_token))[
        "declareTask"
    ]
    assert taken["__typename"] == "AlreadyExists"
    assert platform.plugins.task("reviews") is None  # nothing stored or loaded by the refusals

    made = (await gql(DECLARE, {"input": {"definition": reviews(keyword_url)}}, token=admin_token))["declareTask"]
    assert made["__typename"] == "TaskDeclared", made
    assert made["task"] == {
        "code": "reviews",
        "name": "Reviews",
        "declared": True,
        "declaration": reviews(keyword_url),
        "currentRound": {"number": 1, "targetModels": [{"name": "keyword"}]},
    }
    again = (await gql(DECLARE, {"input": {"definition": reviews(keyword_url)}}, token=admin_token))["declareTask"]
    assert again["__typename"] == "AlreadyExists"
    seen = await gql(
        '{ task(code: "reviews") { declared declaration } toy: task(code: "toy") { declared } }', token=token
    )
    assert seen == {"task": {"declared": True, "declaration": None}, "toy": {"declared": False}}

    # collection against the declared target, validation, a scoring set
    platform.settings.examples_per_minute = 1000
    author = await make_user(platform, "writer")
    written = [
        ({"text": "A splendid film", "label": "good", "genre": "film"}, True),
        ({"text": "A good film", "label": "good", "genre": "film"}, False),
        ({"text": "A dull book", "label": "bad", "genre": "book"}, False),
    ]
    for fields, fooled in written:
        outcome = await examples.submit(platform, author, task_code="reviews", fields=fields)
        assert outcome.example.fooled is fooled, fields
        await validation.validate(platform, admin, outcome.example.id, "CORRECT")
    scoring = [("r", {"text": t, "label": label, "genre": g}) for t, label, g in [
        ("good acting", "good", "film"), ("a good read", "good", "book"), ("bad plot", "bad", "film"),
        ("dreadful prose", "bad", "book")]]  # fmt: skip
    await datasets.create_dataset(platform, Actor.system(), "reviews", "reviews-test", scoring)

    # two submitted models, evaluated by a worker that has never heard of the task (it loads it from the database)
    builder = await make_user(platform, "builder")
    worker = Runner(platform.settings, Plugins(allowlist=set()), db=platform.db)
    for name, url in (("contrary", contrary_url), ("keyword", keyword_url)):
        _, queued = await submissions.submit_model(
            platform, builder, task_code="reviews", name=name, backend="http", config={"url": url}, published=True
        )
        for evaluation in queued:
            assert await worker.run(evaluation.id) == "DONE"
    board = await leaderboard.compute(platform, Actor.anonymous(), "reviews")
    ranked = [(row.rank, row.model_name, by_name_value(row, "accuracy")) for row in board.rows]
    # ranked, though no model has a fairness figure (the task has no fairness copy): that axis weighs 0 by default
    assert ranked == [(1, "keyword", 1.0), (2, "contrary", 0.0)]

    # another server process over the same database meets the code and loads the task
    other = Platform.create(platform.settings, db=platform.db, plugins=Plugins(allowlist=set()),
                            inference=LocalInferenceClient({}, timeout_s=1.0))  # fmt: skip
    try:
        view = await task_service.get_task(other, Actor.anonymous(), "reviews")
        assert view.task.name == "Reviews" and "reviews-genre" in other.plugins.registry.slices
    finally:
        await other.inference.close()

    renamed = reviews(keyword_url, name="Short reviews")
    updated = (await gql(UPDATE, {"input": {"code": "reviews", "definition": renamed}}, token=admin_token))[
        "updateDeclaredTask"
    ]
    assert updated == {"__typename": "TaskDeclared", "task": {"name": "Short reviews", "labels": ["good", "bad"]}}
    moved = (await gql(UPDATE, {"input": {"code": "reviews", "definition": reviews(keyword_url, code="other")}},
                       token=admin_token))["updateDeclaredTask"]  # fmt: skip
    assert moved["__typename"] == "InvalidInput"
    missing = (await gql(UPDATE, {"input": {"code": "toy", "definition": reviews(keyword_url, code="toy")}},
                         token=admin_token))["updateDeclaredTask"]  # fmt: skip
    assert missing["__typename"] == "NotFound"


def by_name_value(row, metric: str) -> float:
    return {m.name: m.value for m in row.metrics}[metric]


async def _token(platform, actor) -> str:
    from dynaforge.services import auth

    _, token = await auth.create_token(platform, actor, name="declared-tests")
    return token


def test_the_guide_shows_one_task_both_ways(tmp_path: Path):
    """docs/plugins.md declares the same task as a plugin and as YAML: both give the same task, and the YAML passes
    `dynaforge check --declared`."""
    import re
    import types

    import yaml
    from click.testing import CliRunner

    from dynaforge.cli import main

    guide = (Path(__file__).parent.parent / "docs" / "plugins.md").read_text(encoding="utf-8")
    python = next(b for b in re.findall(r"```python\n(.*?)```", guide, re.S) if b.startswith("# dynaforge_register"))
    declared = next(b for b in re.findall(r"```yaml\n(.*?)```", guide, re.S) if b.startswith("code: register"))
    module = types.ModuleType("dynaforge_register_plugin")
    exec(compile(python, "plugins.md", "exec"), module.__dict__)
    as_plugin, as_data = module.RegisterTask(), load_declaration(yaml.safe_load(declared))
    for attribute in ("code", "name", "description", "instructions", "labels", "fields", "metrics",
                      "principal_metric", "perturbations", "fairness_slices", "default_target_models",
                      "sample_examples", "submission_kinds"):  # fmt: skip
        assert getattr(as_plugin, attribute) == getattr(as_data, attribute), attribute
    assert as_plugin.json_schema() == as_data.json_schema()
    (tmp_path / "register.yaml").write_text(declared)
    result = CliRunner().invoke(
        main, ["--log-level", "WARNING", "check", "--declared", str(tmp_path / "register.yaml"), "--no-models"]
    )
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == "6 passed, 0 failed, 3 skipped: 9 checks on 1 task"


def test_check_reports_a_declaration_naming_an_unregistered_metric_as_broken(tmp_path: Path):
    """The exit status the guide promises: 1 for a broken plugin (a declared task refused at load is one), 2 only
    for a usage error."""
    import json

    from click.testing import CliRunner

    from dynaforge.cli import main

    path = tmp_path / "reviews.json"
    path.write_text(json.dumps(reviews("http://127.0.0.1:9", metrics=["accuracy", "acuracy"])))
    result = CliRunner().invoke(main, ["--log-level", "WARNING", "check", "--declared", str(path), "--no-models"])
    assert result.exit_code == 1, result.output
    assert result.output.startswith(
        "FAIL  plugin declared:reviews is broken and was not loaded: register_tasks failed: PluginError: task "
        "'reviews': metric 'acuracy' is not registered by any loaded plugin"
    )
    assert result.output.splitlines()[-1] == "0 passed, 0 failed, 0 skipped: 0 checks on 0 tasks; 1 plugin broken"


CODES = {"reviews": True, "re-views": True, "r_2": True, "ab": True, "a": False, "Reviews": False, "2nd": False,
         "re views": False, "r" * 41: False}  # fmt: skip


async def test_one_rule_for_task_codes_in_plugins_declarations_and_proposals(platform):
    from dynaforge.services import proposals

    verdicts = {}
    for i, code in enumerate(CODES):

        class Plugin(Task):
            pass

        Plugin.code = code
        by_plugin = not any(p.startswith("code must match") for p in Plugin().check_declaration())
        by_declaration = True
        try:
            load_declaration(reviews("http://127.0.0.1:9", code=code))
        except InvalidInput as exc:
            by_declaration = "definition.code" not in {e.field for e in exc.field_errors}
        by_proposal = True
        try:
            await proposals.propose(platform, await make_user(platform, f"proposer{i}"), code=code, name="A task")
        except InvalidInput as exc:
            by_proposal = "code" not in {e.field for e in exc.field_errors}
        verdicts[code] = (by_plugin, by_declaration, by_proposal)
    assert verdicts == {code: (valid, valid, valid) for code, valid in CODES.items()}


async def test_an_evaluation_scores_calibration_when_the_model_gives_probabilities(platform, keyword_url, contrary_url):
    """ECE and the Brier score, named by a task, score a submitted model that gives probabilities (the keyword model)
    on the whole set, with intervals and per-slice figures; a model that gives none has no calibration figure, and
    the rest of its evaluation stands."""
    from sqlalchemy import select
    from sqlmodel import col

    from dynaforge.db.models import Dataset, Evaluation, ModelRow
    from dynaforge.services import declared_tasks as declared_service

    admin = await make_user(platform, "declarer", admin=True)
    await declared_service.create(platform, admin, reviews(keyword_url, metrics=["accuracy", "ece", "brier"]))
    items = [("r", {"text": t, "label": label, "genre": g}) for t, label, g in [
        ("good acting", "good", "film"), ("a good read", "good", "book"), ("bad plot", "bad", "film"),
        ("dreadful prose", "bad", "book")]]  # fmt: skip
    await datasets.create_dataset(platform, Actor.system(), "reviews", "reviews-test", items, public_share=1.0)
    builder = await make_user(platform, "builder")
    worker = Runner(platform.settings, platform.plugins, db=platform.db)
    for name, url in (("contrary", contrary_url), ("keyword", keyword_url)):
        _, queued = await submissions.submit_model(
            platform, builder, task_code="reviews", name=name, backend="http", config={"url": url}, published=True
        )
        for evaluation in queued:
            assert await worker.run(evaluation.id) == "DONE"
    async with platform.db.session() as s:
        rows = (
            await s.execute(
                select(ModelRow.name, Evaluation)
                .join(Evaluation, col(Evaluation.model_id) == col(ModelRow.id))
                .join(Dataset, col(Dataset.id) == col(Evaluation.dataset_id))
                .where(col(Dataset.name) == "reviews-test")
            )
        ).all()  # fmt: skip
    by_model = {name: evaluation for name, evaluation in rows}
    keyword, contrary = by_model["keyword"], by_model["contrary"]
    # keyword is right on all four, at 0.9 on the two 'good' and 0.8 on the two 'bad': ECE (0.2 + 0.4) / 4; Brier
    # (2 x 0.02 + 2 x 0.08) / 4
    assert keyword.metrics["accuracy"] == 1.0
    assert keyword.metrics["ece"] == pytest.approx(0.15) and keyword.metrics["brier"] == pytest.approx(0.05)
    assert set(keyword.details["intervals"]) >= {"accuracy", "ece", "brier"}
    assert keyword.details["slices"]["reviews-genre"]["film"]["ece"] == pytest.approx((0.1 + 0.2) / 2)
    assert contrary.metrics["accuracy"] == 0.0 and "ece" not in contrary.metrics and "brier" not in contrary.metrics
    assert set(contrary.details["slices"]["reviews-genre"]["book"]) == {"accuracy", "n"}


def _with_topics(url: str, **changes) -> dict:
    """The review task with a context field, the topic annotators write about, and two demo contexts."""
    base = reviews(url)
    return {
        **base,
        "fields": [{"name": "topic", "type": "text", "role": "context", "max_length": 50}, *base["fields"]],
        "sample_examples": [{"topic": "films", **e} for e in base["sample_examples"]],
        "demo_contexts": [{"topic": "films"}, {"topic": "books"}],
        **changes,
    }


async def test_a_declarations_demo_contexts_are_its_first_rounds_contexts(platform, keyword_url):
    from sqlalchemy import select
    from sqlmodel import col

    from dynaforge.db.models import Context
    from dynaforge.services import contexts
    from dynaforge.services import declared_tasks as declared_service

    assert problems(_with_topics(keyword_url, demo_contexts=[{"topic": "x" * 60}, {"subject": "films"}])) == [
        ("definition.demo_contexts[0].topic", "max_length"),
        ("definition.demo_contexts[1].subject", "unknown_field"),
        ("definition.demo_contexts[1].topic", "required"),
    ]
    assert problems(reviews(keyword_url, demo_contexts=[{"text": "films"}])) == [
        ("definition.demo_contexts", "declaration")  # the task has no context field to fill
    ]
    admin = await make_user(platform, "declarer", admin=True)
    view = await declared_service.create(platform, admin, _with_topics(keyword_url))
    async with platform.db.session() as s:
        stored = list(await s.scalars(select(col(Context.fields)).where(col(Context.task_id) == view.row.id)))
    assert sorted(c["topic"] for c in stored) == ["books", "films"]
    served = await contexts.next_context(platform, admin, "reviews")
    assert served.fields["topic"] in ("books", "films")
    await declared_service.update(platform, admin, "reviews", _with_topics(keyword_url, name="Reviews again"))
    async with platform.db.session() as s:
        again = list(await s.scalars(select(col(Context.id)).where(col(Context.task_id) == view.row.id)))
    assert len(again) == 2  # an update adds none


async def test_a_user_proposes_a_declared_task_and_an_admin_accepts_it(gql, platform, keyword_url):
    from dynaforge.errors import InvalidInput as Invalid
    from dynaforge.services import proposals

    proposer, admin = await make_user(platform, "proposer"), await make_user(platform, "decider", admin=True)
    with pytest.raises(Invalid) as caught:
        await proposals.propose(
            platform, proposer, code="review_tasks", name="Reviews", definition=reviews(keyword_url)
        )
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("definition.code", "changed")]
    with pytest.raises(Invalid) as caught:
        await proposals.propose(platform, proposer, code="reviews", name="Reviews", definition={"code": "reviews"})
    assert {e.rule for e in caught.value.field_errors} == {"schema"}

    proposal = await proposals.propose(
        platform, proposer, code="reviews", name="Reviews", definition=reviews(keyword_url)
    )
    assert platform.plugins.task("reviews") is None  # nothing runs before an admin accepts
    token = await _token(platform, proposer)
    mine = await gql("{ taskProposals { nodes { code definition status } } }", token=token)
    assert mine["taskProposals"]["nodes"] == [
        {"code": "reviews", "definition": reviews(keyword_url), "status": "PENDING"}
    ]
    decided = await proposals.decide(platform, admin, proposal.id, accept=True, note="welcome")
    assert decided.status == "ACCEPTED"
    view = await task_service.get_task(platform, proposer, "reviews")
    assert view.task.declaration == reviews(keyword_url) and view.row.active
    assert await task_service.owns_task(platform, proposer, view.row.id)


class _Folders(ModelBackend):
    """Loads a model from a folder on the server; fails as transformers does, naming the folder."""

    name = "folders"

    def load(self, config):
        raise FileNotFoundError(f"no model folder at {config['path']!r}, and hub downloads are off")


async def test_a_proposals_targets_follow_its_proposers_rights(platform, tmp_path):
    """A local model folder is for admins only: a non-admin cannot propose one, and an admin accepting a proposal
    does not lend it their rights (the proposer chose the targets)."""
    from dynaforge.services import proposals

    proposer, admin = await make_user(platform, "proposer"), await make_user(platform, "decider", admin=True)
    local = reviews(
        "https://models.example.org",
        target_models=[{"name": "local", "backend": "transformers", "config": {"path": str(tmp_path)}}],
    )
    with pytest.raises(InvalidInput) as caught:
        await proposals.propose(platform, proposer, code="reviews", name="Reviews", definition=local)
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [
        ("definition.target_models[0].config", "not_allowed")
    ]
    async with platform.db.write() as s:  # one stored before the rule held at proposal time
        stored = TaskProposal(user_id=proposer.user_id, code="reviews", name="Reviews", definition=local)
        s.add(stored)
        await s.flush()
    with pytest.raises(InvalidInput) as caught:
        await proposals.decide(platform, admin, stored.id, accept=True)
    assert [e.rule for e in caught.value.field_errors] == ["not_allowed"]
    assert platform.plugins.task("reviews") is None
    assert (await proposals.get_proposal(platform, admin, stored.id)).status == "PENDING"


async def test_a_targets_load_error_names_no_server_path_but_to_admins(platform, tmp_path):
    folder = str(tmp_path / "secret-models" / "m")
    platform.plugins.registry.backends["folders"] = _Folders()
    target = {"name": "local", "backend": "folders", "config": {"path": folder}}
    await task_service.set_target_models(platform, Actor.system(), "toy", [target])
    annotator, admin = await make_user(platform, "annotator"), await make_user(platform, "admin1", admin=True)
    shown = {}
    for actor in (annotator, admin):
        outcome = await examples.submit(platform, actor, task_code="toy", fields={"text": "fine", "label": "good"})
        shown[actor.username] = outcome.pending_reason
    assert "no model folder at '<server path>'" in shown["annotator"] and "secret-models" not in shown["annotator"]
    assert folder in shown["admin1"]
