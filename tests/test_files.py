"""The one reader of uploaded and imported files (dynaforge/files.py): lines, JSONL, CSV, and problems reported
by line and field, capped, as one InvalidInput."""

from __future__ import annotations

import io

import pytest

from dynaforge import files
from dynaforge.errors import FieldError, InvalidInput
from dynaforge.importers import csv_records, row_error, text_lines


def test_problems_name_line_and_field_and_count_what_is_not_listed():
    problems = files.Problems(limit=3)
    assert not problems
    problems.add(2, "passage", "min_length", "is too short")
    problems.add(2, None, "text", "contains a NUL character")
    problems.extend([FieldError("label", "choice", "must be good or bad")], under="line 5")
    problems.extend([FieldError("data[0].qas[1]", "format", "answers must be a list")])  # an importer's own
    problems.add(9, None, "json", "is not valid JSON")
    assert (problems.count, problems.records) == (5, 4)
    error = problems.error()
    assert [(e.field, e.rule) for e in error.field_errors] == [
        ("line 2.passage", "min_length"),
        ("line 2", "text"),
        ("line 5.label", "choice"),
        ("file", "more_errors"),
    ]
    assert error.field_errors[-1].message == (
        "and 2 more problems not listed (4 records have problems in all); fix these and upload again to see them"
    )
    assert error.message.startswith("Invalid input: line 2.passage: is too short; line 2: contains")
    with pytest.raises(InvalidInput, match=r"^Nothing was added: the file has 5 problems \(first: line 2.passage"):
        problems.raise_if_any(files.nothing_added("the file"))
    files.Problems().raise_if_any()  # none: nothing raised


def test_lines_drop_a_byte_order_mark_and_refuse_a_file_past_its_size():
    content = b"\xef\xbb\xbffirst\r\n\nthird"
    assert list(files.numbered_lines(io.BytesIO(content))) == [(1, b"first\r\n"), (2, b"\n"), (3, b"third")]
    with pytest.raises(InvalidInput, match="is larger than 10 bytes") as caught:
        list(files.numbered_lines(io.BytesIO(content), max_bytes=10))
    assert caught.value.field_errors[0].field == "file"


def test_text_lines_stop_at_the_first_line_that_is_not_utf8(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_bytes(b"sentence\tlabel\n\n  \nfine\t1\ncaf\xe9\t0\nnever read\t1\n")
    lines = text_lines(path)
    assert [next(lines), next(lines)] == [("line 1", "sentence\tlabel"), ("line 4", "fine\t1")]
    with pytest.raises(InvalidInput) as caught:
        next(lines)
    [error] = caught.value.field_errors
    assert (error.field, error.rule) == ("line 5", "encoding")
    assert "byte 4 of the line" in error.message and "save it as UTF-8" in error.message


def test_jsonl_objects_report_every_bad_line_and_go_on():
    problems = files.Problems()
    lines = files.numbered_lines(io.BytesIO(b'{"a": 1}\n\n[1]\n{broken\n\xff\n{"b": 2}\n'))
    assert list(files.jsonl_objects(lines, problems, '{"a": 0}')) == [
        (1, {"a": 1}),
        (3, None),
        (4, None),
        (5, None),
        (6, {"b": 2}),
    ]
    assert [(e.field, e.rule) for e in problems.errors()] == [
        ("line 3", "type"),
        ("line 4", "json"),
        ("line 5", "encoding"),
    ]
    assert 'must be a JSON object such as {"a": 0}' in problems.listed[0].message
    assert "write one object per line" in problems.listed[1].message


def test_read_jsonl_refuses_text_no_database_stores():
    with pytest.raises(InvalidInput) as caught:
        files.read_jsonl(io.BytesIO(b'{"text": "a\\u0000b"}\n'), max_bytes=1000, example="{}")
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("line 1", "text")]


