"""Machine adversaries through GraphQL, on SQLite and PostgreSQL: suggestions to an annotator (suggestEdits, an
ASSISTED example written from one), a generation run (generateCandidates, MACHINE examples in the validation queue),
validators who see the source only after voting, and every counter and vMER split by source, exactly.

The task is the toy task with two robustness perturbations, its target the keyword model (``good`` in the text:
good, else bad). The test's own template adversary knows that the model knows only the word ``good``: a synonym
fools it. The built-in perturbation search is asked too: a typo in ``good`` fools the same model."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from support import register_user
from toy_plugin import ToyTask

from dynaforge import hookimpl
from dynaforge.adversaries.templates import Template, TemplateAdversary
from dynaforge.inference.backends import InferenceError
from dynaforge.services import adversaries as adversary_service
from dynaforge.services import auth as auth_service
from dynaforge.services import contexts as context_service
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class AdversarialToy(ToyTask):
    code = "toy-adv"
    name = "Toy with adversaries"
    perturbations = ("typo", "uppercase")
    demo_contexts = ({"topic": "weather"}, {"topic": "food"})


def synonym(context, draft, rng):
    """'good' -> 'nice' keeps the gold for a reader and fools a model that only knows 'good'."""
    if draft is None or "good" not in draft["text"].split():
        return []
    return [({**draft, "text": draft["text"].replace("good", "nice")}, "'nice' means 'good' to a reader")]


def from_topic(context, draft, rng):
    """From a context alone: one sentence the keyword model gets wrong and one it gets right (a control)."""
    if draft is not None:
        return []
    topic = context.get("topic") or "day"
    return [
        ({"text": f"the {topic} was nice", "label": "good"}, "a positive word the model does not know"),
        ({"text": f"the {topic} was good", "label": "good"}, "the word the model knows"),
    ]


TOY_TEMPLATES = TemplateAdversary(
    "toy-templates", "toy-adv", (Template("synonym", synonym), Template("from-topic", from_topic))
)


class AdversaryPlugin:
    __name__ = "adversarial_toy"

    @hookimpl
    def register_tasks(self, register):
        register(AdversarialToy())

    @hookimpl
    def register_adversaries(self, register):
        register(TOY_TEMPLATES)


@pytest.fixture
async def world(platform, gql):
    """The task with its two contexts; an admin (owner), an annotator and a crowd validator, with tokens."""
    platform.plugins.register(AdversaryPlugin(), "adversarial_toy")
    await task_service.sync_registered_tasks(platform)
    await context_service.add_contexts(platform, Actor.system(), "toy-adv", list(AdversarialToy.demo_contexts))
    from support import make_user

    admin = await make_user(platform, "olga", admin=True)
    _, admin_token = await auth_service.create_token(platform, admin, name="t")
    alice, _ = await register_user(gql, "alice")
    bob, _ = await register_user(gql, "bob")
    try:
        yield {"admin": admin_token, "alice": alice, "bob": bob}
    finally:
        platform.plugins.unregister("adversarial_toy")


CONTEXT = 'query { nextContext(taskCode: "toy-adv") { __typename ... on Context { id fields } } }'
SUGGEST = """
mutation($input: SuggestEditsInput!) {
  suggestEdits(input: $input) {
    __typename
    ... on EditsSuggested {
      draft { fooled goldProbability prediction { label } }
      suggestions { id adversary fields edits rationale verdict { fooled prediction { label } } moves { label } }
      adversaries queries
    }
    ... on Error { message }
    ... on InvalidInput { fieldErrors { field rule code } }
  }
}"""
CREATE = """
mutation($input: CreateExampleInput!) {
  createExample(input: $input) {
    __typename
    ... on ExampleCreated { fooled example { id source adversary } }
    ... on Error { message }
    ... on InvalidInput { fieldErrors { field rule } }
  }
}"""
GENERATE = """
mutation($input: GenerateCandidatesInput!) {
  generateCandidates(input: $input) {
    __typename
    ... on GenerationStarted { run { id status budget adversary roundNumber round { number } } }
    ... on Error { message }
    ... on InvalidInput { fieldErrors { field rule code message } }
  }
}"""
RUN = """
query($id: ID!) { node(id: $id) { ... on AdversaryRun {
  status queries itemsTotal itemsDone candidates error budget seed
} } }"""
TO_VALIDATE = """
query { exampleToValidate(taskCode: "toy-adv") { id fields source adversary fooled } }"""
VALIDATE = """
mutation($input: ValidateExampleInput!) {
  validateExample(input: $input) {
    __typename ... on ValidationRecorded { decided example { id status source adversary } } ... on Error { message }
  }
}"""
EXAMPLES = """
query { examples(taskCode: "toy-adv", first: 50) { nodes { id fields fooled status source adversary } } }"""
BY_SOURCE = """
query {
  task(code: "toy-adv") {
    stats { collected fooled verifiedFooled accepted rejected vmer }
    statsBySource { source stats { collected fooled verifiedFooled accepted rejected pending vmer } }
    currentRound {
      statsBySource { source stats { collected fooled verifiedFooled accepted rejected vmer } }
      leaderboard(first: 10) { nodes { username } }
    }
  }
  myStats(taskCode: "toy-adv") { total { collected fooled } }
}"""


def _ok(payload: dict, typename: str) -> dict:
    assert payload["__typename"] == typename, payload
    return payload


async def test_suggestions_generation_and_counts_by_source(platform, gql, client, world):
    admin, alice, bob = world["admin"], world["alice"], world["bob"]
    adversaries = (await gql('{ adversaries(taskCode: "toy-adv") { name available assists needsDraft } }'))[
        "adversaries"
    ]
    listed = {a["name"]: a for a in adversaries}
    assert listed["toy-templates"]["available"] and listed["perturbation-search"]["available"]
    assert not listed["llm"]["available"]  # off until an endpoint is configured

    context = (await gql(CONTEXT, token=alice))["nextContext"]
    draft = {"text": "a good day", "label": "good"}

    # an annotator asks for suggestions from the toy templates: one, which fools the target
    suggested = _ok(
        (
            await gql(
                SUGGEST,
                {
                    "input": {
                        "taskCode": "toy-adv",
                        "contextId": context["id"],
                        "draft": draft,
                        "adversary": "toy-templates",
                    }
                },
                token=alice,
            )
        )["suggestEdits"],
        "EditsSuggested",
    )
    assert suggested["draft"] == {"fooled": False, "goldProbability": None, "prediction": {"label": "good"}}
    [suggestion] = suggested["suggestions"]
    assert suggestion["fields"] == {"text": "a nice day", "label": "good"}
    assert suggestion["verdict"] == {"fooled": True, "prediction": {"label": "bad"}}
    assert suggestion["edits"] == ["text: 'a good day' -> 'a nice day'"]
    assert suggestion["adversary"] == "toy-templates" and suggestion["rationale"].startswith("synonym:")
    assert suggested["adversaries"] == ["toy-templates"] and suggested["queries"] == 2

    # the built-in perturbation search finds its own fooling edit of the same draft (a typo in 'good')
    searched = _ok(
        (
            await gql(
                SUGGEST,
                {
                    "input": {
                        "taskCode": "toy-adv",
                        "contextId": context["id"],
                        "draft": draft,
                        "adversary": "perturbation-search",
                    }
                },
                token=alice,
            )
        )["suggestEdits"],
        "EditsSuggested",
    )
    assert searched["suggestions"], searched
    for s in searched["suggestions"]:
        assert s["verdict"]["fooled"] and s["fields"]["label"] == "good" and "good" not in s["fields"]["text"].split()
        assert s["adversary"] == "perturbation-search" and s["edits"]
    assert searched["queries"] <= platform.settings.suggestion_queries

    # she writes the suggestion: ASSISTED, with the adversary; and two of her own (one fools, one does not)
    assisted = _ok(
        (
            await gql(
                CREATE,
                {
                    "input": {
                        "taskCode": "toy-adv",
                        "contextId": context["id"],
                        "fields": suggestion["fields"],
                        "suggestionId": suggestion["id"],
                    }
                },
                token=alice,
            )
        )["createExample"],
        "ExampleCreated",
    )
    assert assisted["fooled"] is True
    assert assisted["example"]["source"] == "ASSISTED" and assisted["example"]["adversary"] == "toy-templates"
    human_fooled = _ok(
        (
            await gql(
                CREATE,
                {
                    "input": {
                        "taskCode": "toy-adv",
                        "contextId": context["id"],
                        "fields": {"text": "not good at all", "label": "bad"},
                    }
                },
                token=alice,
            )
        )["createExample"],
        "ExampleCreated",
    )
    assert human_fooled["example"] == {"id": human_fooled["example"]["id"], "source": "HUMAN", "adversary": None}
    human_right = _ok(
        (
            await gql(
                CREATE,
                {
                    "input": {
                        "taskCode": "toy-adv",
                        "contextId": context["id"],
                        "fields": {"text": "a good film", "label": "good"},
                    }
                },
                token=alice,
            )
        )["createExample"],
        "ExampleCreated",
    )
    assert human_right["fooled"] is False

    # a suggestion is its receiver's own: bob cannot claim it
    stolen = (
        await gql(
            CREATE,
            {
                "input": {
                    "taskCode": "toy-adv",
                    "contextId": context["id"],
                    "fields": draft,
                    "suggestionId": suggestion["id"],
                }
            },
            token=bob,
        )
    )["createExample"]
    assert stolen["__typename"] == "InvalidInput" and stolen["fieldErrors"] == [
        {"field": ["suggestionId"], "rule": "not_found"}
    ]

    # only owners generate
    refused = (
        await gql(GENERATE, {"input": {"taskCode": "toy-adv", "adversary": "toy-templates", "budget": 10}}, token=alice)
    )["generateCandidates"]
    assert refused["__typename"] == "Forbidden"

    # the owner's run: two contexts (one fooling sentence each) and one draft the target got right (its synonym)
    started = _ok(
        (
            await gql(
                GENERATE,
                {"input": {"taskCode": "toy-adv", "adversary": "toy-templates", "budget": 20, "seed": 7}},
                token=admin,
            )
        )["generateCandidates"],
        "GenerationStarted",
    )["run"]
    assert started["budget"] == 20 and started["roundNumber"] == 1 and started["round"] == {"number": 1}
    await adversary_service.wait(platform, _pk(started["id"]))
    run = (await gql(RUN, {"id": started["id"]}, token=admin))["node"]
    assert run == {
        "status": "DONE",
        "queries": 5,  # 2 per context, 1 for the draft
        "itemsTotal": 3,
        "itemsDone": 3,
        "candidates": 3,
        "error": None,
        "budget": 20,
        "seed": 7,
    }
    assert (await gql(RUN, {"id": started["id"]}, token=alice))["node"] is None  # owners' only

    listed = (await gql(EXAMPLES, token=admin))["examples"]["nodes"]
    machine = sorted((e for e in listed if e["source"] == "MACHINE"), key=lambda e: e["fields"]["text"])
    assert [e["fields"]["text"] for e in machine] == ["a nice film", "the food was nice", "the weather was nice"]
    assert all(e["fooled"] and e["status"] == "CREATED" and e["adversary"] == "toy-templates" for e in machine)
    # the list narrows by source, by adversary and by author, alone or together
    narrowed = """query($s: ExampleSource, $a: String, $u: ID) { examples(taskCode: "toy-adv", first: 50, source: $s,
      adversary: $a, author: $u) { nodes { id source adversary } } }"""
    by_source = (await gql(narrowed, {"s": "MACHINE"}, token=admin))["examples"]["nodes"]
    assert sorted(e["id"] for e in by_source) == sorted(e["id"] for e in machine)
    by_adversary = (await gql(narrowed, {"a": "toy-templates"}, token=admin))["examples"]["nodes"]
    assert {e["id"] for e in machine} <= {e["id"] for e in by_adversary}
    assert all(e["adversary"] == "toy-templates" for e in by_adversary)
    assert (await gql(narrowed, {"a": "no-such-adversary"}, token=admin))["examples"]["nodes"] == []
    alice_id = (await gql("{ me { id } }", token=alice))["me"]["id"]
    hers = (await gql(narrowed, {"u": alice_id}, token=admin))["examples"]["nodes"]
    assert hers and {e["id"] for e in hers} == {e["id"] for e in listed if e["source"] != "MACHINE"} & {
        e["id"] for e in (await gql(EXAMPLES, token=alice))["examples"]["nodes"]
    }
    assert (await gql(narrowed, {"u": alice_id, "s": "MACHINE"}, token=admin))["examples"]["nodes"] == []

    # a crowd validator judges a machine candidate blind, and learns its source once they voted
    served = (await gql(TO_VALIDATE, token=bob))["exampleToValidate"]
    assert served["source"] is None and served["adversary"] is None
    voted = _ok(
        (await gql(VALIDATE, {"input": {"id": served["id"], "label": "CORRECT"}}, token=bob))["validateExample"],
        "ValidationRecorded",
    )
    assert voted["decided"] is False and voted["example"]["source"] in ("HUMAN", "ASSISTED", "MACHINE")

    # the owner decides: the people's two fooling examples and two machine ones accepted, one machine one rejected
    decisions = {
        assisted["example"]["id"]: "CORRECT",
        human_fooled["example"]["id"]: "CORRECT",
        machine[0]["id"]: "CORRECT",
        machine[1]["id"]: "CORRECT",
        machine[2]["id"]: "INCORRECT",
    }
    for example_id, label in decisions.items():
        decided = _ok(
            (await gql(VALIDATE, {"input": {"id": example_id, "label": label}}, token=admin))["validateExample"],
            "ValidationRecorded",
        )
        assert decided["decided"]

    counts = await gql(BY_SOURCE, token=alice)
    split = {row["source"]: row["stats"] for row in counts["task"]["statsBySource"]}
    assert [row["source"] for row in counts["task"]["statsBySource"]] == ["HUMAN", "ASSISTED", "MACHINE"]
    assert split["HUMAN"] == {
        "collected": 2, "fooled": 1, "verifiedFooled": 1, "accepted": 1, "rejected": 0, "pending": 0, "vmer": 0.5,
    }  # fmt: skip
    assert split["ASSISTED"] == {
        "collected": 1, "fooled": 1, "verifiedFooled": 1, "accepted": 1, "rejected": 0, "pending": 0, "vmer": 1.0,
    }  # fmt: skip
    assert split["MACHINE"] == {
        "collected": 3, "fooled": 3, "verifiedFooled": 2, "accepted": 2, "rejected": 1, "pending": 0, "vmer": 2 / 3,
    }  # fmt: skip
    assert counts["task"]["stats"] == {
        "collected": 6, "fooled": 5, "verifiedFooled": 4, "accepted": 4, "rejected": 1, "vmer": 4 / 6,
    }  # fmt: skip
    round_split = {row["source"]: row["stats"] for row in counts["task"]["currentRound"]["statsBySource"]}
    assert round_split["MACHINE"]["verifiedFooled"] == 2 and round_split["ASSISTED"]["collected"] == 1
    # the annotator's assisted example is hers; the machine account is not ranked against people
    assert counts["myStats"]["total"] == {"collected": 3, "fooled": 2}
    assert [n["username"] for n in counts["task"]["currentRound"]["leaderboard"]["nodes"]] == ["alice"]

    # the export says where each example came from
    response = await client.get(
        "/export/toy-adv", params={"round": 1, "format": "jsonl"}, headers={"Authorization": f"Bearer {admin}"}
    )
    assert response.status_code == 200, response.text
    records = [json.loads(line) for line in response.text.splitlines()]
    sources = sorted((r["source"], r["adversary"]) for r in records)
    assert sources == [
        ("ASSISTED", "toy-templates"),
        ("HUMAN", None),
        ("HUMAN", None),
        ("MACHINE", "toy-templates"),
        ("MACHINE", "toy-templates"),
        ("MACHINE", "toy-templates"),
    ]
    # and the dataset card of the Hugging Face folder splits the counters by source
    folder = await client.get(
        "/export/toy-adv", params={"round": 1, "format": "hf"}, headers={"Authorization": f"Bearer {admin}"}
    )
    assert folder.status_code == 200, folder.text
    with zipfile.ZipFile(io.BytesIO(folder.content)) as archive:
        card = archive.read(next(n for n in archive.namelist() if n.endswith("README.md"))).decode()
    assert "| HUMAN | 2 | 2 | 1 | 1 | 0.500 |" in card
    assert "| ASSISTED | 1 | 1 | 1 | 1 | 1.000 |" in card
    assert "| MACHINE | 3 | 3 | 3 | 2 | 0.667 |" in card


async def test_budgets_and_refusals(platform, gql, world):
    admin, alice = world["admin"], world["alice"]
    platform.settings.suggestions_per_hour = 2
    platform.settings.generation_queries_per_day = 12
    context = (await gql(CONTEXT, token=alice))["nextContext"]
    ask = {"taskCode": "toy-adv", "contextId": context["id"], "draft": {"text": "a good day", "label": "good"}}

    bad_draft = (await gql(SUGGEST, {"input": {**ask, "draft": {"text": "x", "label": "great"}}}, token=alice))[
        "suggestEdits"
    ]
    assert bad_draft["__typename"] == "InvalidInput"
    assert [e["field"] for e in bad_draft["fieldErrors"]] == [["label"]]
    unknown = (await gql(SUGGEST, {"input": {**ask, "adversary": "nobody"}}, token=alice))["suggestEdits"]
    assert unknown["fieldErrors"] == [{"field": ["adversary"], "rule": "unknown", "code": "UNKNOWN"}]
    off = (await gql(SUGGEST, {"input": {**ask, "adversary": "llm"}}, token=alice))["suggestEdits"]
    assert off["fieldErrors"] == [{"field": ["adversary"], "rule": "unsuitable", "code": "NOT_ALLOWED"}]
    anonymous = (await gql(SUGGEST, {"input": ask}, token=None))["suggestEdits"]
    assert anonymous["__typename"] == "NotAuthenticated"

    # a draft the target already gets wrong needs no suggestion (and still counts against the hourly budget)
    fooled = _ok(
        (await gql(SUGGEST, {"input": {**ask, "draft": {"text": "not good", "label": "bad"}}}, token=alice))[
            "suggestEdits"
        ],
        "EditsSuggested",
    )
    assert fooled["draft"]["fooled"] is True and fooled["suggestions"] == [] and fooled["queries"] == 1
    _ok(
        (await gql(SUGGEST, {"input": {**ask, "adversary": "toy-templates"}}, token=alice))["suggestEdits"],
        "EditsSuggested",
    )
    limited = (await gql(SUGGEST, {"input": ask}, token=alice))["suggestEdits"]
    assert limited["__typename"] == "RateLimited", limited

    # generation: the task's daily budget of target queries; a finished run gives back what it did not spend
    too_much = (
        await gql(GENERATE, {"input": {"taskCode": "toy-adv", "adversary": "toy-templates", "budget": 13}}, token=admin)
    )["generateCandidates"]
    assert (
        too_much["fieldErrors"][0]["rule"] == "daily_budget" and "12 of its 12" in too_much["fieldErrors"][0]["message"]
    )
    wrong_kind = (
        await gql(GENERATE, {"input": {"taskCode": "toy-adv", "adversary": "llm", "budget": 5}}, token=admin)
    )["generateCandidates"]
    assert wrong_kind["fieldErrors"][0]["rule"] == "unsuitable"
    zero = (
        await gql(GENERATE, {"input": {"taskCode": "toy-adv", "adversary": "toy-templates", "budget": 0}}, token=admin)
    )["generateCandidates"]
    assert zero["fieldErrors"][0]["rule"] == "range"
    run = _ok(
        (
            await gql(
                GENERATE, {"input": {"taskCode": "toy-adv", "adversary": "toy-templates", "budget": 10}}, token=admin
            )
        )["generateCandidates"],
        "GenerationStarted",
    )["run"]
    await adversary_service.wait(platform, _pk(run["id"]))
    done = (await gql(RUN, {"id": run["id"]}, token=admin))["node"]
    assert done["status"] == "DONE" and done["queries"] == 4 and done["candidates"] == 2  # two contexts, no drafts
    # 12 - 4 spent = 8 left today
    left = (
        await gql(GENERATE, {"input": {"taskCode": "toy-adv", "adversary": "toy-templates", "budget": 9}}, token=admin)
    )["generateCandidates"]
    assert "8 of its 12" in left["fieldErrors"][0]["message"]
    # an adversary that edits drafts finds none here (nobody wrote an example): done, with the reason
    idle = _ok(
        (
            await gql(
                GENERATE,
                {"input": {"taskCode": "toy-adv", "adversary": "perturbation-search", "budget": 5}},
                token=admin,
            )
        )["generateCandidates"],
        "GenerationStarted",
    )["run"]
    idle_id = idle["id"]
    await adversary_service.wait(platform, _pk(idle_id))
    idle = (await gql(RUN, {"id": idle_id}, token=admin))["node"]
    assert idle["status"] == "DONE" and idle["queries"] == 0 and idle["itemsTotal"] == 0
    assert idle["error"].startswith("nothing to attack: the round has no examples the target got right")
    runs = (await gql('{ adversaryRuns(taskCode: "toy-adv") { nodes { id status } } }', token=admin))["adversaryRuns"]
    assert [r["id"] for r in runs["nodes"]] == [idle_id, run["id"]]
    oldest = '{ adversaryRuns(taskCode: "toy-adv", orderBy: OLDEST_FIRST, first: 1) { totalCount nodes { id } } }'
    page = (await gql(oldest, token=admin))["adversaryRuns"]
    assert page == {"totalCount": 2, "nodes": [{"id": run["id"]}]}
    ended = '{ adversaryRuns(taskCode: "toy-adv", status: DONE) { nodes { id } } }'
    assert [r["id"] for r in (await gql(ended, token=admin))["adversaryRuns"]["nodes"]] == [idle_id, run["id"]]
    cancelled = (
        await gql(
            "mutation($id: ID!) { cancelGeneration(input: {id: $id}) "
            "{ __typename ... on GenerationCancelled { run { status } } } }",
            {"id": run["id"]},
            token=admin,
        )
    )["cancelGeneration"]
    assert cancelled == {"__typename": "GenerationCancelled", "run": {"status": "DONE"}}  # ended already: unchanged


async def test_a_target_that_cannot_answer_is_a_member_of_the_union(platform, gql, world, monkeypatch):
    """suggestEdits answers ServiceUnavailable (retry later) when the round's target is down, not a request error."""
    alice = world["alice"]
    context = (await gql(CONTEXT, token=alice))["nextContext"]

    async def down(spec, inputs):
        raise InferenceError("the model server refused the connection")

    monkeypatch.setattr(platform.inference, "predict", down)
    ask = {"taskCode": "toy-adv", "contextId": context["id"], "draft": {"text": "a good day", "label": "good"}}
    answer = (await gql(SUGGEST, {"input": ask}, token=alice))["suggestEdits"]
    assert answer["__typename"] == "ServiceUnavailable" and answer["message"]


