"""Importers of existing data sets: the ``register_importers`` hook, each importer on small files written here, the
import service (all or nothing, counters, who may import) on SQLite and PostgreSQL, the ``dynaforge import``
command, and the real data sets under ../shared/data when they are there.

Every sentence in the fixture files below is written for these tests; the real data sets are only read at run time.
"""

from __future__ import annotations

import asyncio
import csv
import json
import re
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import func, select
from support import asyncpg_url, make_settings, pg_execute, real_data

from dynaforge import (
    ChoiceField,
    ImportedExample,
    Importer,
    InvalidInput,
    Role,
    SkippedRow,
    Task,
    TextField,
    cli,
    hookimpl,
)
from dynaforge.db.engine import Database
from dynaforge.db.models import Example, ExampleStatus, Round, RoundUserStats, TaskRow, User
from dynaforge.defaults.importers import JsonlImporter
from dynaforge.errors import Forbidden, InvalidCredentials, NotFound
from dynaforge.importers import row_error
from dynaforge.inference.client import LocalInferenceClient
from dynaforge.plugins import Plugins
from dynaforge.services import auth, counters, imports, tasks
from dynaforge.services.actor import Actor
from dynaforge.services.platform import Platform

ROOT = Path(__file__).resolve().parent.parent
TASKS = {"nli", "qa", "sentiment", "hatespeech"}

# --------------------------------------------------------------------------- fixture files (invented text)

ANLI_HEADER = ["context", "statement", "reason", "adversary_pred", "gold_label", "uid"]
ANLI_ROWS = [
    # The first premise spans two lines of the file, so the second row starts on line 4.
    [
        "The orchard on the hill has forty apple trees and six pear trees.\nThe same farmer planted all of them in "
        "1990.",
        "The farmer planted more apple trees than pear trees.",
        "It has to compare two counts.",
        "c",
        "e",
        "t-1",
    ],
    [
        "Ravi closed the bookshop at six, an hour earlier than usual, because the street had flooded.",
        "On a normal day the bookshop closes at seven.",
        "",
        "e",
        "Entailment",
        "t-2",
    ],
    [
        "The choir rehearses on Tuesdays in the chapel, except in August when the chapel roof is repaired.",
        "The choir rehearsed in the chapel last August.",
        "The August exception is easy to miss.",
        "n",
        "c",
        "t-3",
    ],
]

PASSAGE = (
    "The lighthouse at Corran Point was built in 1872 from granite quarried on the island itself. Its lamp burned "
    "paraffin until 1931, when it was switched to electricity, and it was automated in 1989, when the last keeper, "
    "Morag Finlay, moved to the mainland."
)
SECOND_PASSAGE = (
    "Every spring the river ferry at Dallow carries more bicycles than cars. The crossing takes eleven minutes, and "
    "the ferry runs every half hour from dawn until the last boat at ten in the evening."
)


def squad_file(folder: Path, *, version: str | None = "v2.0") -> Path:
    def qa(qid, question, answer=None, passage=PASSAGE, impossible=False):
        answers = [] if answer is None else [{"text": answer, "answer_start": passage.index(answer)}]
        record = {"id": qid, "question": question, "answers": answers}
        if version is not None:
            record["is_impossible"] = impossible
        return record

    first = [
        qa("q1", "In which year was the lamp automated?", "1989"),
        qa("q2", "Who designed the lighthouse?", impossible=True),
        qa("q3", "What stone was used to build the lighthouse?", "granite"),
    ]
    # A question with two answers: the first one is the span.
    first[0]["answers"].append({"text": "in 1989", "answer_start": PASSAGE.index("in 1989")})
    second = [qa("q4", "How long does the crossing take?", "eleven minutes", passage=SECOND_PASSAGE)]
    data = {
        "data": [
            {"title": "Corran", "paragraphs": [{"context": PASSAGE, "qas": first}]},
            {"title": "Dallow", "paragraphs": [{"context": SECOND_PASSAGE, "qas": second}]},
        ]
    }
    if version is not None:
        data["version"] = version
    path = folder / "squad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


SST_TEXT = (
    "sentence\tlabel\n"
    "a warm , generous film about two stubborn sisters \t1\n"
    "the plot drags and every joke lands a beat too late \t0\n"
    "ok\t1\n"
    "\n"
    "quietly devastating in the best possible way \t1\n"
)

DAVIDSON_HEADER = ["id", "count", "hate_speech", "offensive_language", "neither", "class", "tweet"]
DAVIDSON_ROWS = [
    ["1", "4", "3", "1", "0", "0", "placeholder text for a row the annotators called hate speech"],
    [
        "2",
        "3",
        "0",
        "2",
        "1",
        "1",
        "RT @river_fan: this referee is a clown &amp; so is his brother http://example.org/x",
    ],
    ["3", "3", "0", "0", "3", "2", "the pie at the match was great &amp;#128514; #derbyday"],
]


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def export_line(fields: dict, **overrides) -> str:
    """One line of Dynaforge's JSONL export (``dynaforge.example/1``) with invented values."""
    record = {
        "format": "dynaforge.example/1",
        "id": 12,
        "task": "nli",
        "round": 1,
        "status": "ACCEPTED",
        "fields": fields,
        "tag": "numbers",
        "context_id": 4,
        "fooled": True,
        "prediction": {"label": "neutral", "probabilities": {"entailment": 0.2, "neutral": 0.7, "contradiction": 0.1}},
        "model_predictions": [
            {"model": "minilm-nli", "prediction": {"label": "neutral"}, "fooled": True, "latency_ms": 12.5}
        ],
        "author": "0123456789abcdef",
        "time_taken_ms": 1200,
        "created_at": "2026-01-02T03:04:05+00:00",
        "votes": {"correct": 2, "incorrect": 1, "flagged": 0},
        "flag_reason": None,
        "validations": [
            {
                "validator": "fedcba9876543210",
                "label": "CORRECT",
                "corrected_target": None,
                "reason": None,
                "by_owner": False,
                "created_at": "2026-01-02T04:00:00+00:00",
            }
        ],
    }
    record.update(overrides)
    return json.dumps(record)