def test_csv_rows_start_where_a_record_starts_and_skip_blank_rows():
    content = b'\n\nname,text\n"two\nlines",x\n , \nlast,y\n'
    problems = files.Problems()
    rows = files.CsvRows(files.numbered_lines(io.BytesIO(content)), problems)
    assert rows.header() == (3, ["name", "text"])
    assert list(rows) == [(4, ["two\nlines", "x"]), (7, ["last", "y"])]
    assert not problems


def test_csv_rows_collect_encoding_problems_and_keep_the_lines_after():
    problems = files.Problems()
    rows = files.CsvRows(files.numbered_lines(io.BytesIO(b"a,b\ncaf\xe9,1\nok,2\n")), problems)
    rows.header()
    assert [number for number, _ in rows] == [2, 3]
    assert [(e.field, e.rule) for e in problems.listed] == [("line 2", "encoding")]


def test_csv_records_for_importers(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("\ufeffclass,tweet\n2,a tweet\n1,too,many\n0\n", encoding="utf-8")
    got = list(csv_records(path, ("class", "tweet")))
    assert got[0] == ("line 2", {"class": "2", "tweet": "a tweet"})
    assert got[1][0] == "line 3" and isinstance(got[1][1], InvalidInput)
    assert got[1][1].field_errors[0].rule == "columns"
    assert got[2] == ("line 4", {"class": "0", "tweet": None})
    with pytest.raises(InvalidInput, match="has no column label .*expected a labelled CSV") as caught:
        list(csv_records(path, ("class", "label"), what="a labelled CSV"))
    assert caught.value.field_errors[0].field == "file"


def test_row_error_is_the_one_of_dynaforge_files():
    assert row_error is files.row_error
    error = row_error("line 7", "label", "must be F or I")
    assert error.field_errors == [FieldError("line 7", "label", "must be F or I")]


async def test_submit_predictions_lists_the_first_problems_and_counts_the_rest(platform):
    from dynaforge.db.models import DatasetAccess
    from dynaforge.services import auth, datasets, submissions, tasks
    from dynaforge.services.actor import Actor

    user = await auth.create_user(
        platform, Actor.system(), username="owner9", email="o9@example.org", password="long enough pw"
    )
    owner = Actor(user.id, user.username, False)
    await tasks.grant_ownership(platform, Actor.system(), "toy", owner.user_id)
    records = [(f"line {i}", {"text": f"item {i}", "label": "good"}) for i in range(60)]
    await datasets.create_dataset(platform, owner, "toy", "held", records, access=DatasetAccess.STANDARD)
    with pytest.raises(InvalidInput) as caught:
        await submissions.submit_predictions(
            platform, owner, task_code="toy", name="m", dataset_name="held", predictions=["bad"] * 60
        )
    errors = caught.value.field_errors
    assert len(errors) == files.MAX_REPORTED + 1 and errors[0].field == "predictions[0]"
    assert (errors[-1].field, errors[-1].rule) == ("predictions", "more_errors") and "10 more" in errors[-1].message


def test_a_data_sets_file_is_reported_in_one_go(platform, tmp_path):
    """``dynaforge datasets import`` reads through services.imports.records_of: every unreadable record at once."""
    import json

    from dynaforge.services import imports

    good = {
        "format": "dynaforge.example/1",
        "task": "toy",
        "status": "ACCEPTED",
        "fields": {"text": "a", "label": "good"},
    }
    path = tmp_path / "set.jsonl"
    path.write_text("\n".join([json.dumps(good), "{broken", json.dumps(good), "[1]"]) + "\n", encoding="utf-8")
    task = platform.plugins.task("toy")
    importer = imports.choose_importer(platform, task, "jsonl")
    with pytest.raises(InvalidInput) as caught:
        imports.records_of(importer, path, task)
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("line 2", "json"), ("line 4", "json")]
    path.write_text(json.dumps(good) + "\n", encoding="utf-8")
    assert imports.records_of(importer, path, task) == [("line 1", {"text": "a", "label": "good"})]
