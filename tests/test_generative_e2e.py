"""End to end: a declared translation task whose target is a model that writes, behind an OpenAI-compatible API.

A real ``dynaforge serve`` (SQLite, then PostgreSQL); fake OpenAI-compatible servers on loopback
(``dynaforge.inference.fakes``) stream their replies word by word. The operator declares a French-to-English task
with several references per example, chrF against them, and the ``metric_below`` rule through ``declareTask``:

* an exact translation does not fool it; a near miss (a correct translation worded otherwise, which exact match
  would call fooled) does not either, and a wrong one does: each verdict is sacrebleu's own sentence chrF against the
  threshold, and the example keeps the reply, its tokens and its time to first token;
* two submitted generative models are evaluated on a scoring set with references: their chrF is sacrebleu's corpus
  chrF of what they wrote, with an interval, their tokens per second and time to first token are recorded, their
  robustness is how far their output moves (chrF) under a perturbation, and the board ranks the better one first.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import sacrebleu
from support import (
    Server,
    cli,
    create_operator,
    database,
    eventually,
    new_account,
    plugin_process_env,
    post_graphql,
    serve,
    serve_in_thread,
)

from dynaforge.inference.fakes import fake_openai_app

pytestmark = pytest.mark.e2e

TASK = "fr-en"
THRESHOLD = 50.0
# What the good model writes for each French sentence (a lowercase copy of a sentence gets the same answer).
GOOD = {
    "Le chien est blanc.": "The dog is white.",
    "Le chat dort.": "The cat is sleeping.",
    "Il pleut.": "It is snowing.",
    "La porte est ouverte.": "The door is open.",
    "Nous mangeons du pain.": "We eat bread.",
    "Elle lit un livre.": "She reads a book.",
    "Le train part à midi.": "The train leaves at noon.",
    "Mon frère aime le thé.": "My brother loves tea.",
    "Le ciel est bleu.": "The sky is blue.",
    "Ils jouent au parc.": "They play at the park.",
    "La soupe est chaude.": "The soup is hot.",
    "Je cherche mes clés.": "I am looking for my keys.",
}
# The scoring set: each sentence with the references its annotators gave (one or several).
SCORING = [
    ("Le chien est blanc.", ["The dog is white.", "The dog's white."]),
    ("La porte est ouverte.", ["The door is open."]),
    ("Nous mangeons du pain.", ["We are eating bread.", "We eat bread."]),
    ("Elle lit un livre.", ["She is reading a book."]),
    ("Le train part à midi.", ["The train leaves at noon.", "The train departs at midday."]),
    ("Mon frère aime le thé.", ["My brother likes tea."]),
    ("Le ciel est bleu.", ["The sky is blue."]),
    ("Ils jouent au parc.", ["They are playing in the park."]),
    ("La soupe est chaude.", ["The soup is hot."]),
    ("Je cherche mes clés.", ["I'm looking for my keys.", "I am looking for my keys."]),
]
SET = "fr-en-scoring"


def good(prompt: str) -> str:
    source = prompt.strip()
    by_lower = {k.lower(): v for k, v in GOOD.items()}
    return GOOD.get(source) or by_lower.get(source.lower(), "I do not know.")


def poor(prompt: str) -> str:
    """A weaker model: the words it is given, backwards."""
    return "The " + " ".join(reversed(prompt.strip(" .").split())) + "."


def declaration(url: str) -> dict[str, Any]:
    return {
        "code": TASK,
        "name": "French to English",
        "instructions": "Write a French sentence that the model translates into English wrongly. Give one good "
        "English translation per line; the model is fooled when its chrF against them is under 50.",
        "fields": [
            {"name": "source", "type": "text", "role": "input", "max_length": 300},
            {
                "name": "translation",
                "type": "references",
                "role": "target",
                "normalize": ["case", "punctuation", "whitespace"],
                "max_references": 3,
            },
        ],
        "metrics": ["chrf", "chrf_pp", "bleu", "ter"],
        "perturbations": ["lowercase"],
        "fooled": {"rule": "metric_below", "field": "translation", "metric": "chrf", "threshold": THRESHOLD},
        "target_models": [
            {
                "name": "fake-translator",
                "backend": "openai",
                "config": {
                    "url": f"{url}/v1",
                    "model": "fake",
                    "system": "Translate French into English. Answer with the translation only.",
                    "prompt": "{source}",
                    "parse": {"type": "text", "field": "translation"},
                    "temperature": 0,
                    "seed": 0,
                    "max_tokens": 64,
                },
            }
        ],
        "sample_examples": [
            {"source": "Le chien est blanc.", "translation": ["The dog is white."]},
            {"source": "Il pleut.", "translation": ["It is raining.", "It's raining."]},
        ],
    }


DECLARE = """mutation($input: DeclareTaskInput!) { declareTask(input: $input) { __typename
  ... on TaskDeclared { task { code fields { name type maxReferences normalize } } }
  ... on InvalidInput { fieldErrors { field rule message } } ... on Error { message } } }"""
CREATE = """mutation($input: CreateExampleInput!) { createExample(input: $input) { __typename
  ... on ExampleCreated { fooled example { id fields } prediction { fields
      generation { text tokens timeToFirstTokenMs totalMs finishReason } } }
  ... on Error { message } } }"""
IMPORT_DATASET = """mutation($input: ImportDatasetInput!) { importDataset(input: $input) { __typename
  ... on DatasetsCreated { datasets { name access size } } ... on Error { message } } }"""
SUBMIT = """mutation($input: SubmitModelInput!) { submitModel(input: $input) { __typename
  ... on ModelSubmitted { model { id } } ... on Error { message } } }"""
MODEL = """query($id: ID!) { model(id: $id) { name status evaluations { nodes { status error dataset { name }
  metrics { name value interval { low high } } unusableOutputs
  generation { outputTokens tokensPerSecond timeToFirstTokenMs timeToFirstTokenP90Ms } } } } }"""
BOARD = """{ leaderboard(taskCode: "fr-en") { datasets rows { rank dynascore model { name }
  metrics { name value } gaps { dataset reason } } } }"""


@pytest.fixture(scope="module")
def engines() -> Iterator[dict[str, str]]:
    """Three fake OpenAI-compatible servers: the round's target, and two submitted models."""
    with (
        serve_in_thread(fake_openai_app(good, ttft_s=0.02, token_s=0.002)) as target,
        serve_in_thread(fake_openai_app(good, ttft_s=0.02, token_s=0.002)) as strong,
        serve_in_thread(fake_openai_app(poor, ttft_s=0.02, token_s=0.002)) as weak,
    ):
        yield {"target": target, "strong": strong, "weak": weak}


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ],
)
def server(request, tmp_path_factory, engines) -> Iterator[tuple[Server, str]]:
    workdir = tmp_path_factory.mktemp(f"generative-{request.param}")
    with database(request.param, workdir) as database_url:
        env = plugin_process_env(
            workdir,
            database_url,
            {"oracle": "oracle_plugin:PLUGIN"},
            environment="test",
            outbound_allow="127.0.0.0/8,localhost",  # the fake engines run on loopback
            examples_per_minute="1000",
        )
        cli(env, workdir, "db", "upgrade")
        token = create_operator(env, workdir, database_url)
        with serve(env, workdir, "server") as base_url:
            yield Server(request.param, base_url, database_url, env, workdir), token


