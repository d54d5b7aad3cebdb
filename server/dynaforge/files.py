"""Reading the files people upload or import, and reporting what is wrong with them, one way for all.

Every file the server takes in goes through here: context files (JSONL and CSV, ``services/contexts.py``),
perturbed copies of data sets (JSONL, ``services/datasets.py``), and the data sets that importers read
(``importers.py``: ``text_lines`` and ``csv_records`` for plugin authors, and the core ``jsonl`` importer).

Records keep their location: ``line N`` is the line a record starts on (counting from 1, blank lines included, a
UTF-8 byte order mark ignored), and a problem with one field of it is at ``line N.field``. A file is read line by
line, never whole, and may be refused past a size (``max_bytes``).

Problems are reported in one of two ways, as the caller chooses:

* collected in :class:`Problems` while reading goes on, so that a bad file is reported in one go: the first
  ``MAX_REPORTED`` as :class:`~dynaforge.errors.FieldError`\\ s of one :class:`~dynaforge.errors.InvalidInput`, and
  the rest counted in a last entry;
* or raised at once as an :class:`InvalidInput` whose field is the location (:func:`row_error`), where reading
  cannot go on (or the caller reads record by record, as importers do).

No Parquet file is read on the way in: Parquet is only written, by the Hugging Face export.
"""

from __future__ import annotations

import codecs
import csv
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from dynaforge.errors import FieldError, InvalidInput, text_problem

#: At most this many problems of a file (or of a batch of records) are listed; the rest are counted.
MAX_REPORTED = 50


def at(line: int | str, field: str | None = None) -> str:
    """The location of a record (``line 7``, or an importer's own such as ``data[0]``), or of one of its fields
    (``line 7.passage``)."""
    where = f"line {line}" if isinstance(line, int) else line
    return f"{where}.{field}" if field else where


def row_error(location: str, rule: str, message: str) -> InvalidInput:
    """The error for one unreadable record: its field is the record's location, e.g. ``line 7``."""
    return InvalidInput.from_errors([FieldError(location, rule, message)])


def file_error(rule: str, message: str) -> InvalidInput:
    """The error for a file as a whole (too large, empty, not the expected format): its field is ``file``."""
    return row_error("file", rule, message)


class Problems:
    """The problems of one file (or one batch of records), by location and field, listed up to ``limit``.

    ``count`` is every problem found, ``records`` the records that had any (consecutive problems at one location
    are one record). When more than ``limit`` were found, the error ends with an entry at ``more_field`` (rule
    ``more_rule``, stable ids that clients may rely on) that says how many more there are.
    """

    def __init__(
        self,
        *,
        limit: int = MAX_REPORTED,
        more_field: str = "file",
        more_rule: str = "more_errors",
        again: str = "upload again",
    ) -> None:
        self.limit = limit
        self.more_field = more_field
        self.more_rule = more_rule
        self.again = again
        self.listed: list[FieldError] = []
        self.count = 0
        self.records = 0
        self._last: str | None = None

    def __bool__(self) -> bool:
        return self.count > 0

    def _seen(self, record: str) -> None:
        if record != self._last:
            self.records += 1
            self._last = record

    def add(self, location: int | str, field: str | None, rule: str, message: str) -> None:
        """One problem of the record at ``location`` (a line number or a location), with ``field`` if given."""
        record = at(location)
        self._seen(record)
        self.count += 1
        if len(self.listed) < self.limit:
            self.listed.append(FieldError(at(record, field), rule, message))

    def extend(self, errors: Iterable[FieldError], *, under: int | str | None = None) -> None:
        """The problems of one record, already named: as they are (an importer's, whose field is the record's
        location), or each nested under the record's location ``under`` (a task's field errors: ``line 7.label``)."""
        if under is not None:
            for error in errors:
                self.add(under, error.field, error.rule, error.message)
            return
        errors = list(errors)
        if errors:
            self.records += 1
            self._last = None
        for error in errors:
            self.count += 1
            if len(self.listed) < self.limit:
                self.listed.append(error)

    def errors(self) -> list[FieldError]:
        """The listed problems, and an entry counting the rest when some are not listed."""
        hidden = self.count - len(self.listed)
        if hidden <= 0:
            return list(self.listed)
        in_all = f" ({self.records} records have problems in all)" if self.records > 1 else ""
        more = FieldError(
            self.more_field,
            self.more_rule,
            f"and {hidden} more problem{'s' if hidden != 1 else ''} not listed{in_all}; fix these and "
            f"{self.again} to see them",
        )
        return [*self.listed, more]

    def error(self, message: str | None = None) -> InvalidInput:
        """The problems as one InvalidInput; ``message`` defaults to every listed problem, in order."""
        errors = self.errors()
        return InvalidInput(message, errors) if message is not None else InvalidInput.from_errors(errors)

    def raise_if_any(self, message: Callable[[Problems], str] | None = None) -> None:
        """Raise :meth:`error` (its message made by ``message`` from these problems) when there is any."""
        if self.count:
            raise self.error(message(self) if message is not None else None)

    def first(self) -> str:
        """The first problem, as ``location: message`` (for a summary line)."""
        return f"{self.listed[0].field}: {self.listed[0].message}" if self.listed else ""


