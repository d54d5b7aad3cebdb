"""The ``anli`` importer: ANLI-style CSV files into examples of the nli task.

The file needs the columns ``context`` (the premise), ``statement`` (the hypothesis) and ``gold_label`` (``e``,
``n``, ``c`` or the label names), the same ones ``dynaforge train nli`` reads (:mod:`dynaforge_nli.train`). Two
optional columns are kept when present: ``reason`` (the annotator's explanation) becomes the task's ``reason``
field, and ``adversary_pred`` (the label the model in the loop predicted when the example was written) becomes the
example's prediction, so ``fooled`` says whether the annotator fooled that model. Without ``adversary_pred``,
``fooled`` stays unknown. Other columns (later models' predictions, tags) are ignored.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dynaforge import ImportedExample, Importer, Task
from dynaforge.importers import csv_records, row_error
from dynaforge_nli.train import DATA_FILE, LABEL_CODES

REQUIRED_COLUMNS = ("context", "statement", "gold_label")
ADVERSARY = "adversary"  # the model name under which the data set's model-in-the-loop prediction is stored


class ANLIImporter(Importer):
    """ANLI-style CSV: context, statement, gold_label (e/n/c), optionally reason and adversary_pred."""

    name = "anli"
    task_code = "nli"
    description = (
        f"ANLI-style CSV (like {DATA_FILE}): context, statement, gold_label (e, n, c), optional reason and "
        "adversary_pred (the in-the-loop model's label, which decides fooled)."
    )

    def records(self, path: Path) -> Iterator[tuple[str, Any]]:
        return csv_records(path, REQUIRED_COLUMNS, what="an ANLI-style CSV with columns context, statement, gold_label")

    @staticmethod
    def label(value: str | None, task: Task, column: str, location: str) -> str:
        """A task label from a letter (``e``) or a name (``Entailment``); an error names the bad value."""
        text = (value or "").strip().lower()
        label = LABEL_CODES.get(text, text)
        if label not in task.labels:
            letters = ", ".join(LABEL_CODES)
            raise row_error(
                location,
                "label",
                f"{column} must be one of {letters} or {', '.join(task.labels)}; got {value!r}",
            )
        return label

    def convert(self, record: dict[str, str], location: str, task: Task) -> ImportedExample:
        gold = self.label(record["gold_label"], task, "gold_label", location)
        fields: dict[str, Any] = {"premise": record["context"], "hypothesis": record["statement"], "label": gold}
        reason = (record.get("reason") or "").strip()
        if reason and any(f.name == "reason" for f in task.fields):
            fields["reason"] = reason
        adversary = (record.get("adversary_pred") or "").strip()
        if not adversary:
            return ImportedExample(fields=fields, location=location)
        predicted = self.label(adversary, task, "adversary_pred", location)
        prediction = {"label": predicted}
        fooled = bool(task.is_fooled(fields, prediction, {"premise": fields["premise"]}))
        return ImportedExample(
            fields=fields,
            location=location,
            fooled=fooled,
            prediction=prediction,
            model_predictions=[{"model": ADVERSARY, "prediction": dict(prediction), "fooled": fooled}],
        )
