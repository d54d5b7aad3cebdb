"""The ``squad`` importer: SQuAD-format JSON (1.1 or 2.0) into examples of the qa task.

One example per question: the paragraph's ``context`` is the passage, ``question`` the question, and the question's
first answer (``text`` at ``answer_start``) the answer span. The qa task has no way to say "the passage does not
answer this" (its answer is a required span of the passage), so SQuAD 2.0's unanswerable questions
(``is_impossible``, or no answer at all) cannot be represented: they are skipped and counted in the import report.
An answer whose text does not sit at its offset is an error of that question. SQuAD records no model in the loop,
so ``fooled`` stays unknown. It is the format ``dynaforge train qa`` trains on (:mod:`dynaforge_qa.train`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dynaforge import ImportedExample, Importer, SkippedRow, Task
from dynaforge.importers import row_error
from dynaforge_qa.train import DATA_FILE

UNANSWERABLE = "unanswerable question: the qa task needs an answer span in the passage"


class SquadImporter(Importer):
    """SQuAD 1.1/2.0 JSON: one example per answerable question, the first answer as the span."""

    name = "squad"
    task_code = "qa"
    description = (
        f"SQuAD-format JSON (like {DATA_FILE}): one example per question, its first answer as the span; "
        "unanswerable questions are skipped and counted."
    )

    def records(self, path: Path) -> Iterator[tuple[str, Any]]:
        try:
            with open(path, encoding="utf-8-sig") as fh:
                data = json.load(fh)
        except UnicodeDecodeError as exc:
            raise row_error("file", "encoding", f"is not UTF-8 text ({exc.reason}); save it as UTF-8") from exc
        except json.JSONDecodeError as exc:
            problem = f"is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
            raise row_error("file", "json", problem) from exc
        if not isinstance(data, dict) or not isinstance(data.get("data"), list):
            raise row_error("file", "format", "expected SQuAD format: an object with a 'data' list of articles")
        for a, article in enumerate(data["data"]):
            paragraphs = article.get("paragraphs") if isinstance(article, dict) else None
            if not isinstance(paragraphs, list):
                yield f"data[{a}]", row_error(f"data[{a}]", "format", "must be an object with a 'paragraphs' list")
                continue
            for p, paragraph in enumerate(paragraphs):
                where = f"data[{a}].paragraphs[{p}]"
                if (
                    not isinstance(paragraph, dict)
                    or not isinstance(paragraph.get("context"), str)
                    or not isinstance(paragraph.get("qas"), list)
                ):
                    problem = "must be an object with a 'context' string and a 'qas' list"
                    yield where, row_error(where, "format", problem)
                    continue
                for q, qa in enumerate(paragraph["qas"]):
                    yield f"{where}.qas[{q}]", (paragraph["context"], qa)

    def convert(self, record: tuple[str, Any], location: str, task: Task) -> ImportedExample | SkippedRow:
        passage, qa = record
        if not isinstance(qa, dict) or not isinstance(qa.get("question"), str):
            raise row_error(location, "format", "must be an object with a 'question' string")
        answers = qa.get("answers")
        if answers is not None and not isinstance(answers, list):
            raise row_error(location, "format", "answers must be a list")
        if qa.get("is_impossible") or not answers:
            return SkippedRow(location, UNANSWERABLE)
        first = answers[0]
        if (
            not isinstance(first, dict)
            or not isinstance(first.get("text"), str)
            or not isinstance(first.get("answer_start"), int)
        ):
            raise row_error(location, "format", "answers[0] must have a 'text' string and an 'answer_start' integer")
        fields = {
            "passage": passage,
            "question": qa["question"],
            "answer": {"text": first["text"], "start": first["answer_start"]},
        }
        return ImportedExample(fields=fields, location=location)