def nothing_added(name: str) -> Callable[[Problems], str]:
    """The summary of an upload refused as a whole: how many problems ``name`` has, and the first."""

    def summary(problems: Problems) -> str:
        s = "s" if problems.count != 1 else ""
        return (
            f"Nothing was added: {name} has {problems.count} problem{s} (first: {problems.first()}); fix them and "
            "upload the whole file again"
        )

    return summary


# --------------------------------------------------------------------------- lines


def numbered_lines(source: BinaryIO, max_bytes: int | None = None) -> Iterator[tuple[int, bytes]]:
    """The file's lines as bytes, line endings kept, numbered from 1 (a UTF-8 byte order mark dropped); a file of
    more than ``max_bytes`` is refused when reading gets there, before it is read whole."""
    total = 0
    number = 0
    while True:
        raw = source.readline(-1 if max_bytes is None else max_bytes - total + 1)
        if not raw:
            return
        total += len(raw)
        if max_bytes is not None and total > max_bytes:
            raise file_error(
                "max_bytes", f"is larger than {max_bytes} bytes; split it into smaller files and upload each"
            )
        number += 1
        if number == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[len(codecs.BOM_UTF8) :]
        yield number, raw


def path_lines(path: Path | str) -> Iterator[tuple[int, bytes]]:
    """:func:`numbered_lines` of the file at ``path`` (closed when the iteration ends)."""
    with open(path, "rb") as source:
        yield from numbered_lines(source)


def encoding_message(exc: UnicodeDecodeError) -> str:
    return (
        f"is not UTF-8 text (byte {exc.start + 1} of the line: {exc.reason}): the file was saved in another "
        "encoding; save it as UTF-8"
    )


def decoded(lines: Iterable[tuple[int, bytes]], problems: Problems | None = None) -> Iterator[tuple[int, str | None]]:
    """Each line as text (line ending kept). A line that is not UTF-8 is a problem in ``problems`` (its text is
    then None) or, without ``problems``, an InvalidInput raised at that line."""
    for number, raw in lines:
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if problems is None:
                raise row_error(at(number), "encoding", encoding_message(exc)) from exc
            problems.add(number, None, "encoding", encoding_message(exc))
            yield number, None


def text_lines(path: Path | str) -> Iterator[tuple[str, str]]:
    """``("line N", text)`` pairs of a UTF-8 text file, without line endings; blank lines are left out. Stops with
    an InvalidInput at a line that is not UTF-8."""
    for number, text in decoded(path_lines(path)):
        assert text is not None  # without problems, a bad line raises
        text = text.rstrip("\r\n")
        if text.strip():
            yield at(number), text


# --------------------------------------------------------------------------- JSONL