def _import_scoring_set(base_url: str, token: str) -> dict[str, Any]:
    lines = "".join(
        json.dumps({"format": "dynaforge.example/1", "status": "ACCEPTED", "fields": {"source": s, "translation": r}})
        + "\n"
        for s, r in SCORING
    )
    variables = {"input": {"taskCode": TASK, "name": SET, "file": None, "publicShare": 1.0}}
    return httpx.post(
        f"{base_url}/graphql",
        data={
            "operations": json.dumps({"query": IMPORT_DATASET, "variables": variables}),
            "map": json.dumps({"0": ["variables.input.file"]}),
        },
        files={"0": ("set.jsonl", lines.encode(), "application/octet-stream")},
        headers={"Apollo-Require-Preflight": "true", "Authorization": f"Bearer {token}"},
        timeout=60,
    ).json()["data"]["importDataset"]


SETTINGS = """mutation($input: UpdateTaskSettingsInput!) { updateTaskSettings(input: $input) { __typename
  ... on TaskSettingsUpdated { task { fooledThreshold judgeRubric settings { fooledThreshold judgeRubric } } }
  ... on InvalidInput { fieldErrors { field rule message } } ... on Error { message } } }"""
REPLY_STREAM = "subscription($id: String!) { replyStream(streamId: $id) { index model text done } }"


