"""``dynaforge-client``: a Dynaforge server from the shell.

Submit a model and follow its evaluations, read results and leaderboards, download exports, follow the examples
that fool a task's model, and sign in for a token. The server's address and token come from ``--url``/``--token``
or ``DYNAFORGE_URL``/``DYNAFORGE_TOKEN``. Errors the server reports print ``error: CODE: message`` (one more line
per field) and exit 1; usage errors exit 2. Progress bars go to stderr, only when it is a terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import getpass
import json
import logging
import math
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from tqdm import tqdm

from . import __version__, errors
from .client import AsyncClient
from .results import Leaderboard, ModelResults

DEFAULT_URL = "http://127.0.0.1:8000"
_LOGGER = "dynaforge_client"


# -- parsing -----------------------------------------------------------------------------------------------------


def _key_value(kind: Callable[[str], Any], what: str) -> Callable[[str], tuple[str, Any]]:
    def parse(text: str) -> tuple[str, Any]:
        name, sep, value = text.partition("=")
        if not sep or not name.strip():
            raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
        try:
            return name.strip(), kind(value.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} of {name.strip()!r} must be a number, got {value!r}") from None

    return parse


def _weight(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value


class Parser(argparse.ArgumentParser):
    """The command line's parser, with its commands' parsers by name (``commands``)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.commands: dict[str, argparse.ArgumentParser] = {}

    def command_error(self, command: str | None, message: str) -> NoReturn:
        """A usage error of one command: its usage, the message, exit 2."""
        (self.commands.get(command or "") or self).error(message)


