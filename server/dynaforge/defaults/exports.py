"""The core export formats, registered like a plugin's: ``jsonl`` and ``hf`` (see :mod:`dynaforge.exporters`).

``jsonl`` writes one ``dynaforge.example/2`` record per line (what the core ``jsonl`` importer reads back), and
streams over HTTP as it is read. ``hf`` writes a folder that ``datasets.load_dataset`` loads: one Parquet file per
round, one row group per page, and a dataset card. Both write each page before the next is read.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dynaforge.errors import FieldError, InvalidInput, NotFound
from dynaforge.exporters import Export, ExportFormat, ExportPage, WrittenExport
from dynaforge.hookspecs import hookimpl
from dynaforge.tasks.base import Task
from dynaforge.tasks.fields import (
    BooleanField,
    ChoiceField,
    Field,
    NumberField,
    ReferencesField,
    Role,
    SpanField,
    TextField,
)

# --------------------------------------------------------------------------- JSON Lines


def _jsonl_chunk(page: ExportPage) -> bytes:
    lines = [json.dumps(rec, ensure_ascii=False, separators=(",", ":"), default=str) for rec in page.records]
    return ("\n".join(lines) + "\n").encode()


class JsonlFormat(ExportFormat):
    """JSON Lines: one ``dynaforge.example/2`` record per line, rounds in order, examples in the order stored."""

    name = "jsonl"
    description = "JSON Lines: one example per line (format dynaforge.example/2), which the jsonl importer reads."
    media_type = "application/x-ndjson"
    extension = ".jsonl"

    async def stream(self, export: Export) -> AsyncIterator[bytes]:
        async for page in export.pages():
            yield _jsonl_chunk(page)

    async def write(self, export: Export, out: Path) -> WrittenExport:
        """Write to ``out``, replaced only once the export is complete."""
        path = Path(out)
        partial = path.with_name(path.name + ".partial")
        try:
            handle = await asyncio.to_thread(partial.open, "wb")
            try:
                async for page in export.pages():
                    await asyncio.to_thread(handle.write, _jsonl_chunk(page))
            finally:
                await asyncio.to_thread(handle.close)
            os.replace(partial, path)
        finally:
            partial.unlink(missing_ok=True)
        return WrittenExport((path,), dict(export.counts))


# --------------------------------------------------------------------------- Hugging Face datasets folder

#: Columns every export has besides the task's fields (a task field with one of these names gets a ``field_`` prefix).
META_COLUMNS = (
    "id",
    "round",
    "status",
    "fooled",
    "prediction",
    "author",
    "tag",
    "context_id",
    "time_taken_ms",
    "source",
    "adversary",
    "created_at",
    "votes",
    "flag_reason",
    "validations",
)
_META_DTYPES = {
    "id": "string",
    "round": "int64",
    "status": "string",
    "fooled": "bool",
    "author": "string",
    "tag": "string",
    "context_id": "string",
    "time_taken_ms": "int64",
    "source": "string",
    "adversary": "string",
    "created_at": "string",
    "flag_reason": "string",
}
_VOTES = [{"name": n, "dtype": "int64"} for n in ("correct", "incorrect", "flagged")]
_VALIDATION = [
    {"name": "validator", "dtype": "string"},
    {"name": "label", "dtype": "string"},
    {"name": "corrected_target", "dtype": "string"},
    {"name": "reason", "dtype": "string"},
    {"name": "by_owner", "dtype": "bool"},
    {"name": "created_at", "dtype": "string"},
]
_SPAN = [{"name": "text", "dtype": "string"}, {"name": "start", "dtype": "int64"}]
_PROBABILITY = [{"name": "label", "dtype": "string"}, {"name": "probability", "dtype": "float64"}]
# Column order of every split: what the example is first, then the task's fields, then the model and the votes.
_BEFORE = ("id", "round", "status")


@dataclass(frozen=True)
class _Column:
    """How one task field becomes a dataset column."""

    name: str
    field: Field
    feature: dict[str, Any]  # the column in the card's ``dataset_info.features`` (datasets' YAML form)
    names: tuple[str, ...] = ()  # class label names, for a choice field

    def value(self, value: Any) -> Any:
        if value is None:
            return None
        f = self.field
        if isinstance(f, SpanField):
            if isinstance(value, dict) and isinstance(value.get("text"), str) and isinstance(value.get("start"), int):
                return {"text": value["text"], "start": value["start"]}
            return None
        if isinstance(f, ChoiceField):
            return self.names.index(value) if value in self.names else -1
        if isinstance(f, NumberField):
            return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if isinstance(f, BooleanField):
            return value if isinstance(value, bool) else None
        if isinstance(f, ReferencesField):
            texts = value if isinstance(value, list) else [value]
            return [t if isinstance(t, str) else json.dumps(t, ensure_ascii=False) for t in texts]
        if isinstance(f, TextField):
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _column(task: Task, f: Field) -> _Column:
    name = f"field_{f.name}" if f.name in META_COLUMNS else f.name
    if isinstance(f, SpanField):
        return _Column(name, f, {"name": name, "struct": _SPAN})
    if isinstance(f, ChoiceField):
        names = f.options(task)
        label = {"class_label": {"names": {str(i): n for i, n in enumerate(names)}}}
        return _Column(name, f, {"name": name, "dtype": label}, tuple(names))
    if isinstance(f, NumberField):
        return _Column(name, f, {"name": name, "dtype": "float64"})
    if isinstance(f, BooleanField):
        return _Column(name, f, {"name": name, "dtype": "bool"})
    if isinstance(f, ReferencesField):
        return _Column(name, f, {"name": name, "sequence": "string"})
    # Text, and any other field type as a JSON string.
    return _Column(name, f, {"name": name, "dtype": "string"})


def _meta_feature(name: str) -> dict[str, Any]:
    if name == "votes":
        return {"name": name, "struct": _VOTES}
    if name == "validations":
        return {"name": name, "list": _VALIDATION}
    return {"name": name, "dtype": _META_DTYPES[name]}


def _arrow_type(feature: dict[str, Any]):
    """The Arrow type that stores a feature given in datasets' YAML form (a class label is an int64 index)."""
    import pyarrow as pa  # imported on use: it costs the API process ~40 MB it does not otherwise need

    if "struct" in feature:
        return pa.struct([(f["name"], _arrow_type(f)) for f in feature["struct"]])
    if "list" in feature:
        return pa.list_(pa.struct([(f["name"], _arrow_type(f)) for f in feature["list"]]))
    dtype = feature["dtype"]
    if isinstance(dtype, dict):  # class_label
        return pa.int64()
    return {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}[dtype]