async def test_a_draft_that_copies_someone_elses_example_gets_no_verdict(platform):
    """suggestEdits answers with the target's verdict on the draft; on a copy of another person's example (case and
    spacing aside) that verdict is the verdict on theirs, which tells a two-class task's gold once one knows it
    fooled the target. Such a draft is refused, unless it is one's own or the asker owns the task."""
    from support import make_user

    from dynaforge.errors import InvalidInput
    from dynaforge.services import examples

    bob, alice, admin = [await make_user(platform, n, admin=n == "olga") for n in ("bob", "alice", "olga")]
    await examples.submit(platform, bob, task_code="toy", fields={"text": "good grief", "label": "bad"})
    copy = {"text": " Good  GRIEF", "label": "good"}
    with pytest.raises(InvalidInput) as refused:
        await adversary_service.suggest_edits(platform, alice, task_code="toy", draft=copy, adversary="toy-synonyms")
    [error] = refused.value.field_errors
    assert (error.field, error.rule) == ("draft", "duplicate") and "write a draft of your own" in error.message
    for actor in (bob, admin):  # the author, and whoever sees every example's gold
        answer = await adversary_service.suggest_edits(
            platform, actor, task_code="toy", draft=copy, adversary="toy-synonyms"
        )
        assert answer.draft_verdict.prediction["label"] == "good"
    other = {"text": "good grief, again", "label": "good"}
    answer = await adversary_service.suggest_edits(
        platform, alice, task_code="toy", draft=other, adversary="toy-synonyms"
    )
    assert answer.draft_verdict.prediction["label"] == "good"