NLI_FIELDS = {
    "premise": "The museum's east wing opened in 2004, twelve years after the west wing.",
    "hypothesis": "The west wing opened in 1992.",
    "label": "entailment",
    "reason": "The model has to subtract.",
}


def jsonl_text() -> str:
    rejected = dict(NLI_FIELDS, hypothesis="The east wing is older than the west wing.", label="contradiction")
    rejected.pop("reason")
    flagged = dict(NLI_FIELDS, hypothesis="The museum has exactly two wings.", label="neutral")
    return (
        "\n".join(
            [
                export_line(NLI_FIELDS),
                "",
                export_line(
                    rejected,
                    status="REJECTED",
                    fooled=False,
                    tag=None,
                    time_taken_ms=None,
                    votes={"correct": 0, "incorrect": 3, "flagged": 0},
                ),
                export_line(
                    flagged,
                    status="FLAGGED",
                    fooled=None,
                    prediction=None,
                    model_predictions=[],
                    votes={"correct": 0, "incorrect": 0, "flagged": 2},
                    flag_reason="ambiguous wording",
                ),
            ]
        )
        + "\n"
    )


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def installed() -> Plugins:
    plugins = Plugins(allowlist=TASKS)
    assert plugins.errors == {}
    return plugins


def make_platform(db, db_url, plugins: Plugins) -> Platform:
    return Platform.create(
        make_settings(db_url),
        db=db,
        plugins=plugins,
        inference=LocalInferenceClient(plugins.registry.backends, timeout_s=1.0),
    )


@pytest.fixture
async def platform(db, db_url, installed):
    """A platform over the rolled-back database with the four bundled tasks, each with its round 1."""
    p = make_platform(db, db_url, installed)
    await tasks.sync_registered_tasks(p)
    try:
        yield p
    finally:
        await p.inference.close()


def task_of(plugins: Plugins, code: str) -> Task:
    return plugins.task(code)


def read_all(importer: Importer, path: Path, task: Task) -> list:
    return list(importer.scan(path, task))


async def stored(p: Platform, code: str) -> list[Example]:
    async with p.db.session() as s:
        task_id = await s.scalar(select(TaskRow.id).where(TaskRow.code == code))
        return list(await s.scalars(select(Example).where(Example.task_id == task_id).order_by(Example.id)))


async def example_count(p: Platform) -> int:
    async with p.db.session() as s:
        return await s.scalar(select(func.count()).select_from(Example))


async def assert_counters_match_recount(p: Platform) -> None:
    """The stored round and per-user counters equal a recount from the examples table, for every round."""
    async with p.db.session() as s:
        rounds = list(await s.scalars(select(Round)))
        per_round, per_user = await counters.recount(s, [r.id for r in rounds])
        for r in rounds:
            assert {k: getattr(r, k) for k in counters.COUNTERS} == per_round[r.id], r.id
        rows = await s.scalars(select(RoundUserStats))
        kept = {(x.round_id, x.user_id): {k: getattr(x, k) for k in counters.COUNTERS} for x in rows}
    nonzero = lambda d: {key: value for key, value in d.items() if any(value.values())}  # noqa: E731
    assert nonzero(kept) == nonzero(per_user)


async def add_user(p: Platform, name: str) -> Actor:
    user = await auth.create_user(
        p, Actor.system(), username=name, email=f"{name}@example.org", password="a long enough password"
    )
    return Actor(user.id, user.username)


# --------------------------------------------------------------------------- register_importers


def test_register_importers_core_and_bundled_plugins(installed):
    importers = installed.registry.importers
    assert {name: i.task_code for name, i in importers.items()} == {
        "jsonl": None,
        "anli": "nli",
        "squad": "qa",
        "sst": "sentiment",
        "davidson": "hatespeech",
    }
    assert installed.registry.owners[("importers", "jsonl")] == "dynaforge.defaults.importers"
    assert installed.registry.owners[("importers", "anli")] == "nli"
    assert all(isinstance(i, Importer) and i.description for i in importers.values())
    for code in TASKS:
        row = next(r for r in installed.info() if r.name == code)
        assert "register_importers" in row.hooks
    nli = installed.task("nli")
    assert importers["jsonl"].supports(nli) and importers["anli"].supports(nli)
    assert not importers["squad"].supports(nli)