@dataclass(frozen=True)
class _Layout:
    """The columns of every split: the task's field columns and every column's feature, in order."""

    columns: list[_Column]
    features: list[dict[str, Any]]
    prediction: _Prediction

    def arrow_schema(self):
        import pyarrow as pa

        return pa.schema([(f["name"], _arrow_type(f)) for f in self.features])


def _layout(task: Task) -> _Layout:
    columns = [_column(task, f) for f in task.fields]
    rest = [m for m in META_COLUMNS if m not in _BEFORE]
    answer = _Prediction([c for c in columns if c.field.role == Role.TARGET])
    features = [
        *(_meta_feature(m) for m in _BEFORE),
        *(c.feature for c in columns),
        *(answer.feature if m == "prediction" else _meta_feature(m) for m in rest),
    ]
    return _Layout(columns, features, answer)


#: What a prediction holds besides the task's target fields (Task.read_model_output keeps them when given).
_PREDICTION_EXTRAS = ("probabilities", "confidence", "other")


@dataclass(frozen=True)
class _Prediction:
    """The ``prediction`` column: a struct of the task's target fields (typed as their own columns are: a label as
    its class index), the model's ``probabilities`` (label, probability pairs) and ``confidence``, and ``other``: what
    else the task's reader kept (a writing model's generation details), as JSON."""

    targets: list[_Column]

    def key(self, column: _Column) -> str:
        name = column.field.name
        return f"field_{name}" if name in _PREDICTION_EXTRAS else name

    @property
    def feature(self) -> dict[str, Any]:
        return {
            "name": "prediction",
            "struct": [
                *({**c.feature, "name": self.key(c)} for c in self.targets),
                {"name": "probabilities", "list": _PROBABILITY},
                {"name": "confidence", "dtype": "float64"},
                {"name": "other", "dtype": "string"},
            ],
        }

    def value(self, prediction: Any) -> dict[str, Any] | None:
        if not isinstance(prediction, dict):
            return None
        rest = dict(prediction)
        row: dict[str, Any] = {self.key(c): c.value(rest.pop(c.field.name, None)) for c in self.targets}
        probabilities = rest.pop("probabilities", None)
        if isinstance(probabilities, dict):
            probabilities = [{"label": str(k), "probability": v} for k, v in probabilities.items()]
        row["probabilities"] = (
            [
                {"label": str(p.get("label")), "probability": float(p["probability"])}
                for p in probabilities
                if isinstance(p, dict) and isinstance(p.get("probability"), (int, float))
            ]
            if isinstance(probabilities, list)
            else None
        )
        confidence = rest.pop("confidence", None)
        row["confidence"] = (
            float(confidence) if isinstance(confidence, (int, float)) and not isinstance(confidence, bool) else None
        )
        row["other"] = _json_or_none(rest or None)
        return row