def build_parser() -> Parser:
    # The global options are accepted before the command and after it (``results 12 --json --url ...``).
    common = Parser(add_help=False)
    group = common.add_argument_group("server")
    group.add_argument(
        "--url",
        default=argparse.SUPPRESS,
        help=f"the server's address (env DYNAFORGE_URL; default {DEFAULT_URL})",
    )
    group.add_argument("--token", default=argparse.SUPPRESS, help="an API token (env DYNAFORGE_TOKEN; none: anonymous)")
    group.add_argument(
        "-q", "--quiet", action="store_true", default=argparse.SUPPRESS, help="no progress bars or progress messages"
    )

    parser = Parser(
        prog="dynaforge-client",
        parents=[common],
        description="A Dynaforge server from the shell: submit models, read results and leaderboards, export data, "
        "follow the examples that fool a model.",
        epilog="Errors the server reports print 'error: CODE: message' on stderr and exit 1; usage errors exit 2. "
        "Progress bars go to stderr when it is a terminal.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, help: str, description: str | None = None) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, parents=[common], help=help, description=description or help)
        parser.commands[name] = sub  # for the usage errors found after parsing
        return sub

    submit = command(
        "submit",
        "submit a model for evaluation",
        "Upload a Hugging Face model folder (what save_pretrained wrote, safetensors weights) or submit the address "
        "of a model server you run, for evaluation on every scoring data set of the task. Prints the model's id; "
        "with --wait, follows the evaluations and prints the results (exit 1 when an evaluation failed).",
    )
    submit.add_argument("task", metavar="TASK", help="the task's code (nli, sentiment, ...)")
    submit.add_argument("folder", metavar="FOLDER", nargs="?", type=Path, help="the model folder to upload")
    submit.add_argument(
        "--url-model", metavar="URL", help="a model server's address (docs/model-server.md) instead of a FOLDER"
    )
    submit.add_argument("--name", help="the model's name (default: the folder's name, or the URL)")
    submit.add_argument("--published", action="store_true", help="show it on the leaderboard")
    submit.add_argument("--anonymous", action="store_true", help="hide who submitted it")
    card = submit.add_argument_group("model card")
    card.add_argument("--card-license", metavar="L", help="the licence it is released under")
    card.add_argument("--card-description", metavar="D", help="what you say about the model")
    card.add_argument("--card-paper", metavar="URL", help="a link to the paper that describes it")
    card.add_argument("--card-parameters", metavar="N", type=int, help="how many parameters it has")
    card.add_argument("--card-training-data", metavar="T", help="what it was trained on")
    submit.add_argument(
        "--option",
        metavar="KEY=VALUE",
        action="append",
        type=_key_value(_json_or_text, "the value"),
        default=[],
        help="how the uploaded model reads the task (docs/model-server.md); VALUE is JSON or text; repeatable",
    )
    _wait_options(submit)

    results = command(
        "results",
        "show a model's results",
        "A model's evaluations: per data set and metric, the value, its 95% interval, throughput and memory.",
    )
    results.add_argument("model", metavar="MODEL_ID", help="the model's id (what submit printed)")
    results.add_argument(
        "--json", action="store_true", help="print JSON: the model, its status and one record per metric"
    )
    _wait_options(results)

    board = command(
        "leaderboard",
        "show a task's leaderboard",
        "The task's published models ranked by Dynascore under your metric weights (unnamed metrics keep the "
        "task's defaults), or by one metric.",
    )
    board.add_argument("task", metavar="TASK", help="the task's code")
    board.add_argument(
        "--weight",
        metavar="METRIC=VALUE",
        action="append",
        type=_key_value(_weight, "the weight"),
        default=[],
        help="a metric's weight in the Dynascore (accuracy=4); repeatable",
    )
    board.add_argument(
        "--dataset-weight",
        metavar="DATASET=VALUE",
        action="append",
        type=_key_value(_weight, "the weight"),
        default=[],
        help="a data set's weight; repeatable",
    )
    board.add_argument("--sort-metric", metavar="METRIC", help="rank by this metric instead of the Dynascore")
    shape = board.add_mutually_exclusive_group()
    shape.add_argument("--json", action="store_true", help="print JSON")
    shape.add_argument("--csv", action="store_true", help="print CSV")

    export = command(
        "export",
        "download a task's collected examples",
        "Download the task's examples (one round, or every round) in any export format the server registers. "
        "'-o -' writes to stdout.",
    )
    export.add_argument("task", metavar="TASK", help="the task's code")
    export.add_argument("--round", type=int, metavar="N", help="one round (default: every round)")
    export.add_argument("--status", metavar="S", help="only examples with this status (ACCEPTED, ...)")
    export.add_argument("--format", default="jsonl", metavar="F", help="jsonl (default), hf (a zip), ...")
    export.add_argument("-o", "--output", required=True, metavar="PATH", help="the file to write; '-' for stdout")

    watch = command(
        "watch",
        "follow the examples that fool a task's model",
        "Print each example that fools the task's target model as it is written, until Ctrl-C (exit 0) or --limit. "
        "Reconnects by itself; on exit prints the last example's id, to resume with --after.",
    )
    watch.add_argument("task", metavar="TASK", help="the task's code")
    watch.add_argument(
        "--after", metavar="ID", help="first the fooling examples stored after this example (a previous run's last id)"
    )
    watch.add_argument("--json", action="store_true", help="print one JSON object per line")
    watch.add_argument("--limit", type=_positive, metavar="N", help="stop after N examples")
    watch.add_argument(
        "--max-attempts",
        type=_positive,
        metavar="N",
        help="give up after N reconnection attempts in a row (default: never)",
    )

    login = command(
        "login",
        "sign in and print an API token",
        "Sign in with a password and print the new API token: export DYNAFORGE_TOKEN=$(dynaforge-client login NAME)",
    )
    login.add_argument("username", metavar="USERNAME")
    secret = login.add_mutually_exclusive_group()
    secret.add_argument("--password", help="the password (default: asked for)")
    secret.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    return parser


def _wait_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait", action="store_true", help="follow the evaluations until each is DONE or FAILED (exit 1: one FAILED)"
    )
    parser.add_argument("--timeout", type=_seconds, metavar="SECONDS", help="with --wait: give up after this long")


# -- output ------------------------------------------------------------------------------------------------------