def test_register_importers_names_are_unique_and_objects_checked():
    class Copycat(Importer):
        name = "jsonl"

    class Nameless(Importer):
        name = ""

    class CopyPlugin:
        @hookimpl
        def register_importers(self, register):
            register(Copycat())

    class NamelessPlugin:
        @hookimpl
        def register_importers(self, register):
            register(Nameless())

    class WrongPlugin:
        @hookimpl
        def register_importers(self, register):
            register(object())

    p = Plugins(allowlist=set(), extra=[CopyPlugin(), NamelessPlugin(), WrongPlugin()])
    assert "'jsonl' is already registered by dynaforge.defaults.importers" in p.errors["CopyPlugin"]
    assert "has no name" in p.errors["NamelessPlugin"]
    assert "which is not a Importer" in p.errors["WrongPlugin"]
    assert type(p.registry.importers["jsonl"]) is JsonlImporter


def test_register_importers_docs_example_reads_its_csv(tmp_path):
    """The importer shown under '### register_importers' in docs/plugins.md works as written."""
    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = text.split("### register_importers", 1)[1].split("\n### ", 1)[0]
    source = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)[1]
    namespace: dict = {}
    exec(compile(source, "docs-register-importers", "exec"), namespace)

    class Formality(Task):
        code = "formality"
        name = "Formality"
        labels = ("formal", "informal")
        fields = (
            TextField(name="situation", role=Role.CONTEXT),
            TextField(name="sentence", role=Role.INPUT),
            ChoiceField(name="label", role=Role.TARGET),
        )

    collected = []
    namespace["register_importers"](collected.append)
    [importer] = collected
    path = write_csv(
        tmp_path / "f.csv",
        ["situation", "sentence", "register"],
        [["A note to a neighbour.", "Hey, got a sec?", "I"], ["A cover letter.", "Dear Sir", "X"]],
    )
    first, second = read_all(importer, path, Formality())
    assert first.fields == {"situation": "A note to a neighbour.", "sentence": "Hey, got a sec?", "label": "informal"}
    assert isinstance(second, InvalidInput) and second.field_errors[0].field == "line 3"


# --------------------------------------------------------------------------- each importer on its own


def test_anli_reads_labels_reasons_and_the_adversary(tmp_path, installed):
    task = task_of(installed, "nli")
    path = write_csv(tmp_path / "anli.csv", ANLI_HEADER, ANLI_ROWS)
    items = read_all(installed.registry.importers["anli"], path, task)
    assert [i.location for i in items] == ["line 2", "line 4", "line 5"]
    assert [i.fields["label"] for i in items] == ["entailment", "entailment", "contradiction"]
    assert [i.fooled for i in items] == [True, False, True]
    assert [i.prediction for i in items] == [{"label": "contradiction"}, {"label": "entailment"}, {"label": "neutral"}]
    assert items[0].model_predictions == [
        {"model": "adversary", "prediction": {"label": "contradiction"}, "fooled": True}
    ]
    assert items[0].fields["reason"] == "It has to compare two counts." and "reason" not in items[1].fields
    assert items[0].fields["premise"] == ANLI_ROWS[0][0]
    assert all(i.status == "ACCEPTED" for i in items)


def test_anli_without_the_adversary_leaves_fooled_unknown_and_names_bad_labels(tmp_path, installed):
    task = task_of(installed, "nli")
    rows = [[r[0], r[1], r[4]] for r in ANLI_ROWS] + [[ANLI_ROWS[1][0], "The street was dry.", "x"]]
    path = write_csv(tmp_path / "anli.csv", ["context", "statement", "gold_label"], rows)
    *good, bad = read_all(installed.registry.importers["anli"], path, task)
    assert [(i.fooled, i.prediction, i.model_predictions) for i in good] == [(None, None, [])] * 3
    assert isinstance(bad, InvalidInput)
    [error] = bad.field_errors
    assert (error.field, error.rule) == ("line 6", "label") and "got 'x'" in error.message

    missing = write_csv(tmp_path / "other.csv", ["premise", "hypothesis"], [["a", "b"]])
    [error] = read_all(installed.registry.importers["anli"], missing, task)
    assert error.field_errors[0].field == "file" and "context, gold_label, statement" in error.message


def test_squad_one_example_per_question_first_answer_unanswerable_skipped(tmp_path, installed):
    task = task_of(installed, "qa")
    items = read_all(installed.registry.importers["squad"], squad_file(tmp_path), task)
    examples = [i for i in items if isinstance(i, ImportedExample)]
    skipped = [i for i in items if isinstance(i, SkippedRow)]
    assert [e.fields["answer"] for e in examples] == [
        {"text": "1989", "start": PASSAGE.index("1989")},
        {"text": "granite", "start": PASSAGE.index("granite")},
        {"text": "eleven minutes", "start": SECOND_PASSAGE.index("eleven minutes")},
    ]
    assert examples[2].fields["passage"] == SECOND_PASSAGE and examples[0].fooled is None
    assert [(s.location, "unanswerable" in s.reason) for s in skipped] == [("data[0].paragraphs[0].qas[1]", True)]
    for example in examples:
        task.validate_example(example.fields, None)

    v1 = read_all(installed.registry.importers["squad"], squad_file(tmp_path, version=None), task)
    assert sum(isinstance(i, ImportedExample) for i in v1) == 3  # SQuAD 1.1 has no is_impossible
    (tmp_path / "broken.json").write_text('{"data": [', encoding="utf-8")
    [error] = read_all(installed.registry.importers["squad"], tmp_path / "broken.json", task)
    assert error.field_errors[0].field == "file" and "not JSON" in error.message