def _json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _row(layout: _Layout, rec: dict[str, Any]) -> dict[str, Any]:
    row = {
        "id": rec["id"],
        "round": rec["round"],
        "status": rec["status"],
        "fooled": rec["fooled"],
        "prediction": layout.prediction.value(rec["prediction"]),
        "author": rec["author"],
        "tag": rec["tag"],
        "context_id": rec["context_id"],
        "time_taken_ms": rec["time_taken_ms"],
        "source": rec.get("source", "HUMAN"),
        "adversary": rec.get("adversary"),
        "created_at": rec["created_at"],
        "votes": rec["votes"],
        "flag_reason": rec["flag_reason"],
        "validations": [{**v, "corrected_target": _json_or_none(v["corrected_target"])} for v in rec["validations"]],
    }
    for column in layout.columns:
        row[column.name] = column.value(rec["fields"].get(column.field.name))
    return row


def _table(layout: _Layout, schema: Any, records: list[dict[str, Any]]) -> Any:
    import pyarrow as pa

    return pa.Table.from_pylist([_row(layout, rec) for rec in records], schema=schema)


class HfFormat(ExportFormat):
    """A folder that ``datasets.load_dataset(folder)`` loads: ``data/round{N}.parquet`` per round (split
    ``round{N}``, one row group per page) and a ``README.md`` dataset card describing the features.

    ``datasets`` cannot load an empty split, so a round without exported examples gets no split, and an export
    with no examples at all is refused with :class:`NotFound`.
    """

    name = "hf"
    description = "A Hugging Face datasets folder: data/round{N}.parquet per round and a README.md dataset card."
    media_type = "application/zip"
    extension = ""  # a folder; /export sends it zipped

    async def write(self, export: Export, out: Path) -> WrittenExport:
        import pyarrow.parquet as pq  # imported on use, like pyarrow in _arrow_type

        folder = Path(out)
        if export.total == 0:
            raise NotFound(_nothing(export))
        if await asyncio.to_thread(_occupied, folder):
            raise InvalidInput.from_errors(
                [FieldError("out", "empty_folder", f"{folder} exists and is not an empty folder; choose a new path")]
            )
        data = folder / "data"
        data.mkdir(parents=True, exist_ok=True)
        layout = _layout(export.task)
        schema = layout.arrow_schema()
        counts: dict[str, int] = {}
        by_source: dict[str, dict[str, int]] = {}
        files: list[Path] = []
        writer: Any = None  # the current split's pyarrow.parquet.ParquetWriter
        try:
            # Only non-empty pages come, so a split whose examples all changed status since the plan gets no file.
            async for page in export.pages():
                if page.split not in counts:
                    if writer is not None:
                        writer.close()
                    files.append(data / f"{page.split}.parquet")
                    writer = pq.ParquetWriter(files[-1], schema, compression="zstd")
                    counts[page.split] = 0
                table = _table(layout, schema, page.records)
                await asyncio.to_thread(writer.write_table, table, row_group_size=len(page.records))
                counts[page.split] += len(page.records)
                count_sources(by_source, page.records)
        finally:
            if writer is not None:
                writer.close()
        if not counts:
            data.rmdir()
            raise NotFound(_nothing(export))
        card = folder / "README.md"
        card.write_text(dataset_card(export, layout, counts, by_source), encoding="utf-8")
        return WrittenExport((card, *files), counts)


