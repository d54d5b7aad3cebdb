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

``csv_records``, ``text_lines`` and ``row_error`` help importers read files the way every uploaded file is read
(:mod:`dynaforge.files`): records named by the line they start on, problems by location.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dynaforge.errors import InvalidInput
from dynaforge.files import csv_records as csv_records
from dynaforge.files import row_error as row_error
from dynaforge.files import text_lines as text_lines
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
    source: str = "HUMAN"  #: HUMAN, ASSISTED or MACHINE (dynaforge.adversaries.SOURCES)
    adversary: str | None = None  #: the adversary behind an ASSISTED or MACHINE example


@dataclass(frozen=True)
class SkippedRow:
    """A readable record that cannot become an example of the task; ``reason`` is counted in the import report,
    so records skipped for the same reason should share its wording."""

    location: str
    reason: str


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