def test_sst_maps_labels_and_skips_fragments(tmp_path, installed):
    task = task_of(installed, "sentiment")
    path = tmp_path / "sst.tsv"
    path.write_text(SST_TEXT, encoding="utf-8")
    items = read_all(installed.registry.importers["sst"], path, task)
    assert [(i.location, i.fields) for i in items if isinstance(i, ImportedExample)] == [
        ("line 2", {"statement": "a warm , generous film about two stubborn sisters", "label": "positive"}),
        ("line 3", {"statement": "the plot drags and every joke lands a beat too late", "label": "negative"}),
        ("line 6", {"statement": "quietly devastating in the best possible way", "label": "positive"}),
    ]
    [skipped] = [i for i in items if isinstance(i, SkippedRow)]
    assert skipped.location == "line 4" and "shorter than the 3 characters" in skipped.reason

    path.write_text("text\tlabel\nfine words\t1\n", encoding="utf-8")
    [error] = read_all(installed.registry.importers["sst"], path, task)
    assert error.field_errors[0].rule == "header" and "sentence<TAB>label" in error.message
    path.write_text("sentence\tlabel\nfine words\t2\nno label at all\n", encoding="utf-8")
    errors = read_all(installed.registry.importers["sst"], path, task)
    assert [e.field_errors[0].field for e in errors] == ["line 2", "line 3"]


def test_davidson_maps_classes_normalises_tweets_and_counts_votes(tmp_path, installed):
    task = task_of(installed, "hatespeech")
    path = write_csv(tmp_path / "davidson.csv", DAVIDSON_HEADER, DAVIDSON_ROWS)
    hate, offensive, neither = read_all(installed.registry.importers["davidson"], path, task)
    assert hate.fields == {"statement": DAVIDSON_ROWS[0][6], "label": "hateful"}
    assert offensive.fields == {
        "statement": "@user: this referee is a clown & so is his brother http",
        "label": "not_hateful",
        "type": "none",
    }
    assert neither.fields["statement"] == "the pie at the match was great \N{FACE WITH TEARS OF JOY} derbyday"
    assert [(i.votes_correct, i.votes_incorrect) for i in (hate, offensive, neither)] == [(3, 1), (3, 0), (3, 0)]
    assert all(i.fooled is None for i in (hate, offensive, neither))
    for item in (hate, offensive, neither):
        task.validate_example(item.fields, None)

    bad = write_csv(
        tmp_path / "bad.csv",
        DAVIDSON_HEADER,
        [["4", "3", "1", "1", "0", "0", "counts that do not add up"], ["5", "3", "0", "3", "0", "7", "odd class"]],
    )
    errors = read_all(installed.registry.importers["davidson"], bad, task)
    assert [(e.field_errors[0].field, e.field_errors[0].rule) for e in errors] == [
        ("line 2", "votes"),
        ("line 3", "label"),
    ]
    plain = write_csv(tmp_path / "plain.csv", ["class", "tweet"], [["2", "just a tweet about lunch"]])
    [item] = read_all(installed.registry.importers["davidson"], plain, task)
    assert (item.votes_correct, item.votes_incorrect) == (0, 0)


def test_jsonl_reads_the_export_format_and_names_bad_lines(tmp_path, installed):
    task = task_of(installed, "nli")
    path = tmp_path / "nli.jsonl"
    path.write_text(jsonl_text(), encoding="utf-8")
    first, rejected, flagged = read_all(installed.registry.importers["jsonl"], path, task)
    assert (first.location, rejected.location, flagged.location) == ("line 1", "line 3", "line 4")
    assert first.fields == NLI_FIELDS and first.status == "ACCEPTED" and first.fooled is True
    assert (first.tag, first.time_taken_ms, first.votes_correct, first.votes_incorrect) == ("numbers", 1200, 2, 1)
    assert first.model_predictions[0]["model"] == "minilm-nli"
    assert (rejected.status, rejected.fooled, rejected.tag) == ("REJECTED", False, None)
    assert (flagged.status, flagged.votes_flagged, flagged.flag_reason) == ("FLAGGED", 2, "ambiguous wording")

    path.write_text(
        "\n".join(
            [
                "{not json",
                json.dumps({"format": "something/else"}),
                export_line(NLI_FIELDS, task="qa"),
                export_line(NLI_FIELDS, fooled="yes", votes={"correct": -1}),
                "[1, 2]",
            ]
        ),
        encoding="utf-8",
    )
    errors = read_all(installed.registry.importers["jsonl"], path, task)
    assert [(e.field_errors[0].field, e.field_errors[0].rule) for e in errors] == [
        ("line 1", "json"),
        ("line 2", "format"),
        ("line 3", "task"),
        ("line 4", "format"),
        ("line 5", "json"),
    ]
    assert "import it into 'qa'" in errors[2].message
    assert "fooled must be true, false" in errors[3].message and "votes.correct" in errors[3].message