async def test_stale_runs_are_recovered(platform, world):
    """A run a stopped process left RUNNING, with no progress for long, is marked FAILED at the next start; a run
    with recent progress (another live process's) is left alone."""
    from datetime import timedelta

    from dynaforge.db.models import AdversaryRun, utcnow

    view = await task_service.get_task(platform, Actor.system(), "toy-adv")
    round_ = await task_service.get_round(platform, view.row.id)
    old = utcnow() - adversary_service.STALE_AFTER - timedelta(seconds=5)
    async with platform.db.write() as s:
        stale = AdversaryRun(task_id=view.row.id, round_id=round_.id, adversary="toy-templates", budget=5,
                             status="RUNNING", created_at=old, heartbeat_at=old)  # fmt: skip
        live = AdversaryRun(task_id=view.row.id, round_id=round_.id, adversary="toy-templates", budget=5,
                            status="RUNNING", created_at=old, heartbeat_at=utcnow())  # fmt: skip
        s.add_all([stale, live])
        await s.flush()
        ids = stale.id, live.id
    assert await adversary_service.recover(platform) == 1
    async with platform.db.session() as s:
        rows = {r.id: r for r in [await s.get(AdversaryRun, i, populate_existing=True) for i in ids]}
    assert rows[ids[0]].status == "FAILED" and "stopped" in rows[ids[0]].error
    assert rows[ids[1]].status == "RUNNING"