async def _streamed_example(served: Server, author: str, peer: str) -> tuple[list[dict], list[dict]]:
    """The author follows a reply stream and writes an example with it; a peer follows the same stream id. What
    each received (the peer's: until a moment after the author's stream ended)."""
    from gql import Client, gql
    from gql.graphql_request import GraphQLRequest
    from gql.transport.websockets import WebsocketsTransport

    stream_id = "e2e-" + served.backend + "-stream-0001"
    received: dict[str, list[dict]] = {"author": [], "peer": []}

    def transport(token: str) -> WebsocketsTransport:
        return WebsocketsTransport(
            url=served.base_url.replace("http", "ws") + "/graphql",
            init_payload={"authorization": f"Bearer {token}"},
            subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],
        )

    async def follow(who: str, ws: Any, listening: asyncio.Event) -> None:
        request = GraphQLRequest(gql(REPLY_STREAM).document, variable_values={"id": stream_id})
        async for event in ws.subscribe(request):
            received[who].append(event["replyStream"])
            listening.set()

    async with (
        Client(transport=transport(author), fetch_schema_from_transport=False) as mine,
        Client(transport=transport(peer), fetch_schema_from_transport=False) as theirs,
        httpx.AsyncClient(base_url=served.base_url, timeout=60) as http,
    ):
        ready = {"author": asyncio.Event(), "peer": asyncio.Event()}
        tasks = {
            "author": asyncio.ensure_future(follow("author", mine, ready["author"])),
            "peer": asyncio.ensure_future(follow("peer", theirs, ready["peer"])),
        }
        await asyncio.wait_for(asyncio.gather(ready["author"].wait(), ready["peer"].wait()), 10)
        fields = {"source": "Elle lit un livre.", "translation": ["She is reading a book."]}
        created = await post_graphql(
            http, author, CREATE, input={"taskCode": TASK, "fields": fields, "replyStream": stream_id}
        )
        assert created["createExample"]["__typename"] == "ExampleCreated", created
        await asyncio.wait_for(tasks["author"], 10)  # it ends with done
        await asyncio.sleep(0.5)
        tasks["peer"].cancel()
    return received["author"], received["peer"]


def _metric(entry: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in entry["metrics"] if m["name"] == name)