def test_unreadable_bytes_stop_reading_where_they_are(tmp_path, installed):
    jsonl = tmp_path / "latin1.jsonl"
    latin1 = export_line(dict(NLI_FIELDS, reason="a cafe")).encode().replace(b"a cafe", b"a caf\xe9")
    jsonl.write_bytes(export_line(NLI_FIELDS).encode() + b"\n" + latin1)
    first, error = read_all(installed.registry.importers["jsonl"], jsonl, task_of(installed, "nli"))
    assert isinstance(first, ImportedExample)
    assert (error.field_errors[0].field, error.field_errors[0].rule) == ("line 2", "encoding")

    table = tmp_path / "latin1.csv"
    table.write_bytes("class,tweet\n2,caf\u00e9 au lait\n".encode("latin-1"))
    [error] = read_all(installed.registry.importers["davidson"], table, task_of(installed, "hatespeech"))
    assert error.field_errors[0].rule == "encoding" and "save it as UTF-8" in error.message
    wide = write_csv(tmp_path / "wide.csv", ["class", "tweet"], [["2", "a tweet about lunch", "extra"], ["1", "fine"]])
    errors = read_all(installed.registry.importers["davidson"], wide, task_of(installed, "hatespeech"))
    assert (errors[0].field_errors[0].field, errors[0].field_errors[0].rule) == ("line 2", "columns")
    assert isinstance(errors[1], ImportedExample) and errors[1].location == "line 3"


# --------------------------------------------------------------------------- the import service


def fixture_file(folder: Path, fmt: str) -> Path:
    if fmt == "anli":
        return write_csv(folder / "anli.csv", ANLI_HEADER, ANLI_ROWS)
    if fmt == "squad":
        return squad_file(folder)
    if fmt == "sst":
        (folder / "sst.tsv").write_text(SST_TEXT, encoding="utf-8")
        return folder / "sst.tsv"
    if fmt == "davidson":
        return write_csv(folder / "davidson.csv", DAVIDSON_HEADER, DAVIDSON_ROWS)
    (folder / "nli.jsonl").write_text(jsonl_text(), encoding="utf-8")
    return folder / "nli.jsonl"


# format -> (task, examples, skipped, [(status, fooled, (correct, incorrect, flagged))] per stored example)
CASES = {
    "anli": (
        "nli",
        3,
        0,
        [("ACCEPTED", True, (0, 0, 0)), ("ACCEPTED", False, (0, 0, 0)), ("ACCEPTED", True, (0, 0, 0))],
    ),
    "squad": ("qa", 3, 1, [("ACCEPTED", None, (0, 0, 0))] * 3),
    "sst": ("sentiment", 3, 1, [("ACCEPTED", None, (0, 0, 0))] * 3),
    "davidson": (
        "hatespeech",
        3,
        0,
        [("ACCEPTED", None, (3, 1, 0)), ("ACCEPTED", None, (3, 0, 0)), ("ACCEPTED", None, (3, 0, 0))],
    ),
    "jsonl": (
        "nli",
        3,
        0,
        [("ACCEPTED", True, (2, 1, 0)), ("REJECTED", False, (0, 3, 0)), ("FLAGGED", None, (0, 0, 2))],
    ),
}


@pytest.mark.parametrize("fmt", sorted(CASES))
async def test_import_stores_every_example_and_counters_match_recount(platform, tmp_path, fmt):
    code, count, skipped, expected = CASES[fmt]
    task = platform.plugins.task(code)
    seen = []
    report = await imports.import_examples(
        platform,
        Actor.system(),
        task_code=code,
        format=fmt,
        path=fixture_file(tmp_path, fmt),
        progress=lambda *a: seen.append(a),
    )
    assert (report.task_code, report.format, report.count, report.round_number) == (code, fmt, count, 1)
    assert report.username == "importer" and report.skipped_count == skipped
    assert seen[-1] == ("importing", count, count) and seen[0][0] == "checking"

    rows = await stored(platform, code)
    assert [
        (e.status, e.fooled, (e.validations_correct, e.validations_incorrect, e.validations_flagged)) for e in rows
    ] == expected
    for e in rows:
        assert e.context_id is None and e.validations_total == sum(
            (e.validations_correct, e.validations_incorrect, e.validations_flagged)
        )
        # The context's fields are stored in the example (PostgreSQL's JSONB does not keep key order), and the whole
        # passes the task's validation.
        required_context = {f.name for f in task.fields_with(Role.CONTEXT) if f.required}
        assert required_context <= set(e.fields)
        assert task.validate_example(e.fields, None) == e.fields
    await assert_counters_match_recount(platform)

    async with platform.db.session() as s:
        importer = await s.scalar(select(User).where(User.username == "importer"))
        round_ = await s.scalar(select(Round).join(TaskRow, TaskRow.id == Round.task_id).where(TaskRow.code == code))
    assert not importer.is_active and importer.password_hash == imports.UNUSABLE_PASSWORD
    assert {e.user_id for e in rows} == {importer.id}
    assert round_.accepted == sum(status == "ACCEPTED" for status, _, _ in expected)
    assert round_.collected == sum(fooled is not None for _, fooled, _ in expected)
    assert round_.verified_fooled == sum(status == "ACCEPTED" and fooled is True for status, fooled, _ in expected)


async def test_import_keeps_what_the_jsonl_records(platform, tmp_path):
    await imports.import_examples(
        platform, Actor.system(), task_code="nli", format="jsonl", path=fixture_file(tmp_path, "jsonl")
    )
    first, rejected, flagged = await stored(platform, "nli")
    assert first.fields == NLI_FIELDS
    assert first.prediction["label"] == "neutral" and first.model_predictions[0]["latency_ms"] == 12.5
    assert (first.tag, first.time_taken_ms) == ("numbers", 1200)
    assert (flagged.flag_reason, flagged.prediction, flagged.model_predictions) == ("ambiguous wording", None, [])
    assert rejected.tag is None and rejected.time_taken_ms is None
    async with platform.db.session() as s:
        assert await s.scalar(select(func.count()).select_from(Example).where(Example.context_id.is_not(None))) == 0


