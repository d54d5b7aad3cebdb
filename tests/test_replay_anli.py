"""Replay of ANLI round 1 (dev) through the running server: the issue's acceptance test.

The real ``dynaforge serve`` runs as a subprocess (model worker, the ``nli`` plugin only, abuse limits raised) on a
fresh SQLite database, then on PostgreSQL. Over HTTP, with a GraphQL client, as outside users would:

* six annotators register and submit rows of ``../shared/data/nli/anli_r1_dev_annotated.csv`` as examples of
  ``nli`` (premise, hypothesis, gold label e/n/c as entailment/neutral/contradiction, the annotator's reason), at most
  :data:`IN_FLIGHT` calls at once; every call must be acknowledged;
* four validators (not annotators) ask ``exampleToValidate`` until it has nothing left for them and vote according
  to a fixed plan keyed by each example's content (mostly CORRECT, some INCORRECT, some FLAGGED); every vote cast is
  recorded, and a Conflict (the others decided the example meanwhile) counts as not cast;
* the operator, an admin created with the CLI, opens round 2.

Independently of the server, the test loads the nli task's default target model in its own process, predicts every
replayed pair and decides ``fooled`` as the task does (the predicted label differs from the gold one). From the file
and the votes cast, with the quorum rule (3 CORRECT accept; 3 INCORRECT or 3 FLAGGED reject), it computes collected,
fooled, verifiedFooled, rejected and vMER, and these must equal what the API reports for round 1: the round's stats,
the sums of its leaderboard, each annotator's ``myStats``. Round 2 must start empty.

Rows: seeded subsets, :data:`SQLITE_ROWS` on SQLite and :data:`POSTGRES_ROWS` on PostgreSQL (each replayed row is
predicted twice, by the server and by the test, on two CPUs shared with the rest of the suite: the whole file on
SQLite took nine of the suite's minutes). ``DYNAFORGE_REPLAY_ROWS=N`` replays a seeded subset of N rows on both
backends; ``all``, the whole file on both (the replay of record, run before a release).
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import hashlib
import os
import random
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from support import (
    Server,
    e2e_environment,
    operator_server,
    real_data,
    register,
    run,
    session,
)

pytestmark = pytest.mark.e2e

DATA_FILE = "nli/anli_r1_dev_annotated.csv"
LABEL_CODES = {"e": "entailment", "n": "neutral", "c": "contradiction"}  # the file's gold_label letters
ANNOTATORS = 6
VALIDATORS = 4
IN_FLIGHT = 8  # createExample calls at once, over all annotators
QUORUM = 3  # the task's default validation quorum
SQLITE_ROWS = 400
POSTGRES_ROWS = 250
SEED = 20240601
# A validator's vote on an example, from a hash of its content: CORRECT below 0.72, INCORRECT below 0.86, FLAGGED.
PLAN_CUTS = ((0.72, "CORRECT"), (0.86, "INCORRECT"), (1.0, "FLAGGED"))

STATS_FIELDS = "collected fooled verifiedFooled accepted rejected flagged retracted pending vmer"

CREATE = """mutation($input: CreateExampleInput!) {
  createExample(input: $input) {
    __typename
    ... on ExampleCreated { fooled prediction { label } example { id fooled status round { number } fields } }
    ... on PredictionPending { example { id status } message }
    ... on Error { message }
  } }"""
EXAMPLE = "query($id: ID!) { example(id: $id) { id status fooled prediction { label } } }"
PENDING = 'query { task(code: "nli") { currentRound { pending } } }'
TO_VALIDATE = 'query { exampleToValidate(taskCode: "nli") { id fields fooled status } }'
VALIDATE = """mutation($input: ValidateExampleInput!) {
  validateExample(input: $input) {
    __typename
    ... on ValidationRecorded { decided example { id status votes { correct incorrect flagged } } }
    ... on Error { message }
  } }"""
OPEN_NEXT = """mutation($input: OpenNextRoundInput!) {
  openNextRound(input: $input) {
    __typename
    ... on RoundOpened { round { number endedAt } previous { number endedAt } }
    ... on Error { message }
  } }"""
ROUNDS = f"""query {{ task(code: "nli") {{
  settings {{ validationQuorum validateNonFooling }}
  currentRound {{ number endedAt stats {{ {STATS_FIELDS} }} }}
  round(number: 1) {{ number endedAt collected fooled verifiedFooled stats {{ {STATS_FIELDS} }}
                     leaderboard(first: 100) {{ nodes {{ rank username stats {{ {STATS_FIELDS} }} }} }} }}
}} }}"""
MY_STATS = (
    f'query {{ myStats(taskCode: "nli") {{ rounds {{ roundNumber stats {{ {STATS_FIELDS} }} }} total {{ '
    f"{STATS_FIELDS} }} }} }}"
)


# --------------------------------------------------------------------------- the file


@dataclass(frozen=True)
class Row:
    line: int  # the row's number in the file (1 = the first data row)
    premise: str
    hypothesis: str
    label: str
    reason: str

    @property
    def key(self) -> str:
        """The example's identity for the vote plan: a hash of its content."""
        return hashlib.sha256(f"{self.premise}\x1f{self.hypothesis.strip()}".encode()).hexdigest()

    def fields(self) -> dict[str, str]:
        fields = {"premise": self.premise, "hypothesis": self.hypothesis, "label": self.label}
        if self.reason.strip():
            fields["reason"] = self.reason
        return fields