async def test_a_declared_translation_task_is_fooled_by_chrf_and_ranks_generative_models(server, engines):
    served, operator = server
    async with httpx.AsyncClient(base_url=served.base_url, timeout=120) as http:
        declared = (await post_graphql(http, operator, DECLARE, input={"definition": declaration(engines["target"])}))[
            "declareTask"
        ]
        assert declared["__typename"] == "TaskDeclared", declared
        target = next(f for f in declared["task"]["fields"] if f["name"] == "translation")
        assert target == {
            "name": "translation",
            "type": "REFERENCES",
            "maxReferences": 3,
            "normalize": ["case", "punctuation", "whitespace"],
        }

        # ---- the annotator's verdicts, each sacrebleu's sentence chrF against the threshold
        author = await new_account(http, f"writer_{served.backend}")
        cases = [
            ("Le chien est blanc.", ["The dog is white."]),  # exact
            ("Le chat dort.", ["The cat sleeps."]),  # a near miss: right, worded otherwise
            ("Il pleut.", ["It is raining.", "It's raining."]),  # wrong
        ]
        verdicts = []
        for source, references in cases:
            fields = {"source": source, "translation": references}
            created = (await post_graphql(http, author, CREATE, input={"taskCode": TASK, "fields": fields}))[
                "createExample"
            ]
            assert created["__typename"] == "ExampleCreated", created
            written = created["prediction"]["fields"]["translation"]
            assert written == GOOD[source]
            expected = sacrebleu.sentence_chrf(written, references).score < THRESHOLD
            assert created["fooled"] is expected, (source, written, sacrebleu.sentence_chrf(written, references))
            generation = created["prediction"]["generation"]
            assert generation["text"] == written and generation["tokens"] == len(written.split())
            assert generation["timeToFirstTokenMs"] >= 20 and generation["finishReason"] == "stop"
            assert created["example"]["fields"]["translation"] == references
            verdicts.append(created["fooled"])
        assert verdicts == [False, False, True]  # exact match would have called the near miss fooled

        # ---- the owners lower the threshold: the same wrong translation no longer fools the model
        tuned = await post_graphql(http, operator, SETTINGS, input={"taskCode": TASK, "fooledThreshold": 10.0})
        assert tuned["updateTaskSettings"]["task"]["fooledThreshold"] == 10.0, tuned
        fields = {"source": "Il pleut.", "translation": ["It is raining.", "It's raining."]}
        created = (await post_graphql(http, author, CREATE, input={"taskCode": TASK, "fields": fields}))[
            "createExample"
        ]
        score = sacrebleu.sentence_chrf(created["prediction"]["fields"]["translation"], fields["translation"]).score
        assert 10.0 <= score < THRESHOLD and created["fooled"] is False, score
        refused = await post_graphql(http, operator, SETTINGS, input={"taskCode": TASK, "fooledThreshold": 120.0})
        assert refused["updateTaskSettings"]["fieldErrors"] == [
            {"field": ["fooledThreshold"], "rule": "range", "message": "must be between 0 and 100"}
        ]
        await post_graphql(http, operator, SETTINGS, input={"taskCode": TASK, "fooledThreshold": THRESHOLD})

        # ---- the reply streams to its author as it is written; nobody else can follow that stream
        pieces, others = await _streamed_example(served, author, await new_account(http, f"peer_{served.backend}"))
        assert pieces[0] == {"index": 0, "model": None, "text": "", "done": False}  # listening
        words = [p for p in pieces[1:-1]]
        assert [p["index"] for p in words] == list(range(1, len(words) + 1))
        assert {p["model"] for p in words} == {"fake-translator"} and len(words) == len(
            GOOD["Elle lit un livre."].split()
        )
        assert "".join(p["text"] for p in words) == GOOD["Elle lit un livre."]
        assert pieces[-1]["done"] is True and pieces[-1]["index"] == len(words) + 1
        assert others == [{"index": 0, "model": None, "text": "", "done": False}]

        # ---- two generative models on a scoring set with references
        imported = _import_scoring_set(served.base_url, operator)
        assert imported["__typename"] == "DatasetsCreated", imported
        assert {d["name"] for d in imported["datasets"]} == {SET, f"{SET}~lowercase"}
        builder = await new_account(http, f"builder_{served.backend}")
        ids = {}
        for name in ("strong", "weak"):
            model = {
                "taskCode": TASK,
                "name": name,
                "backend": "openai",
                "config": {
                    "url": f"{engines[name]}/v1",
                    "model": "fake",
                    "prompt": "{source}",
                    "parse": {"type": "text", "field": "translation"},
                    "seed": 1,
                    "concurrency": 4,
                },
                "published": True,
            }
            submitted = (await post_graphql(http, builder, SUBMIT, input=model))["submitModel"]
            assert submitted["__typename"] == "ModelSubmitted", submitted
            ids[name] = submitted["model"]["id"]

        async def finished(model_id: str) -> dict[str, Any] | None:
            model = (await post_graphql(http, builder, MODEL, id=model_id))["model"]
            return model if model["status"] in ("DONE", "FAILED") else None

        models = {
            name: await eventually(lambda m=m: finished(m), within=240, every=0.5, what=f"{name} is evaluated")
            for name, m in ids.items()
        }
        board = (await post_graphql(http, None, BOARD))["leaderboard"]

    references = [r for _, r in SCORING]
    streams = [[r[j] if j < len(r) else None for r in references] for j in range(2)]
    writers = {"strong": good, "weak": poor}
    for name, model in models.items():
        assert model["status"] == "DONE", model
        by_set = {e["dataset"]["name"]: e for e in model["evaluations"]["nodes"]}
        evaluation = by_set[SET]
        outputs = [writers[name](s) for s, _ in SCORING]
        chrf = _metric(evaluation, "chrf")
        assert chrf["value"] == pytest.approx(sacrebleu.corpus_chrf(outputs, streams).score)
        assert chrf["interval"]["low"] <= chrf["value"] <= chrf["interval"]["high"]
        assert _metric(evaluation, "bleu")["value"] == pytest.approx(sacrebleu.corpus_bleu(outputs, streams).score)
        generation = evaluation["generation"]
        assert generation["outputTokens"] == sum(len(o.split()) for o in outputs)
        assert generation["tokensPerSecond"] > 0 and generation["timeToFirstTokenMs"] >= 20
        assert evaluation["unusableOutputs"] == 0
    rows = {row["model"]["name"]: row for row in board["rows"]}
    assert [row["model"]["name"] for row in board["rows"]][:2] == ["strong", "weak"], board
    assert rows["strong"]["rank"] == 1 and rows["weak"]["rank"] == 2
    # The strong model answers a lowercased sentence as it did the original: its output does not move.
    assert _metric(rows["strong"], "robustness")["value"] == pytest.approx(1.0)
    # The weak one copies the words it is given, so lowercasing moves its output a little, not all the way.
    assert 0.0 < _metric(rows["weak"], "robustness")["value"] < 1.0


