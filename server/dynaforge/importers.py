"""Importers: read an existing data set from a file into examples of a task.

An :class:`Importer` is registered by a plugin (hook ``register_importers``) under a unique ``name``, the name
``dynaforge import --format NAME`` uses. It turns each record of a file into an :class:`ImportedExample` (all the
task's fields, context fields included, plus what the data set knows about the model and its validators), or
into a :class:`SkippedRow` when the record is fine but cannot become an example of the task (say, an unanswerable
question for a task whose answer is a span). The import service (``dynaforge.services.imports``) validates every
example with the task before it writes anything, and writes all of them or none.

Most importers implement two methods: :meth:`Importer.records` splits the file into raw records, each with its
location ("line 12"), and :meth:`Importer.convert` turns one record into an example, raising
:class:`~dynaforge.errors.InvalidInput` whose field is the location when the record cannot be read. The import
service then reports every unreadable record of a file at once. An importer may instead override
:meth:`Importer.read` as one generator; reading then stops at its first error.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dynaforge.errors import FieldError, InvalidInput
from dynaforge.tasks.base import Task

#: The status an imported example gets unless its importer says otherwise: an external data set was checked by
#: its authors, so its examples arrive validated.
DEFAULT_STATUS = "ACCEPTED"


@dataclass
class ImportedExample:
    """One example read from a data set, before the task has validated it.

    ``fields`` holds every field of the task the record gives a value for, context fields included (an imported
    example has no stored context row; its context is kept in its fields, as for an example written without one).
    ``location`` says where the record sits in its file ("line 12", "data[0].paragraphs[3].qas[1]") and starts
    every error message about it. ``fooled`` is None when the data set does not say whether the model in its loop
    was fooled; ``prediction`` and ``model_predictions`` are what that model answered, when the data set records
    it. The vote counts say how many validators found the example correct, incorrect or flagged it.
    """

    fields: dict[str, Any]
    location: str
    tag: str | None = None
    status: str = DEFAULT_STATUS
    fooled: bool | None = None
    prediction: dict[str, Any] | None = None
    model_predictions: list[dict[str, Any]] = field(default_factory=list)
    votes_correct: int = 0
    votes_incorrect: int = 0
    votes_flagged: int = 0
    flag_reason: str | None = None
    time_taken_ms: int | None = None


@dataclass(frozen=True)
class SkippedRow:
    """A readable record that cannot become an example of the task; ``reason`` is counted in the import report,
    so records skipped for the same reason should share its wording."""

    location: str
    reason: str


def row_error(location: str, rule: str, message: str) -> InvalidInput:
    """The error for one unreadable record: its field is the record's location, e.g. ``line 7``."""
    return InvalidInput.from_errors([FieldError(location, rule, message)])


class Importer:
    """Reads one file format into examples of a task (``task_code``), or of any task when ``task_code`` is None.

    Subclasses set ``name`` (unique across plugins, what ``--format`` names), ``task_code`` and ``description``,
    and implement :meth:`records` and :meth:`convert` (or override :meth:`read`).
    """

    name: str = ""
    task_code: str | None = None
    description: str = ""

    def supports(self, task: Task) -> bool:
        """Whether this importer can read data for ``task``."""
        return self.task_code is None or self.task_code == task.code

    def records(self, path: Path) -> Iterator[tuple[str, Any]]:
        """Stream ``(location, raw record)`` pairs from the file.

        Raise :class:`InvalidInput` when the file as a whole cannot be read (wrong header, not the expected
        format): its field should be ``file`` (or the location where reading had to stop). A record that is
        unreadable on its own may be yielded as ``(location, InvalidInput)`` instead, and reading goes on.
        """
        raise NotImplementedError(f"importer {self.name!r} implements neither records() nor read()")

    def convert(self, record: Any, location: str, task: Task) -> ImportedExample | SkippedRow:
        """Turn one raw record into an example (or a skipped row); raise :func:`row_error` when it is unreadable."""
        raise NotImplementedError(f"importer {self.name!r} implements neither convert() nor read()")

    def read(self, path: Path, task: Task) -> Iterator[ImportedExample | SkippedRow]:
        """Stream the examples of the file at ``path`` for ``task``.

        Raises :class:`InvalidInput` (whose field is the location, e.g. ``line 7``) at the first unreadable record.
        """
        for location, record in self.records(path):
            if isinstance(record, InvalidInput):
                raise record
            yield self.convert(record, location, task)

    def scan(self, path: Path, task: Task) -> Iterator[ImportedExample | SkippedRow | InvalidInput]:
        """Like :meth:`read`, but an unreadable record is yielded as its error and reading goes on, so that a bad
        file is reported in one go. Only errors of the file as a whole (or an overridden :meth:`read`) stop it."""
        if type(self).read is not Importer.read:
            try:
                yield from self.read(path, task)
            except InvalidInput as exc:
                yield exc
            return
        try:
            for location, record in self.records(path):
                if isinstance(record, InvalidInput):
                    yield record
                    continue
                try:
                    yield self.convert(record, location, task)
                except InvalidInput as exc:
                    yield exc
        except InvalidInput as exc:
            yield exc

    def __repr__(self) -> str:
        return f"<Importer {self.name!r} for {self.task_code or 'any task'}>"


# --------------------------------------------------------------------------- helpers for importers


def csv_records(
    path: Path, required: Iterable[str], *, delimiter: str = ",", what: str = "file"
) -> Iterator[tuple[str, dict[str, str]]]:
    """Stream ``("line N", row)`` pairs from a CSV file with a header, N being the line where the row starts; a row
    with more values than the header yields an :class:`InvalidInput` as its record (see :meth:`Importer.records`).

    Raises :class:`InvalidInput` when a ``required`` column is missing (``what`` names the expected format in the
    message), and stops with one where the file is not CSV or not UTF-8.
    """
    with open(path, encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh, delimiter=delimiter)
        try:
            header = reader.fieldnames or []
            missing = sorted(set(required) - set(header))
            if missing:
                raise row_error(
                    "file",
                    "header",
                    f"has no column {', '.join(missing)} (its header is {', '.join(header) or 'empty'}); "
                    f"expected {what}",
                )
            start = reader.line_num + 1
            for row in reader:
                if None in row:
                    problem = f"has more values than the header has columns ({len(header)})"
                    yield f"line {start}", row_error(f"line {start}", "columns", problem)
                else:
                    yield f"line {start}", row
                start = reader.line_num + 1
        except csv.Error as exc:
            where = f"line {reader.line_num}"
            raise row_error(where, "csv", f"is not valid CSV ({exc}); reading stopped there") from exc
        except UnicodeDecodeError as exc:  # decoded in blocks: the bad byte is somewhere after the last good line
            raise row_error(
                "file",
                "encoding",
                f"is not UTF-8 text ({exc.reason}) after line {reader.line_num}; save it as UTF-8 and import it again",
            ) from exc


def text_lines(path: Path) -> Iterator[tuple[str, str]]:
    """Stream ``("line N", text)`` pairs of a UTF-8 text file, without line endings; blank lines are left out.

    Stops with an :class:`InvalidInput` at a line that is not UTF-8.
    """
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise row_error(
                    f"line {number}",
                    "encoding",
                    f"is not UTF-8 text ({exc.reason}); save the file as UTF-8 and import it again",
                ) from exc
            if number == 1:
                text = text.removeprefix("\ufeff")
            text = text.rstrip("\r\n")
            if text.strip():
                yield f"line {number}", text
