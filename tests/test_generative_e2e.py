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

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import sacrebleu
from support import Server, cli, create_operator, database, eventually, plugin_process_env, serve, serve_in_thread

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
REGISTER = """mutation($input: RegisterInput!) { register(input: $input) { __typename
  ... on AuthPayload { token } ... on Error { message } } }"""
CREATE = """mutation($input: CreateExampleInput!) { createExample(input: $input) { __typename
  ... on CreatedExample { fooled example { id fields } prediction { fields
      generation { text tokens timeToFirstTokenMs totalMs finishReason } } }
  ... on Error { message } } }"""
IMPORT_DATASET = """mutation($input: ImportDatasetInput!) { importDataset(input: $input) { __typename
  ... on DatasetsCreated { datasets { name access size } } ... on Error { message } } }"""
SUBMIT = """mutation($input: SubmitModelInput!) { submitModel(input: $input) { __typename
  ... on SubmittedModel { model { id } } ... on Error { message } } }"""
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


async def _call(http: httpx.AsyncClient, token: str | None, query: str, **variables: Any) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    body = (await http.post("/graphql", json={"query": query, "variables": variables}, headers=headers)).json()
    assert not body.get("errors"), body
    return body["data"]


async def _user(http: httpx.AsyncClient, name: str) -> str:
    account = {"username": name, "email": f"{name}@example.org", "password": "a long enough password"}
    answer = (await _call(http, None, REGISTER, input=account))["register"]
    assert answer["__typename"] == "AuthPayload", answer
    return answer["token"]


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


def _metric(entry: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in entry["metrics"] if m["name"] == name)


async def test_a_declared_translation_task_is_fooled_by_chrf_and_ranks_generative_models(server, engines):
    served, operator = server
    async with httpx.AsyncClient(base_url=served.base_url, timeout=120) as http:
        declared = (await _call(http, operator, DECLARE, input={"definition": declaration(engines["target"])}))[
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
        author = await _user(http, f"writer_{served.backend}")
        cases = [
            ("Le chien est blanc.", ["The dog is white."]),  # exact
            ("Le chat dort.", ["The cat sleeps."]),  # a near miss: right, worded otherwise
            ("Il pleut.", ["It is raining.", "It's raining."]),  # wrong
        ]
        verdicts = []
        for source, references in cases:
            fields = {"source": source, "translation": references}
            created = (await _call(http, author, CREATE, input={"taskCode": TASK, "fields": fields}))["createExample"]
            assert created["__typename"] == "CreatedExample", created
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

        # ---- two generative models on a scoring set with references
        imported = _import_scoring_set(served.base_url, operator)
        assert imported["__typename"] == "DatasetsCreated", imported
        assert {d["name"] for d in imported["datasets"]} == {SET, f"{SET}~lowercase"}
        builder = await _user(http, f"builder_{served.backend}")
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
            submitted = (await _call(http, builder, SUBMIT, input=model))["submitModel"]
            assert submitted["__typename"] == "SubmittedModel", submitted
            ids[name] = submitted["model"]["id"]

        async def finished(model_id: str) -> dict[str, Any] | None:
            model = (await _call(http, builder, MODEL, id=model_id))["model"]
            return model if model["status"] in ("DONE", "FAILED") else None

        models = {
            name: await eventually(lambda m=m: finished(m), within=240, every=0.5, what=f"{name} is evaluated")
            for name, m in ids.items()
        }
        board = (await _call(http, None, BOARD))["leaderboard"]

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
