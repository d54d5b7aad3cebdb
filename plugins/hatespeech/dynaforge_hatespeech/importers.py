"""The ``davidson`` importer: Davidson et al. (2017)-style CSV files into examples of the hatespeech task.

The file is the one ``dynaforge train hatespeech`` reads (:mod:`dynaforge_hatespeech.train`): columns ``tweet``
and ``class`` (0 hate speech, 1 offensive language, 2 neither), mapped as for training: class 0 is ``hateful``,
classes 1 and 2 are ``not_hateful``. Each tweet is stored as the model reads it (:func:`normalise`: HTML entities
decoded, links and user mentions replaced by ``http`` and ``@user``, so no account name is stored).

The metadata fields the task has are filled where the data set says something: ``type`` is ``none`` for a
statement that is not hateful (the data set does not say which kind of hate a hateful one is, nor whom it targets).
When the file has the annotator columns ``count``, ``hate_speech``, ``offensive_language`` and ``neither``, they
become the example's votes: the annotators whose class maps to the example's label found it correct, the others
incorrect. The data set records no model in the loop, so ``fooled`` stays unknown.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dynaforge import ChoiceField, ImportedExample, Importer, Task
from dynaforge.importers import csv_records, row_error
from dynaforge_hatespeech.model import normalise
from dynaforge_hatespeech.train import CLASSES, DATA_FILE, HATEFUL_CLASS

HATEFUL, NOT_HATEFUL = "hateful", "not_hateful"
VOTE_COLUMNS = ("count", "hate_speech", "offensive_language", "neither")


class DavidsonImporter(Importer):
    """Davidson et al. (2017)-style CSV: tweet, class (0 hate speech, 1 offensive, 2 neither), optional votes."""

    name = "davidson"
    task_code = "hatespeech"
    description = (
        f"Davidson et al. (2017)-style CSV (like {DATA_FILE}): tweet and class; class 0 is hateful, 1 (offensive) "
        "and 2 (neither) are not_hateful; annotator counts become votes."
    )

    def records(self, path: Path) -> Iterator[tuple[str, Any]]:
        return csv_records(path, ("class", "tweet"), what="a Davidson-style CSV with columns class and tweet")

    def convert(self, record: dict[str, str], location: str, task: Task) -> ImportedExample:
        cls = (record["class"] or "").strip()
        if cls not in CLASSES:
            raise row_error(location, "label", f"class must be one of {', '.join(CLASSES)}; got {record['class']!r}")
        label = HATEFUL if cls == HATEFUL_CLASS else NOT_HATEFUL
        fields: dict[str, Any] = {"statement": normalise(record["tweet"] or ""), "label": label}
        kind = next((f for f in task.fields if f.name == "type"), None)
        if label == NOT_HATEFUL and isinstance(kind, ChoiceField) and "none" in kind.options(task):
            fields["type"] = "none"
        correct, incorrect = self.votes(record, label, location)
        return ImportedExample(fields=fields, location=location, votes_correct=correct, votes_incorrect=incorrect)

    @staticmethod
    def votes(record: dict[str, str], label: str, location: str) -> tuple[int, int]:
        """(agreeing, disagreeing) annotators from the vote columns, or (0, 0) when the file has none of them."""
        raw = {c: record.get(c) for c in VOTE_COLUMNS}
        if all(v is None or not v.strip() for v in raw.values()):
            return 0, 0
        counts = {}
        for column, value in raw.items():
            text = (value or "").strip()
            if not text.isdigit():
                raise row_error(location, "votes", f"{column} must be a whole number of annotators; got {value!r}")
            counts[column] = int(text)
        agreeing = counts["hate_speech"] if label == HATEFUL else counts["offensive_language"] + counts["neither"]
        if counts["hate_speech"] + counts["offensive_language"] + counts["neither"] != counts["count"]:
            raise row_error(
                location,
                "votes",
                f"count ({counts['count']}) must equal hate_speech + offensive_language + neither",
            )
        return agreeing, counts["count"] - agreeing
