"""Verdicts explained and labels titled: Task.explain_verdict behind Example.verdictExplanation (consistent with the
stored verdict, on SQLite and PostgreSQL), Task.label_titles behind TaskField.choiceTitles, and the declaration
checks of both."""

from __future__ import annotations

import httpx
import pytest
from support import GraphQLClient, make_user, register_user
from toy_plugin import ToyPlugin, ToyTask

from dynaforge import ModelSpec, VerdictExplanation, hookimpl
from dynaforge.app import create_app
from dynaforge.inference.client import LocalInferenceClient
from dynaforge.plugins import Plugins
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor
from dynaforge.services.platform import Platform


def share_model(inputs):
    """Answers 'good' with the share of the words that are 'good' as its probability."""
    answers = []
    for item in inputs:
        words = item["text"].lower().split()
        good = sum(w == "good" for w in words) / max(1, len(words))
        answers.append({"label": "good" if good >= 0.5 else "bad", "probabilities": {"good": good, "bad": 1 - good}})
    return answers


class ScoredTask(ToyTask):
    """Fooled when the model gives the author's label a probability below the task's threshold."""

    code = "scored"
    name = "Scored"
    label_titles = {"bad": "not good"}
    fooled_threshold = 0.5
    fooled_threshold_range = (0.0, 1.0)
    default_target_models = (ModelSpec("share", "python", {"callable": "test_verdict_explanation:share_model"}),)

    def is_fooled(self, example, prediction, context):
        return self.explain_verdict(example, prediction, context).fooled

    def explain_verdict(self, example, prediction, context):
        probability = float(prediction.get("probabilities", {}).get(example["label"], 0.0))
        return VerdictExplanation("the model's probability of your label", probability, self.fooled_threshold)


class ScoredPlugin:
    @hookimpl
    def register_tasks(self, register):
        register(ScoredTask())


@pytest.fixture
async def gql(db, settings):
    plugins = Plugins(allowlist=set(), extra=[ToyPlugin(), ScoredPlugin()])
    p = Platform.create(
        settings, db=db, plugins=plugins, inference=LocalInferenceClient(plugins.registry.backends, timeout_s=5.0)
    )
    await task_service.sync_registered_tasks(p)
    app = create_app(platform=p, sync_tasks=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        client = GraphQLClient(http)
        client.platform = p
        yield client
    await p.inference.close()


WRITE = """mutation($c: String!, $t: String!, $l: String!) {
  createExample(input: {taskCode: $c, fields: {text: $t, label: $l}}) { __typename
    ... on ExampleCreated { example { id fooled verdictExplanation { measure score threshold fooledBelow } } } } }"""


async def test_a_rule_with_a_threshold_explains_its_verdict(gql):
    token, user_id = await register_user(gql, "writer")
    fooled = (await gql(WRITE, {"c": "scored", "t": "good good bad", "l": "bad"}, token=token))["createExample"]
    example = fooled["example"]
    assert example["fooled"] is True
    assert example["verdictExplanation"] == {
        "measure": "the model's probability of your label",
        "score": pytest.approx(1 / 3),
        "threshold": 0.5,
        "fooledBelow": True,
    }
    kept = (await gql(WRITE, {"c": "scored", "t": "good good bad", "l": "good"}, token=token))["createExample"]
    assert kept["example"]["fooled"] is False
    assert kept["example"]["verdictExplanation"]["score"] == pytest.approx(2 / 3)
    # A rule that compares answers has nothing to add: the prediction shows it.
    toy = (await gql(WRITE, {"c": "toy", "t": "a good day", "l": "bad"}, token=token))["createExample"]
    assert toy["example"]["fooled"] is True and toy["example"]["verdictExplanation"] is None
    # The owners move the threshold: the old verdict no longer follows from it, so it is not explained with it.
    boss = await make_user(gql.platform, "user_boss")
    await task_service.grant_ownership(gql.platform, Actor.system(), "scored", boss.user_id)
    await task_service.update_settings(gql.platform, boss, "scored", {"fooled_threshold": 0.2})
    again = await gql(
        "query($id: ID!) { node(id: $id) { ... on Example { fooled verdictExplanation { score } } } }",
        {"id": example["id"]},
        token=token,
    )
    assert again["node"] == {"fooled": True, "verdictExplanation": None}


async def test_label_titles_are_shown_beside_the_values(gql):
    fields = await gql('{ task(code: "scored") { fields { name choices choiceTitles } } }', token=None)
    label = next(f for f in fields["task"]["fields"] if f["name"] == "label")
    assert (label["choices"], label["choiceTitles"]) == (["good", "bad"], ["good", "not good"])
    toy = await gql('{ task(code: "toy") { fields { name choices choiceTitles } } }', token=None)
    assert next(f for f in toy["task"]["fields"] if f["name"] == "label")["choiceTitles"] == ["good", "bad"]


def test_label_titles_must_name_real_values():
    class Wrong(ScoredTask):
        code = "wrong"
        label_titles = {"grand": "Grand", "bad": " "}

    problems = Wrong().check_declaration()
    assert "label_titles names values that no label or choice has: grand" in problems
    assert "label_titles must map each value to a non-empty title" in problems
    assert ScoredTask().check_declaration() == []
    assert ScoredTask().title_of("bad") == "not good" and ScoredTask().title_of("good") == "good"