# ----------------------------------------------------------------------------------------- verdicts that wait
ASSISTANT = {
    "What is the capital of Italy?": "The capital of Italy is Rome.",
    "What is the capital of Peru?": "The capital of Peru is Quito.",
    "How many legs has a spider?": "A spider has eight legs.",
}


def assistant(prompt: str) -> str:
    return ASSISTANT.get(prompt.strip(), "I am not sure.")


def judge(prompt: str) -> str:
    """A judge that knows Peru's capital: it reads the answer out of the prompt it is given."""
    answer = prompt.split("The model's answer:\n", 1)[1].split("\n\n", 1)[0]
    wrong = "Quito" in answer
    why = "Peru's capital is Lima, not Quito." if wrong else "The answer is right."
    return json.dumps({"fooled": wrong, "rationale": why})


JUDGE_REQUESTS: list[dict[str, Any]] = []  # what the judge was asked, in order


@pytest.fixture(scope="module")
def verdict_engines() -> Iterator[dict[str, str]]:
    with (
        serve_in_thread(fake_openai_app(assistant, ttft_s=0.01)) as target,
        serve_in_thread(fake_openai_app(judge, ttft_s=1.0, requests=JUDGE_REQUESTS)) as judge_url,  # slow
    ):
        yield {"target": target, "judge": judge_url}


def qa_declaration(code: str, target_url: str, fooled: dict[str, Any], extra_fields=()) -> dict[str, Any]:
    return {
        "code": code,
        "name": f"Facts ({code})",
        "instructions": "Ask the assistant a factual question it answers wrongly. Give the right answer if you know "
        "it; whether the assistant was wrong is decided after you submit.",
        "fields": [
            {"name": "question", "type": "text", "role": "input", "max_length": 300},
            {"name": "answer", "type": "text", "role": "target", "required": False},
            *extra_fields,
        ],
        "metrics": ["token_f1"],
        "fooled": fooled,
        "target_models": [
            {
                "name": "assistant",
                "backend": "openai",
                "config": {
                    "url": f"{target_url}/v1",
                    "model": "fake",
                    "prompt": "{question}",
                    "parse": {"type": "text", "field": "answer"},
                },
            }
        ],
        "sample_examples": [
            {"question": "What is the capital of Italy?", "answer": "Rome"},
            {"question": "How many legs has a spider?", "answer": "Eight"},
        ],
    }


STATS = """query($code: String!) { task(code: $code) { verdictBy judgeRubric currentRound { stats {
  collected fooled verifiedFooled accepted rejected pending } } } }"""
CREATE_WAITING = """mutation($input: CreateExampleInput!) { createExample(input: $input) { __typename
  ... on VerdictPending { decidedBy prediction { fields } example { id status fooled verdict { decidedBy decided } } }
  ... on ExampleCreated { fooled } ... on Error { message } } }"""
EXAMPLE = """query($id: ID!) { node(id: $id) { ... on Example { status fooled
  verdict { decidedBy decided fooled rationale judgeModel overruled overruleReason } } } }"""
OVERRULE = """mutation($input: OverruleVerdictInput!) { overruleVerdict(input: $input) { __typename
  ... on VerdictOverruled { example { fooled verdict { overruled fooled } } } ... on Error { message } } }"""
VOTE_ON = """mutation($id: ID!, $label: ValidationLabel!) { validateExample(input: {id: $id, label: $label}) {
  __typename ... on ValidationRecorded { example { status fooled } } ... on Error { message } } }"""
SUBSCRIBE_VERDICTS = """subscription($code: String!) { verdictDecided(taskCode: $code) { ... on Example { id fooled
  status verdict { decidedBy rationale } } } }"""