async def test_import_of_a_bad_file_reports_each_bad_line_and_writes_nothing(platform, tmp_path):
    path = tmp_path / "bad.jsonl"
    wrong_label = dict(NLI_FIELDS, label="maybe")
    no_premise = {k: v for k, v in NLI_FIELDS.items() if k != "premise"}
    path.write_text(
        "\n".join(
            [
                export_line(NLI_FIELDS),
                "{broken",
                export_line(NLI_FIELDS),
                export_line(wrong_label),
                export_line(NLI_FIELDS, status="PENDING_PREDICTION", fooled=None, prediction=None),
                export_line(no_premise, status="DONE"),
                export_line(NLI_FIELDS, task="sentiment"),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    before = await example_count(platform)
    with pytest.raises(InvalidInput) as caught:
        await imports.import_examples(platform, Actor.system(), task_code="nli", format="jsonl", path=path)
    errors = [(e.field, e.rule) for e in caught.value.field_errors]
    assert errors == [
        ("line 2", "json"),
        ("line 4", "choice"),
        ("line 5", "status"),
        ("line 6", "required"),
        ("line 6", "status"),
        ("line 7", "task"),
    ]
    message = caught.value.message
    assert message.startswith("Nothing was imported: 5 record(s) of bad.jsonl")
    assert "line 4: field label: must be one of entailment, neutral, contradiction; got 'maybe'" in message
    assert "PENDING_PREDICTION" in message and "line 6: field premise: is required" in message
    assert await example_count(platform) == before
    async with platform.db.session() as s:
        assert await s.scalar(select(User).where(User.username == "importer")) is None
        assert await s.scalar(select(func.sum(Round.accepted + Round.collected))) == 0


async def test_import_reports_at_most_fifty_errors(platform, tmp_path):
    path = tmp_path / "many.tsv"
    path.write_text("sentence\tlabel\n" + "".join(f"sentence number {i}\t7\n" for i in range(80)), encoding="utf-8")
    with pytest.raises(InvalidInput) as caught:
        await imports.import_examples(platform, Actor.system(), task_code="sentiment", format="sst", path=path)
    errors = caught.value.field_errors
    assert len(errors) == imports.MAX_REPORTED_ERRORS + 1
    assert errors[0].field == "line 2" and errors[49].field == "line 51"
    assert (errors[-1].field, errors[-1].rule) == ("file", "too_many_errors") and "80 records" in errors[-1].message


async def test_import_refuses_empty_and_missing_files(platform, tmp_path):
    (tmp_path / "only.tsv").write_text("sentence\tlabel\nok\t1\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="holds no example for task sentiment") as caught:
        await imports.import_examples(
            platform, Actor.system(), task_code="sentiment", format="sst", path=tmp_path / "only.tsv"
        )
    assert "1 record(s) skipped" in caught.value.message
    with pytest.raises(InvalidInput, match="is not a file"):
        await imports.import_examples(
            platform, Actor.system(), task_code="sentiment", format="sst", path=tmp_path / "absent.tsv"
        )


class FlakyImporter(Importer):
    """Yields 1,200 good examples the first time; the second time it breaks after 1,100 (two batches written)."""

    name = "test-flaky"
    task_code = "sentiment"

    def __init__(self):
        self.passes = 0

    def read(self, path, task):
        self.passes += 1
        for i in range(1200):
            if self.passes == 2 and i == 1100:
                raise row_error(f"line {i + 1}", "changed", "was rewritten while the import ran")
            yield ImportedExample(
                fields={"statement": f"invented statement {i}", "label": "positive"}, location=f"line {i + 1}"
            )


class GrowingImporter(Importer):
    """Yields one more example on each pass, like a file that is appended to while it is imported."""

    name = "test-growing"
    task_code = "sentiment"

    def __init__(self):
        self.passes = 0

    def read(self, path, task):
        self.passes += 1
        for i in range(600 + self.passes):
            yield ImportedExample(
                fields={"statement": f"invented statement {i}", "label": "negative"}, location=f"line {i + 1}"
            )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (FlakyImporter, "changed during the import; nothing was imported"),
        (GrowingImporter, "held 601 examples when it was checked and 602 when it was imported"),
    ],
    ids=["error-in-second-pass", "more-rows-in-second-pass"],
)
async def test_import_failing_half_way_leaves_nothing(db, db_url, tmp_path, make, message):
    importer = make()

    class ChangingPlugin:
        @hookimpl
        def register_importers(self, register):
            register(importer)

    plugins = Plugins(allowlist={"sentiment"}, extra=[ChangingPlugin()])
    p = make_platform(db, db_url, plugins)
    await tasks.sync_registered_tasks(p)
    (tmp_path / "any").write_text("", encoding="utf-8")
    try:
        with pytest.raises(InvalidInput, match=message):
            await imports.import_examples(
                p, Actor.system(), task_code="sentiment", format=importer.name, path=tmp_path / "any"
            )
        assert importer.passes == 2
        assert await example_count(p) == 0
        async with p.db.session() as s:
            assert await s.scalar(select(User).where(User.username == "importer")) is None
            assert await s.scalar(select(func.count()).select_from(RoundUserStats)) == 0
        await assert_counters_match_recount(p)
    finally:
        await p.inference.close()


async def test_import_refuses_unknown_formats_and_another_tasks_format(platform, tmp_path):
    path = fixture_file(tmp_path, "sst")
    with pytest.raises(InvalidInput) as caught:
        await imports.import_examples(platform, Actor.system(), task_code="nli", format="csv", path=path)
    [error] = caught.value.field_errors
    assert (error.field, error.rule) == ("format", "choice")
    assert "no importer 'csv'; the importers for task nli are: anli, jsonl" in error.message
    with pytest.raises(InvalidInput, match="importer 'sst' reads data for task sentiment, not nli"):
        await imports.import_examples(platform, Actor.system(), task_code="nli", format="sst", path=path)
    with pytest.raises(NotFound, match="No task 'poetry'"):
        await imports.import_examples(platform, Actor.system(), task_code="poetry", format="jsonl", path=path)
    assert await example_count(platform) == 0


async def test_import_only_by_owners_and_admins(platform, tmp_path):
    path = fixture_file(tmp_path, "sst")
    mallory = await add_user(platform, "mallory")
    with pytest.raises(Forbidden, match="Only owners of sentiment and admins can import"):
        await imports.import_examples(platform, mallory, task_code="sentiment", format="sst", path=path)
    assert await example_count(platform) == 0

    olga = await add_user(platform, "olga")
    await tasks.grant_ownership(platform, Actor.system(), "sentiment", olga.user_id)
    report = await imports.import_examples(platform, olga, task_code="sentiment", format="sst", path=path)
    assert report.count == 3
    admin = await auth.create_user(
        platform,
        Actor.system(),
        username="ada",
        email="ada@example.org",
        password="a long enough password",
        is_admin=True,
    )
    report = await imports.import_examples(
        platform, Actor(admin.id, "ada", is_admin=True), task_code="sentiment", format="sst", path=path
    )
    assert report.count == 3 and await example_count(platform) == 6


async def test_import_into_a_named_round_as_a_named_user(platform, tmp_path):
    path = fixture_file(tmp_path, "anli")
    author = await add_user(platform, "annotator7")
    async with platform.db.write() as s:
        task_id = await s.scalar(select(TaskRow.id).where(TaskRow.code == "nli"))
        s.add(Round(task_id=task_id, number=2, secret="0" * 64))
    report = await imports.import_examples(
        platform, Actor.system(), task_code="nli", format="anli", path=path, round_number=1, username="annotator7"
    )
    assert (report.round_number, report.username, report.count) == (1, "annotator7", 3)
    report = await imports.import_examples(platform, Actor.system(), task_code="nli", format="anli", path=path)
    assert (report.round_number, report.username) == (2, "importer")  # the current round by default
    rows = await stored(platform, "nli")
    assert [e.user_id for e in rows[:3]] == [author.user_id] * 3
    await assert_counters_match_recount(platform)
    async with platform.db.session() as s:
        stats = await s.get(RoundUserStats, (rows[0].round_id, author.user_id))
    assert (stats.collected, stats.fooled, stats.accepted, stats.verified_fooled) == (3, 2, 3, 2)

    with pytest.raises(NotFound, match="no round 9; its rounds are: 1, 2"):
        await imports.import_examples(
            platform, Actor.system(), task_code="nli", format="anli", path=path, round_number=9
        )
    with pytest.raises(NotFound, match="No user named 'nobody'"):
        await imports.import_examples(
            platform, Actor.system(), task_code="nli", format="anli", path=path, username="nobody"
        )


async def test_the_importer_account_cannot_sign_in_nor_be_a_person(platform, tmp_path):
    await imports.import_examples(
        platform, Actor.system(), task_code="sentiment", format="sst", path=fixture_file(tmp_path, "sst")
    )
    with pytest.raises(InvalidCredentials):
        await auth.login(platform, username="importer", password=imports.UNUSABLE_PASSWORD)
    # A second import reuses the account.
    await imports.import_examples(
        platform, Actor.system(), task_code="sentiment", format="sst", path=fixture_file(tmp_path, "sst")
    )
    async with platform.db.session() as s:
        assert await s.scalar(select(func.count()).select_from(User).where(User.username == "importer")) == 1


async def test_a_person_called_importer_is_never_made_the_author(platform, tmp_path):
    await add_user(platform, "importer")
    with pytest.raises(Forbidden, match="belongs to a person"):
        await imports.import_examples(
            platform, Actor.system(), task_code="sentiment", format="sst", path=fixture_file(tmp_path, "sst")
        )
    assert await example_count(platform) == 0


# --------------------------------------------------------------------------- the CLI


@pytest.fixture
def fresh_url(db_url, tmp_path):
    """A database of its own: the CLI opens its own connections, outside the test's transaction."""
    if db_url.startswith("sqlite"):
        yield f"sqlite+aiosqlite:///{tmp_path}/cli.db"
        return
    name = f"dynaforge_import_{uuid.uuid4().hex[:8]}"
    asyncio.run(pg_execute(f'CREATE DATABASE "{name}"'))
    try:
        yield asyncpg_url(name)
    finally:
        asyncio.run(pg_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def _count_examples(url: str) -> int:
    database = Database(url)
    try:
        async with database.session() as s:
            return await s.scalar(select(func.count()).select_from(Example))
    finally:
        await database.dispose()


def test_cli_import(fresh_url, tmp_path, monkeypatch):
    monkeypatch.setenv("DYNAFORGE_LOAD_PLUGINS", "sentiment,nli")
    monkeypatch.setenv("DYNAFORGE_INFERENCE", "inline")
    runner = CliRunner()
    result = runner.invoke(cli.main, ["db", "upgrade", "--database-url", fresh_url])
    assert result.exit_code == 0, result.output

    path = fixture_file(tmp_path, "sst")
    result = runner.invoke(
        cli.main, ["import", "--task", "sentiment", "--format", "sst", str(path), "--database-url", fresh_url]
    )
    assert result.exit_code == 0, result.output
    assert "imported 3 examples into round 1 of sentiment (format sst, author importer)" in result.output
    assert "skipped 1: phrase fragment shorter than the 3 characters a statement needs" in result.output

    result = runner.invoke(
        cli.main, ["import", "--task", "sentiment", "--format", "anli", str(path), "--database-url", fresh_url]
    )
    assert result.exit_code == 1
    assert (
        "importer 'anli' reads data for task nli, not sentiment; the importers for task sentiment are: jsonl, sst"
        in result.output
    )
    result = runner.invoke(
        cli.main, ["import", "--task", "nli", "--format", "nope", str(path), "--database-url", fresh_url]
    )
    assert result.exit_code == 1 and "the importers for task nli are: anli, jsonl" in result.output

    bad = tmp_path / "bad.tsv"
    bad.write_text("sentence\tlabel\nfine words here\t1\nno label\nanother one\t5\n", encoding="utf-8")
    result = runner.invoke(
        cli.main, ["import", "--task", "sentiment", "--format", "sst", str(bad), "--database-url", fresh_url]
    )
    assert result.exit_code == 1
    assert "Nothing was imported; fix these records and import the file again:" in result.output
    assert "  line 3: expected 'sentence<TAB>0' or 'sentence<TAB>1'" in result.output
    assert "  line 4: expected" in result.output

    result = runner.invoke(
        cli.main,
        ["import", "--task", "sentiment", "--format", "sst", str(path), "--round", "3", "--database-url", fresh_url],
    )
    assert result.exit_code == 1 and "no round 3" in result.output
    result = runner.invoke(
        cli.main,
        ["import", "--task", "sentiment", "--format", "sst", str(path), "--user", "ghost", "--database-url", fresh_url],
    )
    assert result.exit_code == 1 and "No user named 'ghost'" in result.output
    assert asyncio.run(_count_examples(fresh_url)) == 3


# --------------------------------------------------------------------------- the real data sets


def _real(relative: str) -> Path:
    return real_data(relative)


def _expected_anli(path: Path) -> tuple[int, int, int]:
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return len(rows), 0, sum(r["adversary_pred"].strip() != r["gold_label"].strip() for r in rows)


def _expected_squad(path: Path) -> tuple[int, int, int]:
    data = json.loads(path.read_text(encoding="utf-8"))
    questions = [q for a in data["data"] for p in a["paragraphs"] for q in p["qas"]]
    unanswerable = sum(bool(q.get("is_impossible")) or not q.get("answers") for q in questions)
    return len(questions) - unanswerable, unanswerable, 0


def _expected_sst(path: Path) -> tuple[int, int, int]:
    lines = [line for line in path.read_text(encoding="utf-8").split("\n")[1:] if line.strip()]
    fragments = sum(len(line.rsplit("\t", 1)[0].strip()) < 3 for line in lines)
    return len(lines) - fragments, fragments, 0


def _expected_davidson(path: Path) -> tuple[int, int, int]:
    with open(path, encoding="utf-8", newline="") as fh:
        return sum(1 for _ in csv.DictReader(fh)), 0, 0


REAL = [
    ("nli", "anli", "nli/anli_r1_dev_annotated.csv", _expected_anli),
    ("qa", "squad", "qa/squad_v2_dev_sample.json", _expected_squad),
    ("sentiment", "sst", "sentiment/sst2_dev.tsv", _expected_sst),
    ("sentiment", "sst", "sentiment/sst2_train.tsv", _expected_sst),
    ("hatespeech", "davidson", "hatespeech/davidson_2017.csv", _expected_davidson),
]


@pytest.mark.parametrize(("code", "fmt", "relative", "expected"), REAL, ids=[r[2].split("/")[1] for r in REAL])
async def test_real_data_set_imports_with_the_row_count_the_file_implies(platform, code, fmt, relative, expected):
    path = _real(relative)
    count, skipped, fooled = expected(path)
    report = await imports.import_examples(platform, Actor.system(), task_code=code, format=fmt, path=path)
    assert (report.count, report.skipped_count) == (count, skipped)
    async with platform.db.session() as s:
        task_id = await s.scalar(select(TaskRow.id).where(TaskRow.code == code))
        where = Example.task_id == task_id
        assert await s.scalar(select(func.count()).select_from(Example).where(where)) == count
        assert (
            await s.scalar(select(func.count()).select_from(Example).where(where, Example.fooled.is_(True))) == fooled
        )
        assert (
            await s.scalar(
                select(func.count()).select_from(Example).where(where, Example.status != ExampleStatus.ACCEPTED)
            )
            == 0
        )
    await assert_counters_match_recount(platform)
