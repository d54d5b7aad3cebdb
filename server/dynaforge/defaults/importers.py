"""The core importer ``jsonl``: Dynaforge's own export, one JSON object per line, for any task.

Each line is an example as exported by Dynaforge (format ``dynaforge.example/2``; version 1, whose ids were row
numbers, reads alike)::

    {"format": "dynaforge.example/2", "id": "RXhhbXBsZToxMg", "task": "nli", "round": 1, "status": "ACCEPTED",
     "fields": {...}, "tag": null, "context_id": null, "fooled": true, "prediction": {...},
     "model_predictions": [...], "author": "3f2a...", "time_taken_ms": 1200, "created_at": "...",
     "votes": {"correct": 2, "incorrect": 0, "flagged": 0}, "flag_reason": null, "validations": [...]}

The import keeps the status, ``fooled``, the prediction and each model's prediction, the tag, the time taken, the
vote counts and the flag reason. It does not keep the id, round, author, context id or creation time (the import
service decides the round and the author; the context is in ``fields``), nor the validation rows, whose authors are
pseudonyms on the exporting server: their counts survive as the votes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dynaforge.adversaries.base import SOURCES
from dynaforge.files import json_object
from dynaforge.hookspecs import hookimpl
from dynaforge.importers import ImportedExample, Importer, row_error, text_lines
from dynaforge.tasks.base import Task

FORMAT = "dynaforge.example/2"
#: The versions read: 2 (the API's global ids) and 1 (row numbers); the importer reads neither id.
FORMATS = (FORMAT, "dynaforge.example/1")
VOTES = ("correct", "incorrect", "flagged")
EXAMPLE = f'{{"format": "{FORMAT}", "fields": {{...}}, "status": "ACCEPTED", ...}}'


def _optional(record: dict[str, Any], key: str, types: tuple[type, ...], what: str, problems: list[str]) -> Any:
    """``record[key]`` when it is None, absent or of one of ``types`` (booleans are not numbers); else a problem."""
    value = record.get(key)
    if value is None:
        return None
    if isinstance(value, bool) and bool not in types or not isinstance(value, types):
        problems.append(f"{key} must be {what} or null, got {json.dumps(value)[:60]}")
        return None
    return value


class JsonlImporter(Importer):
    """Dynaforge's own JSONL export (``dynaforge.example/2``, or version 1), for any task."""

    name = "jsonl"
    task_code = None
    description = "Dynaforge's own export: one JSON object per line (format dynaforge.example/2 or /1), any task."

    def records(self, path: Path) -> Iterator[tuple[str, Any]]:
        return text_lines(path)

    def convert(self, record: str, location: str, task: Task) -> ImportedExample:
        data = json_object(location, record, example=EXAMPLE, not_an_object="json")
        if data.get("format") not in FORMATS:
            raise row_error(
                location,
                "format",
                f"has format {json.dumps(data.get('format'))}, not {FORMAT!r}: export the examples from Dynaforge "
                "or write each line in that format",
            )
        if data.get("task") not in (None, task.code):
            raise row_error(
                location,
                "task",
                f"is an example of task {data['task']!r}, not {task.code!r}: import it into {data['task']!r}",
            )
        problems: list[str] = []
        fields = data.get("fields")
        if not isinstance(fields, dict):
            problems.append("fields must be an object of the task's field values")
        status = data.get("status")
        if not isinstance(status, str):
            problems.append("status must be a string such as ACCEPTED")
        fooled = _optional(data, "fooled", (bool,), "true, false", problems)
        prediction = _optional(data, "prediction", (dict,), "an object", problems)
        model_predictions = _optional(data, "model_predictions", (list,), "a list", problems) or []
        tag = _optional(data, "tag", (str,), "a string", problems)
        flag_reason = _optional(data, "flag_reason", (str,), "a string", problems)
        time_taken_ms = _optional(data, "time_taken_ms", (int,), "a whole number of milliseconds", problems)
        source = _optional(data, "source", (str,), "HUMAN, ASSISTED or MACHINE", problems) or "HUMAN"
        if source not in SOURCES:
            problems.append(f"source must be one of {', '.join(SOURCES)}, got {json.dumps(source)[:30]}")
        adversary = _optional(data, "adversary", (str,), "an adversary's name", problems)
        if adversary is not None and len(adversary) > 60:
            problems.append("adversary must have at most 60 characters")
        votes = _optional(data, "votes", (dict,), "an object", problems) or {}
        counts = {}
        for key in VOTES:
            value = votes.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                problems.append(f"votes.{key} must be a whole number of at least 0, got {json.dumps(value)[:30]}")
            else:
                counts[key] = value
        if problems or not isinstance(fields, dict) or not isinstance(status, str):
            raise row_error(location, "format", "; ".join(problems))
        return ImportedExample(
            fields=fields,
            location=location,
            tag=tag,
            status=status,
            fooled=fooled,
            prediction=prediction,
            model_predictions=model_predictions,
            votes_correct=counts["correct"],
            votes_incorrect=counts["incorrect"],
            votes_flagged=counts["flagged"],
            flag_reason=flag_reason,
            time_taken_ms=time_taken_ms,
            source=source,
            adversary=adversary if source != "HUMAN" else None,
        )


@hookimpl(trylast=True)
def register_importers(register):
    register(JsonlImporter())