def _pk(global_id: str) -> int:
    from dynaforge.api.node import decode_global_id

    return int(decode_global_id(global_id)[1])


def test_register_adversaries_refuses_bad_registrations():
    """A plugin's adversaries are checked when it loads: a non-adversary, a name that is not lowercase letters,
    digits, '-' or '_', and a name another plugin took each break that plugin alone."""
    from dynaforge.plugins import Plugins

    class NotAnAdversary:
        __name__ = "not_an_adversary"

        @hookimpl
        def register_adversaries(self, register):
            register(object())

    class BadName:
        __name__ = "bad_name"

        @hookimpl
        def register_adversaries(self, register):
            register(TemplateAdversary("Has Spaces", "toy", ()))

    class Taken:
        __name__ = "taken"

        @hookimpl
        def register_adversaries(self, register):
            register(TemplateAdversary("perturbation-search", "toy", ()))

    plugins = Plugins(allowlist=set(), extra=[NotAnAdversary(), BadName(), Taken(), AdversaryPlugin()])
    assert "which is not a Adversary" in plugins.errors["not_an_adversary"]
    assert "lowercase letters" in plugins.errors["bad_name"]
    assert "already registered by dynaforge.defaults.adversaries" in plugins.errors["taken"]
    registry = plugins.registry.adversaries
    assert list(registry) == ["perturbation-search", "embedding-swap", "llm", "toy-templates"]
    assert registry["toy-templates"] is TOY_TEMPLATES