def _occupied(folder: Path) -> bool:
    return folder.exists() and (not folder.is_dir() or any(folder.iterdir()))


def _nothing(export: Export) -> str:
    if export.empty_reason:
        return f"{export.empty_reason}; so there is no dataset to write"
    scope = "any round" if export.whole_task else f"round {export.splits[0].round}"
    return (
        f"Task {export.task.code} has no examples with status {', '.join(export.statuses)} in {scope}, so there is "
        "no dataset to write; ask for other statuses or export as jsonl"
    )


# --------------------------------------------------------------------------- the dataset card


def count_sources(totals: dict[str, dict[str, int]], records: list[dict[str, Any]]) -> None:
    """Add ``records`` to the per-source counts of the dataset card: examples, collected (the model answered),
    fooled, and verified fooled (fooled and ACCEPTED), the counters the platform splits by source."""
    for rec in records:
        counts = totals.setdefault(rec.get("source") or "HUMAN", dict.fromkeys(_SOURCE_COUNTS, 0))
        counts["examples"] += 1
        counts["collected"] += rec["fooled"] is not None
        counts["fooled"] += rec["fooled"] is True
        counts["verified_fooled"] += rec["fooled"] is True and rec["status"] == "ACCEPTED"


_SOURCE_COUNTS = ("examples", "collected", "fooled", "verified_fooled")


def _source_table(by_source: dict[str, dict[str, int]]) -> str:
    lines = [
        "| source | examples | model answered | fooled | fooled and accepted | vMER |",
        "|---|---|---|---|---|---|",
    ]
    for source in ("HUMAN", "ASSISTED", "MACHINE", *sorted(set(by_source) - {"HUMAN", "ASSISTED", "MACHINE"})):
        c = by_source.get(source)
        if not c:
            continue
        vmer = f"{c['verified_fooled'] / c['collected']:.3f}" if c["collected"] else "-"
        lines.append(
            f"| {source} | {c['examples']} | {c['collected']} | {c['fooled']} | {c['verified_fooled']} | {vmer} |"
        )
    return "\n".join(lines)