class Output:
    """Where things go: results to stdout; progress bars and messages to stderr (bars only on a terminal)."""

    def __init__(self, quiet: bool, stdout: TextIO | None = None, stderr: TextIO | None = None):
        self.quiet = quiet
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.bars = not quiet and _isatty(self.stderr)

    def print(self, text: str = "") -> None:
        print(text, file=self.stdout, flush=True)

    def info(self, text: str) -> None:
        if not self.quiet:
            print(text, file=self.stderr, flush=True)

    def warn(self, text: str) -> None:
        print(f"warning: {text}", file=self.stderr, flush=True)

    def bar(self, **options: Any) -> tqdm:
        settings: dict[str, Any] = {"leave": False, "dynamic_ncols": True, **options}
        return tqdm(file=self.stderr, disable=not self.bars, **settings)


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _bytes_bar(out: Output, desc: str) -> tuple[tqdm, Callable[[int, int], None]]:
    """A bytes progress bar and the ``progress(done, total)`` callback that moves it (total 0: unknown)."""
    bar = out.bar(desc=desc, unit="B", unit_scale=True, unit_divisor=1024, total=None)

    def progress(done: int, total: int) -> None:
        if total and bar.total != total:
            bar.total = total
        if done < bar.n:  # the upload started again (a retry)
            bar.reset(total=total or None)
        bar.update(done - bar.n)

    return bar, progress


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Sequence[int] = ()) -> str:
    """Rows as aligned text columns (``right``: the columns aligned right)."""
    cells = [[str(h) for h in headers], *[["" if c is None else str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        parts = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)


def _number(value: float | None, digits: int = 4) -> str:
    if value is None:
        return "-"
    if value != value or math.isinf(value):
        return str(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


def _interval(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "-"
    return f"[{_number(low)}, {_number(high)}]"


def _throughput(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}/s"


def _memory(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f} GiB"


def _enum(value: Any) -> str:
    return str(getattr(value, "value", value))


def results_json(results: ModelResults) -> dict[str, Any]:
    model = results.model
    return {
        "model": {
            "id": model.id,
            "name": model.name,
            "task": model.task.code,
            "status": _enum(model.status),
            "published": model.published,
            "anonymous": model.anonymous,
            "backend": model.backend,
        },
        "status": _enum(model.status),
        "done": results.done,
        "evaluations": [
            {
                "dataset": e.dataset.name,
                "status": _enum(e.status),
                "progress": e.progress,
                "error": e.error,
                "throughput": e.throughput,
                "memory_gib": e.memory_gib,
            }
            for e in results.evaluations
        ],
        "records": results.records(),
    }


def results_text(results: ModelResults) -> str:
    model = results.model
    head = f'model {model.id} "{model.name}" ({model.task.code}): {_enum(model.status)}'
    rows: list[list[Any]] = []
    problems = []
    for e in results.evaluations:
        status = _enum(e.status)
        if status == "DONE" and e.metrics:
            for m in e.metrics:
                low, high = (m.interval.low, m.interval.high) if m.interval else (None, None)
                rows.append(
                    [e.dataset.name, m.name, _number(m.value), _interval(low, high), _throughput(e.throughput),
                     _memory(e.memory_gib)]
                )  # fmt: skip
        else:
            if status == "QUEUED" and e.queue_position:
                detail = f"QUEUED #{e.queue_position}"
            else:
                detail = f"{status} {e.progress:.0%}" if status in ("QUEUED", "RUNNING") else status
            rows.append([e.dataset.name, f"({detail})", "-", "-", "-", "-"])
            if status == "FAILED" and e.error:
                problems.append(f"{e.dataset.name}: {e.error}")
    if not rows:
        return f"{head}\nno evaluations yet"
    text = table(["DATA SET", "METRIC", "VALUE", "95% INTERVAL", "THROUGHPUT", "MEMORY"], rows, right=(2, 4, 5))
    lines = [head, text]
    lines += [f"failed on {p}" for p in problems]
    robustness = [
        [e.dataset.name, p.perturbation, _enum(p.kind).lower(), _number(p.consistency),
         " ".join(f"{m.name}={_number(m.value)}" for m in p.metrics) or "-"]
        for e in results.evaluations
        for p in e.perturbations
    ]  # fmt: skip
    if robustness:
        head_row = ["DATA SET", "PERTURBATION", "COUNTS FOR", "CONSISTENCY", "METRICS ON THE COPY"]
        lines += ["", table(head_row, robustness, right=(3,))]
    fairness = [
        [e.dataset.name, s.slice_, g.metric, _number(g.gap), g.worst_group or "-", _number(g.worst_value),
         str(g.groups_compared)]
        for e in results.evaluations
        for s in e.slices
        for g in s.gaps
    ]  # fmt: skip
    if fairness:
        head_row = ["DATA SET", "SLICE", "METRIC", "GAP", "WORST GROUP", "ITS VALUE", "GROUPS"]
        lines += ["", table(head_row, fairness, right=(3, 5, 6))]
    return "\n".join(lines)


def leaderboard_metrics(board: Leaderboard) -> list[str]:
    """The metrics' names, in the board's order (then any a row has that the board does not list)."""
    names = [m.name for m in board.board.metrics]
    for row in board.rows:
        names += [m.name for m in row.metrics if m.name not in names]
    return names


def leaderboard_rows(board: Leaderboard) -> tuple[list[str], list[list[Any]]]:
    """The board as flat rows: rank, model id and name, submitter, Dynascore, each metric, and the metrics a row lacks
    results for (the reason it has no rank), space-separated."""
    metrics = leaderboard_metrics(board)
    rows = []
    for row in board.rows:
        values = {m.name: m.value for m in row.metrics}
        submitter = row.model.submitter.username if row.model.submitter else None
        rows.append(
            [row.rank, row.model.model_id, row.model.name, submitter, row.dynascore, *(values.get(n) for n in metrics),
             " ".join(row.missing)]
        )  # fmt: skip
    return ["rank", "model_id", "model", "submitter", "dynascore", *metrics, "missing"], rows


def leaderboard_text(board: Leaderboard, task: str) -> str:
    metrics = leaderboard_metrics(board)
    weights = ", ".join(f"{name} {weight:.3g}" for name, weight in board.metric_weights.items())
    head = f"{task} leaderboard ({len(board)} models; weights: {weights or 'none'})"
    if not len(board):
        return head
    _, flat = leaderboard_rows(board)
    rows = [
        ["-" if rank is None else rank, name, model_id, submitter or "(anonymous)", _number(score, 2),
         *(_number(v) for v in rest[:-1]), rest[-1] or ""]
        for rank, model_id, name, submitter, score, *rest in flat
    ]  # fmt: skip
    units = {m.name: m.unit for m in board.board.metrics if m.unit}
    headers = [f"{name} ({units[name]})" if name in units else name for name in metrics]
    if not any(row[-1] for row in rows):
        rows = [row[:-1] for row in rows]
    else:
        headers.append("MISSING")
    right = (0, 4, *range(5, 5 + len(metrics)))
    return head + "\n" + table(["RANK", "MODEL", "ID", "SUBMITTER", "DYNASCORE", *headers], rows, right=right)


def example_line(example: Any) -> str:
    """One example as one readable line: id, round, author, fields, then the model's prediction."""
    fields = example.fields if isinstance(example.fields, dict) else {"fields": example.fields}
    parts = [f"{name}={json.dumps(value, ensure_ascii=False)}" for name, value in fields.items()]
    who = f" by {example.author.username}" if example.author is not None else ""
    line = f"{example.id}  round {example.round.number}{who}  " + " ".join(parts)
    prediction = example.prediction
    if prediction is not None:
        predicted = prediction.label
        if predicted is None and prediction.span is not None:
            predicted = json.dumps(prediction.span.text, ensure_ascii=False)
        if predicted is None:
            predicted = json.dumps(prediction.fields, ensure_ascii=False)
        line += f"  -> model: {predicted}"
        if prediction.confidence is not None:
            line += f" ({prediction.confidence:.2f})"
    return line


# -- commands ----------------------------------------------------------------------------------------------------


async def _follow(client: AsyncClient, model_id: str, out: Output, limit_s: float | None) -> ModelResults:
    """wait_for_results with one progress bar per data set."""
    bars: dict[str, tqdm] = {}
    seen: dict[str, str] = {}

    def on_progress(event: Any) -> None:
        name = event.dataset_name
        status = _enum(event.status)
        bar = bars.get(name)
        if bar is None:
            bar = bars[name] = out.bar(total=100, bar_format="{desc} {percentage:3.0f}%|{bar}|", leave=True)
        bar.n = 100 if status in ("DONE", "FAILED") else round(max(0.0, min(1.0, event.progress)) * 100)
        bar.set_description_str(f"{name} {status:<7}", refresh=True)
        if not out.bars and status in ("DONE", "FAILED") and seen.get(name) != status:
            out.info(f"{name}: {status}" + (f" ({event.error})" if event.error else ""))
        seen[name] = status

    def on_results(results: ModelResults) -> None:
        """A queued evaluation says where it waits (its progress events start when it runs)."""
        for e in results.evaluations:
            if _enum(e.status) != "QUEUED":
                continue
            name, where = e.dataset.name, f"QUEUED #{e.queue_position}" if e.queue_position else "QUEUED"
            bar = bars.get(name)
            if bar is None:
                bar = bars[name] = out.bar(total=100, bar_format="{desc} {percentage:3.0f}%|{bar}|", leave=True)
            bar.set_description_str(f"{name} {where}", refresh=True)
            if not out.bars and seen.get(name) != where:
                out.info(f"{name}: {where.lower()} (1 is next)")
            seen[name] = where

    async def follow() -> ModelResults:
        return await client.wait_for_results(model_id, on_progress=on_progress, on_results=on_results)

    out.info(f"waiting for the evaluations of model {model_id}")
    try:
        return await asyncio.wait_for(follow(), limit_s)
    except (TimeoutError, asyncio.TimeoutError):  # noqa: UP041 - two classes before Python 3.11
        raise errors.DynaforgeError(
            f"the evaluations did not finish in {limit_s:g} s; see later with: dynaforge-client results {model_id}",
            code="TIMEOUT",
        ) from None
    finally:
        for bar in bars.values():
            bar.close()


def _show_results(results: ModelResults, out: Output, as_json: bool) -> None:
    if as_json:
        out.print(json.dumps(results_json(results), indent=2))
    else:
        out.print(results_text(results))


def _failed(results: ModelResults, out: Output) -> int:
    for e in results.failed:
        print(f"error: the evaluation on {e.dataset.name} failed: {e.error or 'no reason given'}", file=out.stderr)
    return 1 if results.failed else 0


async def cmd_submit(client: AsyncClient, args: argparse.Namespace, out: Output) -> int:
    card = {
        key: value
        for key, value in {
            "license": args.card_license,
            "description": args.card_description,
            "paper": args.card_paper,
            "parameters": args.card_parameters,
            "trainingData": args.card_training_data,
        }.items()
        if value is not None
    }
    common: dict[str, Any] = dict(name=args.name, card=card or None, published=args.published, anonymous=args.anonymous)
    if args.folder is not None:
        bar, progress = _bytes_bar(out, "upload")
        try:
            model = await client.submit_model(
                args.task, path=args.folder, options=dict(args.option) or None, progress=progress, **common
            )
        finally:
            bar.close()
    else:
        model = await client.submit_model(args.task, url=args.url_model, **common)
    out.print(model.id)
    out.info(f'submitted "{model.name}" to {model.task.code} as model {model.id} ({_enum(model.status)})')
    if not args.wait:
        out.info(f"follow it with: dynaforge-client results {model.id} --wait")
        return 0
    results = await _follow(client, model.id, out, args.timeout)
    _show_results(results, out, as_json=False)
    return _failed(results, out)


async def cmd_results(client: AsyncClient, args: argparse.Namespace, out: Output) -> int:
    if args.wait:
        results = await _follow(client, args.model, out, args.timeout)
    else:
        results = await client.results(args.model)
    _show_results(results, out, args.json)
    return _failed(results, out) if args.wait else 0


async def cmd_leaderboard(client: AsyncClient, args: argparse.Namespace, out: Output) -> int:
    board = await client.leaderboard(
        args.task,
        dict(args.weight) or None,
        dataset_weights=dict(args.dataset_weight) or None,
        sort_metric=args.sort_metric,
    )
    if args.json:
        data = {
            "task": board.board.task_code,
            "principal_metric": board.board.principal_metric,
            "metric_weights": board.metric_weights,
            "dataset_weights": {w.name: w.weight for w in board.board.dataset_weights},
            "rows": board.records(),
        }
        out.print(json.dumps(data, indent=2))
    elif args.csv:
        writer = csv.writer(out.stdout, lineterminator="\n")
        header, rows = leaderboard_rows(board)
        writer.writerow(header)
        writer.writerows(rows)
        out.stdout.flush()
    else:
        out.print(leaderboard_text(board, args.task))
    return 0


def _size(count: int) -> str:
    size = float(count)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{count} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{count} bytes"


async def cmd_export(client: AsyncClient, args: argparse.Namespace, out: Output) -> int:
    lines = args.format == "jsonl"
    bar, progress = _bytes_bar(out, "export")
    try:
        if args.output == "-":
            written = count = 0
            sink = out.stdout.buffer if hasattr(out.stdout, "buffer") else None
            async for chunk in client.stream_export(
                args.task, args.round, status=args.status, format=args.format, progress=progress
            ):
                if sink is not None:
                    sink.write(chunk)
                    sink.flush()
                else:
                    out.stdout.write(chunk.decode("utf-8", errors="replace"))
                written += len(chunk)
                count += chunk.count(b"\n")
            where = "stdout"
        else:
            path = await client.download_export(
                args.task, args.output, args.round, status=args.status, format=args.format, progress=progress
            )
            written = path.stat().st_size
            count = _count_lines(path) if lines else 0
            where = str(path)
    finally:
        bar.close()
    what = f"{count} examples ({_size(written)})" if lines else _size(written)
    message = f"wrote {what} to {where}"
    if args.output == "-":
        out.info(message)
    else:
        out.print(message)
    if client.last_export_note:  # an empty export: the server says why
        print(f"note: {client.last_export_note}", file=out.stderr)
    return 0


def _count_lines(path: Path) -> int:
    count = 0
    with path.open("rb") as handle:
        for line in handle:
            count += bool(line.strip())
    return count


async def _check_watcher(client: AsyncClient, task: str) -> None:
    """Fail at once, with the typed error, where the subscription would be refused: no such task, no token, or a
    token the server does not accept (reads take a refused token as anonymous, so ask who it signs in)."""
    await client.task(task)
    if client.token is None:
        raise errors.NotAuthenticated("watching needs a signed-in user: pass --token or set DYNAFORGE_TOKEN")
    await client.me()  # NotAuthenticated when the token signs nobody in


async def cmd_watch(client: AsyncClient, args: argparse.Namespace, out: Output) -> int:
    await _check_watcher(client, args.task)
    stream = client.model_fooled(args.task, after=args.after, max_attempts=args.max_attempts)
    iterator = stream.__aiter__()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)  # else Ctrl-C is a KeyboardInterrupt, which main() takes too
            handled.append(sig)
    logger = logging.getLogger(_LOGGER)
    gaps_told = 0

    def no_gap_logs(record: logging.LogRecord) -> bool:
        return not hasattr(record, "dynaforge_gap")  # events.py marks its gap warnings; watch reports gaps itself

    logger.addFilter(no_gap_logs)
    received = 0
    pending: asyncio.Future | None = None
    stopping = asyncio.ensure_future(stop.wait())
    out.info(f"watching the examples that fool the {args.task} model (Ctrl-C to stop)")
    try:
        while args.limit is None or received < args.limit:
            if pending is None:
                pending = asyncio.ensure_future(iterator.__anext__())
            done, _ = await asyncio.wait({pending, stopping}, timeout=1.0, return_when=asyncio.FIRST_COMPLETED)
            for gap in stream.gaps[gaps_told:]:
                out.warn(f"{gap.reason} (at {gap.at:%Y-%m-%d %H:%M:%S} UTC)")
            gaps_told = len(stream.gaps)
            if pending in done:
                finished, pending = pending, None
                try:
                    example = finished.result()
                except StopAsyncIteration:
                    break
                received += 1
                if args.json:
                    out.print(json.dumps(example.model_dump(mode="json", by_alias=True), ensure_ascii=False))
                else:
                    out.print(example_line(example))
            elif stopping in done:
                break
    finally:
        stopping.cancel()
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pending
        with contextlib.suppress(Exception):
            await iterator.aclose()  # type: ignore[attr-defined]
        for sig in handled:
            loop.remove_signal_handler(sig)
        logger.removeFilter(no_gap_logs)
        _tell_last(stream.last_id, received, out)
    return 0


def _tell_last(last_id: str | None, received: int, out: Output) -> None:
    if last_id is None:
        print(f"received {received} examples", file=out.stderr, flush=True)
    else:
        print(f"received {received} examples; last id {last_id} (resume with --after {last_id})", file=out.stderr,
              flush=True)  # fmt: skip


async def cmd_login(client: AsyncClient, args: argparse.Namespace, out: Output) -> int:
    if args.password is not None:
        password = args.password
    elif args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = getpass.getpass(f"password for {args.username}: ")
    user = await client.login(args.username, password)
    out.print(str(client.token))
    out.info(f"signed in as {user.username}; use the token with: export DYNAFORGE_TOKEN=<the token above>")
    return 0


COMMANDS: dict[str, Callable[[AsyncClient, argparse.Namespace, Output], Any]] = {
    "submit": cmd_submit,
    "results": cmd_results,
    "leaderboard": cmd_leaderboard,
    "export": cmd_export,
    "watch": cmd_watch,
    "login": cmd_login,
}


# -- entry point -------------------------------------------------------------------------------------------------


def _setup_logging() -> None:
    logger = logging.getLogger(_LOGGER)
    if not any(getattr(h, "_dynaforge_cli", False) for h in logger.handlers):
        handler = logging.StreamHandler()  # sys.stderr, looked up at each record
        handler.setFormatter(logging.Formatter("warning: %(message)s"))
        handler._dynaforge_cli = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    logger.propagate = False


def print_error(exc: errors.DynaforgeError, stream: TextIO | None = None) -> None:
    stream = stream or sys.stderr
    print(f"error: {exc.code}: {exc.message}", file=stream)
    for problem in exc.field_errors:
        where = problem.path or "(input)"
        print(f"  {where}: {problem.message} ({problem.rule})", file=stream)
    if exc.retry_after:
        print(f"  try again in {exc.retry_after:.0f} s", file=stream)
    stream.flush()


async def _run(args: argparse.Namespace, out: Output) -> int:
    async with AsyncClient(args.url, args.token or None) as client:
        return await COMMANDS[args.command](client, args, out)


def _usage_problems(args: argparse.Namespace) -> list[str]:
    """What argparse cannot check itself."""
    problems = []
    if args.command == "submit":
        if (args.folder is None) == (args.url_model is None):
            problems.append("give a model FOLDER or --url-model URL (one of them)")
        elif args.folder is not None and not args.folder.is_dir():
            problems.append(f"{args.folder} is not a folder: pass the folder that save_pretrained wrote")
        if args.url_model is not None and args.option:
            problems.append("--option applies to an uploaded model FOLDER, not to --url-model")
    if args.command in ("submit", "results") and args.timeout is not None and not args.wait:
        problems.append("--timeout goes with --wait")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.url = getattr(args, "url", None) or os.environ.get("DYNAFORGE_URL") or DEFAULT_URL
    args.token = getattr(args, "token", None) or os.environ.get("DYNAFORGE_TOKEN") or None
    args.quiet = getattr(args, "quiet", False)
    if not args.url.startswith(("http://", "https://")):
        parser.command_error(args.command, f"--url must start with http:// or https://, not {args.url!r}")
    for problem in _usage_problems(args):
        parser.command_error(args.command, problem)
    _setup_logging()
    out = Output(args.quiet)
    try:
        return asyncio.run(_run(args, out))
    except errors.DynaforgeError as exc:
        print_error(exc)
    except KeyboardInterrupt:
        if args.command == "watch":
            return 0  # Ctrl-C where no signal handler could be installed: cmd_watch has told the last id
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (| head): stop quietly, and keep Python from complaining when it flushes stdout
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