async def test_register_adversaries_docs_example_runs():
    """The template adversary shown under '### register_adversaries' in docs/plugins.md works as written."""
    import random
    import re
    from pathlib import Path

    from dynaforge import ChoiceField, Role, Task, TextField
    from dynaforge.adversaries import AttackRequest, Oracle
    from dynaforge.tasks.outputs import judge

    text = (Path(__file__).resolve().parent.parent / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = text.split("### register_adversaries", 1)[1].split("\n### ", 1)[0]
    source = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)[1]
    namespace: dict = {}
    exec(compile(source, "docs-register-adversaries", "exec"), namespace)

    class Formality(Task):
        code = "formality"
        name = "Formality"
        labels = ("formal", "informal")
        fields = (
            TextField(name="situation", role=Role.CONTEXT),
            TextField(name="sentence", role=Role.INPUT, min_length=5),
            ChoiceField(name="label", role=Role.TARGET),
        )

    collected = []
    namespace["register_adversaries"](collected.append)
    [adversary] = collected
    task = Formality()

    async def predict(inputs):  # a target that calls everything formal
        out = {"label": "formal", "probabilities": {"formal": 0.9, "informal": 0.1}}
        return [[{"model": "m", "prediction": task.read_model_output(out), "latency_ms": 0.0}] for _ in inputs]

    context = {"situation": "A letter to a bank."}
    oracle = Oracle(task, context, predict, lambda m, ex, ctx: judge(task, "majority", m, ex, ctx),
                    max_queries=5, time_limit_s=5)  # fmt: skip
    draft = {"sentence": "Thank you for your help, I am going to call on Monday.", "label": "formal"}
    found = await adversary.attack(AttackRequest(task, context, draft, random.Random(0)), oracle)
    assert [c.fields["sentence"] for c in found] == [
        "thanks for your help, i am going to call on monday.",
        "thank you for your help, i am gonna call on monday.",
    ]
    assert all(c.fooled and c.fields["label"] == "informal" for c in found) and oracle.queries == 2