def json_object(location: str, text: str, *, example: str, not_an_object: str = "type") -> dict[str, Any]:
    """The JSON object on one line; raises :func:`row_error` when it is not JSON (rule ``json``) or not an object
    such as ``example`` (rule ``not_an_object``)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise row_error(
            location, "json", f"is not valid JSON ({exc.msg}, column {exc.colno}); write one object per line"
        ) from exc
    if not isinstance(value, dict):
        raise row_error(location, not_an_object, f"must be a JSON object such as {example}")
    return value


def jsonl_objects(
    lines: Iterable[tuple[int, bytes]], problems: Problems, example: str
) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """One record per non-blank line: the object, or None when the line could not be read (a problem already in
    ``problems``, by line: not UTF-8, not JSON, not an object such as ``example``)."""
    for number, text in decoded(lines, problems):
        if text is None:
            yield number, None
            continue
        if not text.strip():
            continue
        try:
            yield number, json_object(at(number), text, example=example)
        except InvalidInput as exc:
            problems.extend(exc.field_errors)
            yield number, None


def read_jsonl(source: BinaryIO, *, max_bytes: int, example: str, name: str = "the file") -> list[tuple[str, Any]]:
    """Every object of a JSONL file as ``("line N", object)`` pairs, or an InvalidInput naming every unreadable
    line (not UTF-8, not JSON, not an object, text no database stores), listed up to ``MAX_REPORTED``."""
    problems = Problems()
    records: list[tuple[str, Any]] = []
    for number, value in jsonl_objects(numbered_lines(source, max_bytes), problems, example):
        if value is None:
            continue
        if problem := text_problem(value):
            problems.add(number, None, "text", problem)
            continue
        records.append((at(number), value))
    problems.raise_if_any(nothing_added(name))
    return records


# --------------------------------------------------------------------------- CSV


class CsvRows:
    """The rows of a CSV file, each with the line it starts on (a quoted cell may span lines); blank rows are left
    out. The first row is usually the header: see :meth:`header`.

    A line that is not UTF-8 is a problem in ``problems`` (its row is read with the bad bytes replaced, so the rows
    after it keep their lines) or, without ``problems``, an InvalidInput raised there. Text that is not CSV (an
    unclosed quote) raises :class:`csv.Error`; :attr:`line` says where reading stopped.
    """

    def __init__(
        self, lines: Iterable[tuple[int, bytes]], problems: Problems | None = None, *, delimiter: str = ","
    ) -> None:
        self._problems = problems
        self._reader = csv.reader(self._texts(lines), delimiter=delimiter)
        self._end = 0

    def _texts(self, lines: Iterable[tuple[int, bytes]]) -> Iterator[str]:
        for number, raw in lines:
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                if self._problems is None:
                    raise row_error(at(number), "encoding", encoding_message(exc)) from exc
                self._problems.add(number, None, "encoding", encoding_message(exc))
                yield raw.decode("utf-8", errors="replace")

    @property
    def line(self) -> int:
        """The last line read."""
        return self._reader.line_num

    def __iter__(self) -> Iterator[tuple[int, list[str]]]:
        return self

    def __next__(self) -> tuple[int, list[str]]:
        while True:
            start = self._end + 1
            row = next(self._reader)
            self._end = self._reader.line_num
            if any(cell.strip() for cell in row):
                return start, row

    def header(self) -> tuple[int, list[str]] | None:
        """The first row that is not blank, its names stripped (None for a file with no rows)."""
        try:
            number, row = next(self)
        except StopIteration:
            return None
        return number, [cell.strip() for cell in row]


def csv_records(
    path: Path | str, required: Iterable[str], *, delimiter: str = ",", what: str = "file"
) -> Iterator[tuple[str, Any]]:
    """``("line N", row)`` pairs of a CSV file with a header, N being the line where the row starts, each row a
    dict by column name (missing trailing cells are None). A row with more cells than the header has columns
    yields an InvalidInput as its record, and reading goes on (see :meth:`dynaforge.Importer.records`).

    Raises InvalidInput when a ``required`` column is missing (``what`` names the expected format in the message),
    and stops with one where the file is not CSV or not UTF-8.
    """
    rows = CsvRows(path_lines(path), delimiter=delimiter)
    try:
        first = rows.header()
        header = first[1] if first else []
        missing = sorted(set(required) - set(header))
        if missing:
            raise row_error(
                "file",
                "header",
                f"has no column {', '.join(missing)} (its header is {', '.join(header) or 'empty'}); expected {what}",
            )
        for number, row in rows:
            if len(row) > len(header):
                problem = f"has more values than the header has columns ({len(header)})"
                yield at(number), row_error(at(number), "columns", problem)
            else:
                yield at(number), dict(zip(header, [*row, *[None] * (len(header) - len(row))], strict=True))
    except csv.Error as exc:
        raise row_error(at(rows.line), "csv", f"is not valid CSV ({exc}); reading stopped there") from exc
