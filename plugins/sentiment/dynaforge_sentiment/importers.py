"""The ``sst`` importer: SST-2-style TSV files into examples of the sentiment task.

The file is the one ``dynaforge train sentiment`` reads (:mod:`dynaforge_sentiment.train`): a header
``sentence<TAB>label``, then one phrase per line with its label, 0 (negative) or 1 (positive). Each phrase becomes
a statement with the label ``negative`` or ``positive``; SST-2 has no neutral label and records no model in the
loop, so ``fooled`` stays unknown. SST-2 also holds phrase fragments of a character or two, shorter than any
statement the task accepts: those are skipped and counted in the import report.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dynaforge import ImportedExample, Importer, SkippedRow, Task, TextField
from dynaforge.importers import row_error, text_lines
from dynaforge_sentiment.train import HEADER, TRAIN_FILE

LABELS = {"0": "negative", "1": "positive"}


class SSTImporter(Importer):
    """SST-2-style TSV: ``sentence<TAB>label`` with 0 = negative, 1 = positive."""

    name = "sst"
    task_code = "sentiment"
    description = (
        f"SST-2-style TSV (like {TRAIN_FILE}): header sentence<TAB>label, labels 0 (negative) and 1 (positive)."
    )

    def records(self, path: Path) -> Iterator[tuple[str, Any]]:
        lines = text_lines(path)
        first = next(lines, None)
        header = tuple(first[1].split("\t")) if first else ()
        if header != HEADER:
            where = first[0] if first else "file"
            expected, got = "<TAB>".join(HEADER), "<TAB>".join(header) or "nothing"
            raise row_error(where, "header", f"must be the header {expected}, got {got}")
        yield from lines

    def convert(self, record: str, location: str, task: Task) -> ImportedExample | SkippedRow:
        parts = record.rsplit("\t", 1)
        code = parts[1].strip() if len(parts) == 2 else None
        if code not in LABELS:
            raise row_error(location, "format", "expected 'sentence<TAB>0' or 'sentence<TAB>1'")
        label = LABELS[code]
        if label not in task.labels:
            labels = ", ".join(task.labels)
            raise row_error(location, "label", f"label {label!r} is not one of the task's labels ({labels})")
        sentence = parts[0].strip()
        statement = next((f for f in task.fields if f.name == "statement"), None)
        if isinstance(statement, TextField) and sentence and len(sentence) < statement.min_length:
            return SkippedRow(
                location, f"phrase fragment shorter than the {statement.min_length} characters a statement needs"
            )
        return ImportedExample(fields={"statement": sentence, "label": label}, location=location)