def read_rows() -> list[Row]:
    path = real_data(DATA_FILE)
    with open(path, encoding="utf-8", newline="") as fh:
        records = list(csv.DictReader(fh))
    rows = [
        Row(i, r["context"], r["statement"], LABEL_CODES[r["gold_label"].strip().lower()], r.get("reason") or "")
        for i, r in enumerate(records, start=1)
    ]
    assert len({r.key for r in rows}) == len(rows), "the plan keys examples by content; the file must not repeat a pair"
    return rows


def rows_for(backend: str, rows: list[Row]) -> list[Row]:
    wanted = os.environ.get("DYNAFORGE_REPLAY_ROWS", "").strip().lower()
    if wanted == "all":
        return rows
    n = int(wanted) if wanted else SQLITE_ROWS if backend == "sqlite" else POSTGRES_ROWS
    chosen = sorted(random.Random(SEED).sample(range(len(rows)), min(n, len(rows))))
    return [rows[i] for i in chosen]


# --------------------------------------------------------------------------- the independent expectation

_PREDICTED: dict[str, str] = {}  # row key -> the label the default model predicts, computed in this process


async def predict_in_process(rows: list[Row]) -> dict[str, str]:
    """The nli task's default target model, loaded here (not in the server), on every row not predicted yet."""
    missing = [r for r in rows if r.key not in _PREDICTED]
    if missing:
        await _predict(missing)
    return {r.key: _PREDICTED[r.key] for r in rows}


async def _predict(rows: list[Row]) -> None:
    from dynaforge.inference.client import LocalInferenceClient
    from dynaforge.plugins import Plugins

    plugins = Plugins(allowlist={"nli"})
    assert plugins.errors == {}, plugins.errors
    task = plugins.registry.tasks["nli"]
    spec = task.default_target_models[0]  # what round 1 of a new nli task puts in the loop
    client = LocalInferenceClient(plugins.registry.backends, timeout_s=600.0, load_timeout_s=600.0)
    try:
        # Similar lengths together, so that short pairs are not padded to long premises (the answer is the same).
        ordered = sorted(rows, key=lambda r: len(r.premise) + len(r.hypothesis))
        for start in range(0, len(ordered), 32):
            batch = ordered[start : start + 32]
            # The model sees the premise as written and the hypothesis without surrounding whitespace (the task
            # strips its input fields, never its context fields).
            inputs = [{"premise": r.premise, "hypothesis": r.hypothesis.strip()} for r in batch]
            answer = await client.predict(spec, inputs)
            assert len(answer.outputs) == len(batch)
            for row, output in zip(batch, answer.outputs, strict=False):
                assert output["label"] in task.labels, output
                _PREDICTED[row.key] = output["label"]
    finally:
        await client.close()


def fooled_by(row: Row, predicted: str) -> bool:
    """The task's rule: the model is fooled when it predicts another label than the annotator's (gold) one."""
    return predicted != row.label


def planned_vote(validator: int, key: str) -> str:
    digest = hashlib.sha256(f"{SEED}:{validator}:{key}".encode()).digest()
    x = int.from_bytes(digest[:8], "big") / 2**64
    return next(label for cut, label in PLAN_CUTS if x < cut)


@dataclass
class Figures:
    collected: int = 0
    fooled: int = 0
    verifiedFooled: int = 0
    accepted: int = 0
    rejected: int = 0

    def as_stats(self) -> dict[str, Any]:
        return {
            "collected": self.collected,
            "fooled": self.fooled,
            "verifiedFooled": self.verifiedFooled,
            "accepted": self.accepted,
            "rejected": self.rejected,
            "flagged": 0,  # a FLAGGED vote counts towards rejection; only flagExample takes an example out
            "retracted": 0,
            "pending": 0,
            "vmer": self.verifiedFooled / self.collected if self.collected else None,
        }