def dataset_card(
    export: Export, layout: _Layout, counts: dict[str, int], by_source: dict[str, dict[str, int]] | None = None
) -> str:
    """README.md with YAML front matter (``configs`` and ``dataset_info``) and a human-readable body; ``by_source``
    (from :func:`count_sources`) adds a table of the examples by where they came from."""
    task = export.task
    splits = [part.name for part in export.splits if part.name in counts]
    front = {
        "pretty_name": f"Dynaforge {task.name}",
        "tags": ["dynaforge", "adversarial"],
        "configs": [
            {
                "config_name": "default",
                "data_files": [{"split": s, "path": f"data/{s}.parquet"} for s in splits],
            }
        ],
        "dataset_info": {
            "config_name": "default",
            # No ``splits``: datasets wants their Arrow size in bytes, unknown here; the body gives the counts.
            "features": layout.features,
        },
    }
    rows = "\n".join(
        f"| `{part.name}` | {part.round} | {counts[part.name]} |" for part in export.splits if part.name in counts
    )
    fields = "\n".join(_field_line(task, c) for c in layout.columns)
    first = splits[0] if splits else "round1"
    description = f"\n{task.description.strip()}\n" if task.description.strip() else ""
    scope = "every round of the task" if export.whole_task else f"round {export.splits[0].round}"
    sources = (
        "\nBy source (HUMAN: a person alone; ASSISTED: a person from a machine adversary's suggestion; MACHINE: a "
        "machine adversary's candidate, validated by people), over the exported examples; vMER is fooled and "
        f"accepted over model answered:\n\n{_source_table(by_source)}\n"
        if by_source
        else ""
    )
    return f"""---
{_yaml(front).rstrip()}
---

# Dynaforge: {task.name} (`{task.code}`)
{description}
Examples collected with Dynaforge, a platform for dynamic adversarial data collection, for the task
`{task.code}`: people wrote each example to fool a target model in the loop. This export holds {scope}:
{sum(counts.values())} examples with status {", ".join(export.statuses)}.

| split | round | examples |
|---|---|---|
{rows}

A round without exported examples has no split.
{sources}
## Load it

```python
from datasets import load_dataset

ds = load_dataset("path/to/this/folder")  # or the Hub repository you upload it to
example = ds["{first}"][0]
```

## Columns

The task's fields (their role in parentheses; context fields are repeated on each example):

{fields}

Besides the fields: `id` (the example's id in the server's API, which `node(id:)` reads), `round`, `status`
(CREATED, FLAGGED, ACCEPTED, REJECTED, ...), `fooled` (whether the example fooled the target model; null if it was
never predicted), `prediction` (the model's prediction: its target fields typed as
the fields' own columns, `probabilities` as label and probability pairs, `confidence`, and `other`, anything else
the model's reading kept, as a JSON string), `author`, `tag`, `context_id` (the context's
API id), `time_taken_ms`, `source` (HUMAN: written by a person; ASSISTED: by a person from a machine adversary's
suggestion; MACHINE: proposed by a machine adversary and validated by people), `adversary` (the adversary's name,
for ASSISTED and MACHINE), `created_at` (ISO 8601, UTC), `votes` (validators' counts: correct, incorrect, flagged),
`flag_reason` and `validations` (each validator's pseudonym, label, corrected target as a JSON string, reason,
whether an owner gave it, and when). A choice field holds the index of its class label; -1 marks a stored value
that is no longer one of the task's labels.

## Pseudonyms

No user id or name is in this data. `author` and `validator` are pseudonyms: the first 16 hexadecimal digits
of HMAC-SHA256 of the user id, keyed on a secret of the round that never leaves the server. The same person has
the same pseudonym throughout a round, so examples and validations of one round can be grouped by person, but
pseudonyms of different rounds cannot be linked to each other.
"""


def _field_line(task: Task, column: _Column) -> str:
    f = column.field
    kind = {
        SpanField: "a span `{text, start}` of " + str(getattr(f, "context_field", "")),
        ChoiceField: "class label: " + ", ".join(column.names),
        NumberField: "number",
        BooleanField: "true or false",
        TextField: "text",
    }
    described = next((v for k, v in kind.items() if isinstance(f, k)), "a JSON string")
    note = f" — {f.description}" if f.description else ""
    renamed = f" (the task's field `{f.name}`)" if column.name != f.name else ""
    return f"- `{column.name}`{renamed} ({f.role.value}): {described}{note}"


_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*$")
_YAML_WORDS = {"true", "false", "null", "yes", "no", "on", "off", "y", "n"}


def _plain(text: str) -> bool:
    """Whether ``text`` can be written unquoted and still read back as the same string."""
    return bool(_PLAIN.match(text)) and text.lower() not in _YAML_WORDS


def _yaml_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    text = str(value)
    return text if _plain(text) else json.dumps(text, ensure_ascii=False)  # JSON strings are double-quoted YAML


def _yaml_key(key: str) -> str:
    return key if _plain(key) else json.dumps(key, ensure_ascii=False)


def _yaml(value: Any, indent: int = 0) -> str:
    """Block-style YAML for dicts, lists and scalars (what the dataset card's front matter needs)."""
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return pad + "{}\n"
        out = []
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                out.append(f"{pad}{_yaml_key(key)}:\n{_yaml(item, indent + 2)}")
            else:
                out.append(f"{pad}{_yaml_key(key)}: {_yaml_inline(item)}\n")
        return "".join(out)
    if isinstance(value, list):
        if not value:
            return pad + "[]\n"
        out = []
        for item in value:
            if isinstance(item, (dict, list)) and item:
                inner = _yaml(item, indent + 2)
                out.append(f"{pad}- {inner[indent + 2 :]}")
            else:
                out.append(f"{pad}- {_yaml_inline(item)}\n")
        return "".join(out)
    return pad + _yaml_scalar(value) + "\n"


def _yaml_inline(value: Any) -> str:
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _yaml_scalar(value)


@hookimpl(trylast=True)
def register_export_formats(register: Any) -> None:
    register(JsonlFormat())
    register(HfFormat())
