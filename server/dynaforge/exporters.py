"""Export formats: how a task's collected examples are written out.

An :class:`ExportFormat` is registered by a plugin (hook ``register_export_formats``) under a unique ``name``: the
name ``dynaforge export --format NAME`` and ``GET /export/{task}?format=NAME`` use. The core registers ``jsonl``
(one example per line) and ``hf`` (a Hugging Face ``datasets`` folder of Parquet files), themselves plugins
(``dynaforge.defaults.exports``).

The export service decides who may export what (``dynaforge.services.exports.prepare_export``) and hands the
format an :class:`Export`: the task, the export's splits (one per round) and its examples as pages of records in
the ``dynaforge.example/2`` format, read from the database one page at a time. A format writes each page before it
asks for the next, so memory follows the page, not the export. No user id is in a record: authors and validators
are pseudonyms.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dynaforge.tasks.base import Task

#: The format of each record an export hands out (what the core ``jsonl`` importer reads back). Version 2 carries
#: the API's global ids (``id``: the Example's, ``context_id``: the Context's) where version 1 had row numbers.
RECORD_FORMAT = "dynaforge.example/2"


@dataclass(frozen=True)
class ExportSplit:
    """One split of an export: a round, named ``round{N}``, and how many of its examples the export planned."""

    name: str
    round: int
    count: int


@dataclass(frozen=True)
class ExportPage:
    """Some examples of one split, as ``dynaforge.example/2`` records (dicts of JSON values), in the order they were
    stored."""

    split: str
    round: int
    records: list[dict[str, Any]]


@dataclass
class Export:
    """What a format writes: an export's plan, and its examples page by page (:meth:`pages`).

    ``basename`` is a file name stem such as ``dynaforge-nli-round2`` or ``dynaforge-nli-all-rounds``; ``statuses``
    the example statuses it holds; ``whole_task`` whether it holds every round. ``counts`` is how many records
    :meth:`pages` has handed out per split so far (every split, zeros included).
    """

    task: Task
    basename: str
    splits: tuple[ExportSplit, ...]
    statuses: tuple[str, ...]
    whole_task: bool
    read_pages: Callable[[], AsyncIterator[ExportPage]]
    progress: Callable[[int], None] | None = None
    #: why it holds no example, when it holds none (say, the caller does not own the task and no split is published)
    empty_reason: str | None = None
    counts: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.counts = {s.name: 0 for s in self.splits}

    @property
    def total(self) -> int:
        """How many examples the export planned (examples changing status meanwhile can make it differ)."""
        return sum(s.count for s in self.splits)

    async def pages(self) -> AsyncIterator[ExportPage]:
        """Every non-empty page, splits in round order; a page is counted (and the progress told) once the format
        has handled it and asks for the next."""
        async for page in self.read_pages():
            yield page
            self.counts[page.split] = self.counts.get(page.split, 0) + len(page.records)
            if self.progress is not None:
                self.progress(len(page.records))


@dataclass(frozen=True)
class WrittenExport:
    """What a format wrote: its files (for a folder, every file in it) and how many examples per split."""

    files: tuple[Path, ...]
    counts: dict[str, int]


class ExportFormat:
    """A way to write an export. Subclasses set ``name`` (unique across plugins), ``description``,
    ``media_type`` and ``extension``, and implement :meth:`write` (and :meth:`stream` where the bytes can go out
    while they are made).

    ``extension`` is the written file's (``.jsonl``); a format that writes a folder leaves it empty, and ``/export``
    sends the folder as a zip archive (``media_type`` is then the archive's, ``application/zip``).
    """

    name: str = ""
    description: str = ""
    media_type: str = "application/octet-stream"
    extension: str = ""

    @property
    def folder(self) -> bool:
        """Whether the format writes a folder (``--out`` names a new or empty folder) rather than one file."""
        return not self.extension

    async def write(self, export: Export, out: Path) -> WrittenExport:
        """Write the export to ``out`` (a file, or for a folder format a new or empty folder), page by page.

        Raise :class:`~dynaforge.errors.InvalidInput` (field ``out``) for an unusable ``out``, and
        :class:`~dynaforge.errors.NotFound` when the format cannot hold an export without examples.
        """
        raise NotImplementedError(f"export format {self.name!r} does not implement write()")

    def stream(self, export: Export) -> AsyncIterator[bytes] | None:
        """The export's bytes chunk by chunk, for an HTTP response that starts before the export is read whole;
        None (the default) when the format must write first (``/export`` then sends the file or zipped folder)."""
        return None

    def __repr__(self) -> str:
        return f"<ExportFormat {self.name!r}>"