def outcome(votes: list[str]) -> str:
    """The quorum rule on the votes cast on one example."""
    count = Counter(votes)
    if count["CORRECT"] >= QUORUM:
        return "ACCEPTED"
    if count["INCORRECT"] >= QUORUM or count["FLAGGED"] >= QUORUM:
        return "REJECTED"
    return "CREATED"


# --------------------------------------------------------------------------- the server


@pytest.fixture(scope="module")
def anli_rows() -> list[Row]:
    """The file's rows (skips, saying why, where ../shared/data is absent, before any server starts)."""
    return read_rows()


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgresql", id="postgresql", marks=pytest.mark.postgres),
    ],
)
def server(request, tmp_path_factory, anli_rows) -> Iterator[tuple[Server, str]]:
    workdir = tmp_path_factory.mktemp(f"replay-anli-{request.param}")
    env = e2e_environment(workdir)
    env.update(
        DYNAFORGE_LOAD_PLUGINS="nli",
        DYNAFORGE_EXAMPLES_PER_MINUTE="100000",
        DYNAFORGE_VALIDATIONS_PER_MINUTE="100000",
        DYNAFORGE_VALIDATION_READS_PER_MINUTE="100000",
        # Alone, the worker's default (the cores less one) leaves a CPU idle here; beside other test processes
        # (pytest-xdist), one thread, as every test process has.
        DYNAFORGE_MODEL_THREADS="1" if os.environ.get("PYTEST_XDIST_WORKER") else "2",
        DYNAFORGE_INFERENCE_TIMEOUT_S="120",  # the worker loads the model on the first calls; never go pending
    )
    with operator_server(request.param, workdir, env) as started:
        yield started


# --------------------------------------------------------------------------- the replay


@dataclass
class Submitted:
    row: Row
    annotator: int
    example_id: str
    fooled: bool
    predicted: str


@dataclass
class Vote:
    validator: int
    example_id: str
    label: str
    result: str  # the payload's __typename
    decided: bool = False
    status: str | None = None


@dataclass
class Replay:
    submitted: list[Submitted] = field(default_factory=list)
    votes: list[Vote] = field(default_factory=list)
    offered: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))  # validator -> example ids


async def submit_all(server: Server, tokens: list[str], rows: list[Row]) -> list[Submitted]:
    """Each row once, by annotator ``line % ANNOTATORS``, at most IN_FLIGHT calls at once."""
    queue: asyncio.Queue[Row] = asyncio.Queue()
    for row in rows:
        queue.put_nowait(row)
    results: list[Submitted] = []
    pending: list[tuple[Row, int, str]] = []

    async def lane(sessions: list[Any]) -> None:
        while not queue.empty():
            row = queue.get_nowait()
            annotator = row.line % ANNOTATORS
            answer = await run(sessions[annotator], CREATE, input={"taskCode": "nli", "fields": row.fields()})
            answer = answer["createExample"]
            kind = answer["__typename"]
            assert kind in ("ExampleCreated", "PredictionPending"), (row.line, answer)
            if kind == "PredictionPending":
                pending.append((row, annotator, answer["example"]["id"]))
                continue
            example = answer["example"]
            assert example["status"] == "CREATED" and example["round"]["number"] == 1, answer
            assert example["fooled"] == answer["fooled"], answer
            assert example["fields"]["hypothesis"] == row.hypothesis.strip(), answer
            assert example["fields"]["label"] == row.label, answer
            results.append(Submitted(row, annotator, example["id"], answer["fooled"], answer["prediction"]["label"]))

    # One client per annotator, shared by the lanes: each connection is busy all along (an HTTP connection left idle
    # past the server's keep-alive timeout can be closed just as the client reuses it).
    async with contextlib.AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(session(server, token)) for token in tokens]
        await asyncio.gather(*(lane(sessions) for _ in range(IN_FLIGHT)))
    if pending:  # acknowledged but not predicted in time: the server predicts it later, we read it back then
        async with session(server, tokens[0]) as s:
            deadline = time.monotonic() + 120
            while (await run(s, PENDING))["task"]["currentRound"]["pending"]:
                assert time.monotonic() < deadline, "pending examples were never predicted"
                await asyncio.sleep(0.5)
        for row, annotator, example_id in pending:
            async with session(server, tokens[annotator]) as s:
                example = (await run(s, EXAMPLE, id=example_id))["example"]
            assert example["status"] == "CREATED", example
            results.append(Submitted(row, annotator, example_id, example["fooled"], example["prediction"]["label"]))
    return results