async def _stats(http: httpx.AsyncClient, token: str, code: str) -> dict[str, Any]:
    return (await post_graphql(http, token, STATS, code=code))["task"]["currentRound"]["stats"]


async def test_a_judged_task_decides_after_creation_and_an_owner_can_overrule_verdict_decided(server, verdict_engines):
    from gql import Client, gql
    from gql.graphql_request import GraphQLRequest
    from gql.transport.websockets import WebsocketsTransport

    served, operator = server
    code = "facts-judged"
    rubric = "The answer is wrong when it states a false fact, such as a wrong capital city."
    fooled = {
        "rule": "judge",
        "rubric": rubric,
        "judge": {
            "name": "fact-judge",
            "backend": "openai",
            "config": {"url": f"{verdict_engines['judge']}/v1", "model": "fake", "temperature": 0},
        },
    }
    async with httpx.AsyncClient(base_url=served.base_url, timeout=60) as http:
        definition = qa_declaration(code, verdict_engines["target"], fooled)
        declared = (await post_graphql(http, operator, DECLARE, input={"definition": definition}))["declareTask"]
        assert declared["__typename"] == "TaskDeclared", declared
        author = await new_account(http, f"asker_{served.backend}")
        task = (await post_graphql(http, author, STATS, code=code))["task"]
        assert task["verdictBy"] == "JUDGE" and task["judgeRubric"] == rubric
        before = task["currentRound"]["stats"]

        transport = WebsocketsTransport(
            url=served.base_url.replace("http", "ws") + "/graphql",
            init_payload={"authorization": f"Bearer {author}"},
            subprotocols=[WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL],
        )
        async with Client(transport=transport, fetch_schema_from_transport=False) as ws:
            events = ws.subscribe(GraphQLRequest(gql(SUBSCRIBE_VERDICTS).document, variable_values={"code": code}))
            first = asyncio.ensure_future(events.__anext__())
            await asyncio.sleep(0.3)  # the subscription is in place
            fields = {"question": "What is the capital of Peru?", "answer": "Lima"}
            created = (await post_graphql(http, author, CREATE_WAITING, input={"taskCode": code, "fields": fields}))[
                "createExample"
            ]
            assert created["__typename"] == "VerdictPending", created
            assert created["decidedBy"] == "JUDGE" and created["prediction"]["fields"]["answer"].endswith("Quito.")
            example = created["example"]
            assert example["status"] == "PENDING_VERDICT" and example["fooled"] is None
            assert example["verdict"] == {"decidedBy": "JUDGE", "decided": False}
            # The judge takes a second: until it answers, the example counts for nothing.
            assert await _stats(http, author, code) == before
            event = await asyncio.wait_for(first, 30)
        decided = event["verdictDecided"]
        assert decided["fooled"] is True and decided["status"] == "CREATED"
        assert decided["verdict"] == {"decidedBy": "JUDGE", "rationale": "Peru's capital is Lima, not Quito."}
        after = await _stats(http, author, code)
        assert after["collected"] == before["collected"] + 1 and after["fooled"] == before["fooled"] + 1
        stored = (await post_graphql(http, author, EXAMPLE, id=example["id"]))["node"]
        assert stored["verdict"]["judgeModel"] == "fact-judge" and stored["verdict"]["fooled"] is True

        # A right answer: the judge says not fooled, and it counts as collected only.
        right = {"question": "What is the capital of Italy?", "answer": "Rome"}
        created = (await post_graphql(http, author, CREATE_WAITING, input={"taskCode": code, "fields": right}))[
            "createExample"
        ]
        assert created["__typename"] == "VerdictPending", created

        async def judged() -> dict[str, Any] | None:
            node = (await post_graphql(http, author, EXAMPLE, id=created["example"]["id"]))["node"]
            return node if node["verdict"]["decided"] else None

        node = await eventually(judged, within=30, every=0.2, what="the judge decides")
        assert node["fooled"] is False and node["status"] == "CREATED"

        # The owner overrules the first verdict: the counters move with it; the judge's verdict stays beside.
        refused = (
            await post_graphql(http, author, OVERRULE, input={"id": example["id"], "fooled": False, "reason": "x"})
        )["overruleVerdict"]
        assert refused["__typename"] == "Forbidden", refused
        overruled = (
            await post_graphql(
                http,
                operator,
                OVERRULE,
                input={"id": example["id"], "fooled": False, "reason": "Quito is named as Peru's old capital."},
            )
        )["overruleVerdict"]
        assert overruled["__typename"] == "VerdictOverruled", overruled
        assert overruled["example"]["fooled"] is False
        assert overruled["example"]["verdict"] == {"overruled": True, "fooled": True}
        final = await _stats(http, author, code)
        assert final["collected"] == before["collected"] + 2 and final["fooled"] == before["fooled"]

        # The owners set their own rubric: the judge is told it from the next example on.
        ours = "The answer is wrong when it names a city that is not the capital asked for."
        tuned = await post_graphql(http, operator, SETTINGS, input={"taskCode": code, "judgeRubric": ours})
        assert tuned["updateTaskSettings"]["task"]["judgeRubric"] == ours, tuned
        asked = len(JUDGE_REQUESTS)
        again = {"question": "How many legs has a spider?", "answer": "Eight"}
        created = (await post_graphql(http, author, CREATE_WAITING, input={"taskCode": code, "fields": again}))[
            "createExample"
        ]
        assert created["__typename"] == "VerdictPending", created
        node = await eventually(judged, within=30, every=0.2, what="the judge decides with the owners' rubric")
        prompts = [json.dumps(r) for r in JUDGE_REQUESTS[asked:]]
        assert prompts and all(ours in p and rubric not in p for p in prompts)