async def validate_all(server: Server, tokens: list[str], replay: Replay, by_id: dict[str, Submitted]) -> None:
    """Each validator, all at once: ask for an example, vote the plan's label, until the queue has nothing left."""

    async def validator(v: int) -> None:
        async with session(server, tokens[v]) as s:
            while True:
                offered = (await run(s, TO_VALIDATE))["exampleToValidate"]
                if offered is None:
                    return
                example_id = offered["id"]
                assert example_id not in replay.offered[v], f"validator {v} was offered example {example_id} twice"
                replay.offered[v].add(example_id)
                assert offered["fooled"] is True and offered["status"] == "CREATED", offered
                mine = by_id[example_id]
                assert offered["fields"]["hypothesis"] == mine.row.hypothesis.strip()
                label = planned_vote(v, mine.row.key)
                answer = (await run(s, VALIDATE, input={"id": example_id, "label": label}))["validateExample"]
                kind = answer["__typename"]
                assert kind in ("ValidationRecorded", "Conflict"), answer
                vote = Vote(v, example_id, label, kind)
                if kind == "ValidationRecorded":
                    vote.decided = answer["decided"]
                    vote.status = answer["example"]["status"]
                replay.votes.append(vote)

    await asyncio.gather(*(validator(v) for v in range(VALIDATORS)))


def expected_figures(
    submitted: list[Submitted], votes: list[Vote], predicted: dict[str, str]
) -> tuple[Figures, dict[int, Figures], dict[str, str]]:
    """collected, fooled, verifiedFooled, accepted, rejected (and vMER) from the file, the model run here and the
    votes cast: in total, per annotator; and each example's final status."""
    cast: dict[str, list[str]] = defaultdict(list)
    for vote in votes:
        if vote.result == "ValidationRecorded":
            cast[vote.example_id].append(vote.label)
    total, per_user, status = Figures(), defaultdict(Figures), {}
    for sub in submitted:
        fooled = fooled_by(sub.row, predicted[sub.row.key])
        status[sub.example_id] = outcome(cast[sub.example_id]) if fooled else "CREATED"
        for figures in (total, per_user[sub.annotator]):
            figures.collected += 1
            figures.fooled += fooled
            figures.verifiedFooled += fooled and status[sub.example_id] == "ACCEPTED"
            figures.accepted += status[sub.example_id] == "ACCEPTED"
            figures.rejected += status[sub.example_id] == "REJECTED"
    return total, dict(per_user), status


async def test_replay_anli_round_one(server, anli_rows, capsys):
    server, operator = server
    rows = rows_for(server.backend, anli_rows)
    started = time.monotonic()

    # The expectation, computed from the file alone (before the server has seen a row).
    predicted = await predict_in_process(rows)
    expected_fooled = {r.key: fooled_by(r, predicted[r.key]) for r in rows}
    predicted_s = time.monotonic() - started

    annotators = [(await register(server, f"annotator{i}"))[0] for i in range(ANNOTATORS)]
    validators = [(await register(server, f"validator{i}"))[0] for i in range(VALIDATORS)]
    replay = Replay()

    # 1. Every row, as an example of nli; the server's fooled is the one computed here.
    replay.submitted = await submit_all(server, annotators, rows)
    submitted_s = time.monotonic() - started
    assert len(replay.submitted) == len(rows)
    assert {s.row.key for s in replay.submitted} == {r.key for r in rows}
    by_id = {s.example_id: s for s in replay.submitted}
    assert len(by_id) == len(rows), "two rows got the same example id"
    wrong = [
        (s.row.line, s.predicted, predicted[s.row.key]) for s in replay.submitted if s.predicted != predicted[s.row.key]
    ]
    assert not wrong, (
        f"the server's model predicted otherwise than the same model here (line, server, here): {wrong[:10]}"
    )
    mismatched = [s.row.line for s in replay.submitted if s.fooled != expected_fooled[s.row.key]]
    assert not mismatched, (
        f"fooled differs from the file's gold label vs the model's prediction on lines {mismatched[:20]}"
    )

    # 2. Validation until every validator's queue is empty.
    await validate_all(server, validators, replay, by_id)
    validated_s = time.monotonic() - started

    total, per_user, status = expected_figures(replay.submitted, replay.votes, predicted)

    # The votes are consistent with the quorum rule, vote by vote.
    cast_by_example: dict[str, list[Vote]] = defaultdict(list)
    for vote in replay.votes:
        if vote.result == "ValidationRecorded":
            cast_by_example[vote.example_id].append(vote)
    for example_id, cast in cast_by_example.items():
        assert by_id[example_id].fooled, f"a non-fooling example {example_id} was validated"
        deciding = [v for v in cast if v.decided]
        assert len(deciding) == (status[example_id] != "CREATED"), (example_id, cast)
        for v in deciding:
            assert v.status == status[example_id], (example_id, cast)
        assert len({v.validator for v in cast}) == len(cast), f"someone voted twice on {example_id}"
    for sub in replay.submitted:
        cast = cast_by_example.get(sub.example_id, [])
        if not sub.fooled:
            assert not cast, sub
            continue
        # Every validator saw every fooling example, unless the others had decided it first.
        if status[sub.example_id] == "CREATED":
            assert len(cast) == VALIDATORS, (sub.example_id, cast)
        else:
            assert QUORUM <= len(cast) <= VALIDATORS, (sub.example_id, cast)
        # With four validators and a quorum of three, the order of the votes cannot change the outcome.
        plan = [planned_vote(v, sub.row.key) for v in range(VALIDATORS)]
        assert status[sub.example_id] == outcome(plan), (sub.example_id, plan, cast)
    for v in range(VALIDATORS):
        assert replay.offered[v] <= {s.example_id for s in replay.submitted if s.fooled}
    conflicts = sum(v.result == "Conflict" for v in replay.votes)
    cast_votes = Counter(v.label for v in replay.votes if v.result == "ValidationRecorded")

    # 3. The owner opens round 2.
    async with session(server, operator) as s:
        opened = (await run(s, OPEN_NEXT, input={"taskCode": "nli"}))["openNextRound"]
        assert opened["__typename"] == "RoundOpened", opened
        assert opened["round"]["number"] == 2 and opened["round"]["endedAt"] is None, opened
        assert opened["previous"]["number"] == 1 and opened["previous"]["endedAt"], opened
        task = (await run(s, ROUNDS))["task"]

    # 4. What the API reports equals what was computed here.
    assert task["settings"] == {"validationQuorum": QUORUM, "validateNonFooling": False}
    first = task["round"]
    assert first["number"] == 1 and first["endedAt"], first
    assert first["stats"] == total.as_stats(), (first["stats"], total.as_stats())
    assert (first["collected"], first["fooled"], first["verifiedFooled"]) == (
        total.collected,
        total.fooled,
        total.verifiedFooled,
    )
    current = task["currentRound"]
    assert current["number"] == 2 and current["endedAt"] is None, current
    assert current["stats"] == Figures().as_stats(), current

    board = first["leaderboard"]["nodes"]
    assert len(board) == ANNOTATORS, board  # validators wrote nothing and are not on it
    assert [e["rank"] for e in board] == list(range(1, ANNOTATORS + 1))
    for name in ("collected", "fooled", "verifiedFooled", "accepted", "rejected", "flagged", "retracted", "pending"):
        assert sum(e["stats"][name] for e in board) == first["stats"][name], name
    order = [(-e["stats"]["verifiedFooled"], -e["stats"]["fooled"], -e["stats"]["collected"]) for e in board]
    assert order == sorted(order), board
    board_stats = sorted((e["stats"] for e in board), key=lambda st: sorted(st.items()))
    expected_board = sorted((f.as_stats() for f in per_user.values()), key=lambda st: sorted(st.items()))
    assert board_stats == expected_board

    for i, token in enumerate(annotators):
        async with session(server, token) as s:
            mine = (await run(s, MY_STATS))["myStats"]
        assert mine["rounds"] == [{"roundNumber": 1, "stats": per_user[i].as_stats()}], (i, mine)
        assert mine["total"] == per_user[i].as_stats(), (i, mine)

    elapsed = time.monotonic() - started
    with capsys.disabled():
        print(
            f"\nANLI R1 replay on {server.backend}: {len(rows)} rows by {ANNOTATORS} annotators, {VALIDATORS} "
            f"validators"
            f"\n  round 1: collected={total.collected} fooled={total.fooled} verifiedFooled={total.verifiedFooled}"
            f" rejected={total.rejected} undecided={total.fooled - total.verifiedFooled - total.rejected}"
            f" vmer={total.verifiedFooled / total.collected:.4f} (server: {first['stats']['vmer']})"
            f"\n  votes cast: {sum(cast_votes.values())} ({dict(sorted(cast_votes.items()))}), conflicts not cast:"
            f" {conflicts}; round 2 opened"
            f"\n  time: model here {predicted_s:.1f}s, submissions {submitted_s - predicted_s:.1f}s,"
            f" validation {validated_s - submitted_s:.1f}s, total {elapsed:.1f}s",
            file=sys.stderr,
        )