async def test_a_people_decided_task_moves_its_counters_only_on_the_validators_decision(server, verdict_engines):
    served, operator = server
    code = "facts-people"
    claim = {"name": "model_wrong", "type": "boolean", "role": "metadata", "required": False}
    definition = qa_declaration(
        code, verdict_engines["target"], {"rule": "people", "field": "model_wrong"}, extra_fields=[claim]
    )
    definition["validation_quorum"] = 2
    async with httpx.AsyncClient(base_url=served.base_url, timeout=60) as http:
        declared = (await post_graphql(http, operator, DECLARE, input={"definition": definition}))["declareTask"]
        assert declared["__typename"] == "TaskDeclared", declared
        author = await new_account(http, f"claimer_{served.backend}")
        validators = [await new_account(http, f"checker{i}_{served.backend}") for i in range(2)]
        before = await _stats(http, author, code)

        # The author says the reply is right: not fooled, at once.
        fine = {"question": "How many legs has a spider?", "model_wrong": False}
        created = (await post_graphql(http, author, CREATE_WAITING, input={"taskCode": code, "fields": fine}))[
            "createExample"
        ]
        assert created == {"__typename": "ExampleCreated", "fooled": False}, created

        # The author says it is wrong: it waits for the validators, and counts for nothing until they decide.
        claimed = {"question": "What is the capital of Peru?", "answer": "Lima", "model_wrong": True}
        created = (await post_graphql(http, author, CREATE_WAITING, input={"taskCode": code, "fields": claimed}))[
            "createExample"
        ]
        assert created["__typename"] == "VerdictPending" and created["decidedBy"] == "PEOPLE", created
        waiting = created["example"]
        assert waiting["status"] == "PENDING_VERDICT" and waiting["fooled"] is None
        middle = await _stats(http, author, code)
        assert middle["collected"] == before["collected"] + 1 and middle["fooled"] == before["fooled"]

        first = (await post_graphql(http, validators[0], VOTE_ON, id=waiting["id"], label="CORRECT"))["validateExample"]
        assert first["__typename"] == "ValidationRecorded", first
        assert first["example"]["status"] == "PENDING_VERDICT" and first["example"]["fooled"] is None
        assert await _stats(http, author, code) == middle
        second = (await post_graphql(http, validators[1], VOTE_ON, id=waiting["id"], label="CORRECT"))[
            "validateExample"
        ]
        assert second["example"] == {"status": "ACCEPTED", "fooled": True}, second
        after = await _stats(http, author, code)
        assert after["collected"] == middle["collected"] + 1
        assert after["fooled"] == middle["fooled"] + 1 and after["verifiedFooled"] == middle["verifiedFooled"] + 1
        stored = (await post_graphql(http, author, EXAMPLE, id=waiting["id"]))["node"]
        assert stored["verdict"]["decidedBy"] == "PEOPLE" and stored["verdict"]["fooled"] is True
