"""``dynaforge-client``, the command line, run as a subprocess against a real server (SQLite and PostgreSQL): submit
and wait, results, leaderboard, export, watch (with Ctrl-C and a dropped connection), login, and its errors."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import signal
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass

import pytest
from conftest import client_cli

from dynaforge_client import Client

FOOLS = "I loved every minute of this wonderful, moving film"  # the target model says positive
TIMEOUT = 120


def cli_env(server, token: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DYNAFORGE_")}
    env["DYNAFORGE_URL"] = server.url
    if token is not None:
        env["DYNAFORGE_TOKEN"] = token
    return env


def cli(server, *args: str, token: str | None = "operator", input: str | None = None, timeout: float = TIMEOUT):
    """Run ``dynaforge-client ARGS`` with the server's address and a token (default: the admin's) in the env."""
    token = server.token if token == "operator" else token
    return subprocess.run(
        [client_cli(), *args],
        env=cli_env(server, token),
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout


def failed(result: subprocess.CompletedProcess, code: int = 1) -> str:
    assert result.returncode == code, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    return result.stderr


def signed_up(server, name: str) -> Client:
    client = Client(server.url)
    client.register(name, f"{name}@example.org", f"{name} password 123")
    return client


def read_line(stream, timeout: float) -> str:
    """The next line of a child's pipe, or "" after ``timeout`` seconds."""
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return lines[0] if lines else ""


@dataclass
class Submitted:
    model_id: str
    name: str
    token: str
    stdout: str
    stderr: str


@pytest.fixture(scope="module")
def submitted(server) -> Submitted:
    """The tiny sentiment model, submitted --published --wait by a new user (submissions are limited per user)."""
    suffix = uuid.uuid4().hex[:8]
    with signed_up(server, f"cli{suffix}") as client:
        token = client.token
    name = f"cli-model-{suffix}"
    result = cli(
        server, "submit", "sentiment", str(server.model_folder), "--name", name, "--published", "--card-license",
        "MIT", "--card-description", "a tiny model for the CLI's tests", "--wait", "--timeout", "300",
        token=token, timeout=400,
    )  # fmt: skip
    stdout = ok(result)
    return Submitted(stdout.splitlines()[0].strip(), name, token, stdout, result.stderr)


def test_submit_wait_prints_results(server, submitted):
    lines = submitted.stdout.splitlines()
    assert lines[0] == submitted.model_id and " " not in submitted.model_id
    text = "\n".join(lines[1:])
    assert f'model {submitted.model_id} "{submitted.name}" (sentiment): DONE' in text
    assert "95% INTERVAL" in text and "THROUGHPUT" in text
    rows = [line.split() for line in lines if line.startswith("client-test ")]
    assert {"accuracy", "robustness"} <= {row[1] for row in rows}, text  # robustness: added as the model ends
    # the card went with the upload; stderr was not a terminal, so no progress bars (tqdm's "\r")
    with Client(server.url, submitted.token) as client:
        card = client.results(submitted.model_id).model.card
    assert (card.license, card.description) == ("MIT", "a tiny model for the CLI's tests")
    assert "\r" not in submitted.stderr
    assert "client-test: DONE" in submitted.stderr


def test_results(server, submitted):
    data = json.loads(ok(cli(server, "results", submitted.model_id, "--json")))
    assert data["status"] == "DONE" and data["done"] is True
    assert data["model"]["id"] == submitted.model_id and data["model"]["name"] == submitted.name
    accuracy = [r for r in data["records"] if r["dataset"] == "client-test" and r["metric"] == "accuracy"]
    assert len(accuracy) == 1 and 0 <= accuracy[0]["value"] <= 1
    assert {"low", "high", "throughput", "memory_gib"} <= set(accuracy[0])
    assert [e["status"] for e in data["evaluations"] if e["dataset"] == "client-test"] == ["DONE"]

    text = ok(cli(server, "results", submitted.model_id, "--wait", "-q", token=submitted.token))  # done: at once
    assert "client-test" in text and "accuracy" in text
    # each perturbed copy's consistency and what it counts for, below the metrics
    perturbations = text.split("PERTURBATION", 1)[1]
    assert "CONSISTENCY" in perturbations and "robustness" in perturbations, text

    stderr = failed(cli(server, "results", "TW9kZWw6OTk5OTk5"))  # a well-formed id of no model
    assert stderr.startswith("error: NOT_FOUND: "), stderr


def test_leaderboard(server, submitted):
    args = ["leaderboard", "sentiment", "--weight", "accuracy=4", "--weight", "macro_f1=2", "--json"]
    data = json.loads(ok(cli(server, *args, token=None)))  # anyone may read it
    weights = data["metric_weights"]  # normalised by the server
    assert data["task"] == "sentiment" and weights["accuracy"] == pytest.approx(2 * weights["macro_f1"])
    mine = [row for row in data["rows"] if row["model_id"] == submitted.model_id]
    assert len(mine) == 1 and mine[0]["model"] == submitted.name and mine[0]["submitter"].startswith("cli")
    assert 0 <= mine[0]["accuracy"] <= 1 and "dynascore" in mine[0] and "rank" in mine[0]

    rows = list(csv.DictReader(io.StringIO(ok(cli(server, "leaderboard", "sentiment", "--csv", "--sort-metric",
                                                  "accuracy")))))  # fmt: skip
    assert submitted.model_id in {row["model_id"] for row in rows}
    assert list(rows[0])[:5] == ["rank", "model_id", "model", "submitter", "dynascore"]

    text = ok(cli(server, "leaderboard", "sentiment", "--weight", "accuracy=2.5"))
    assert "RANK" in text and "DYNASCORE" in text and "weights: accuracy " in text
    assert any(submitted.name in line and submitted.model_id in line for line in text.splitlines())

    stderr = failed(cli(server, "leaderboard", "sentiment", "--weight", "accuracy"), 2)
    assert "--weight" in stderr and "expected NAME=VALUE" in stderr
    stderr = failed(cli(server, "leaderboard", "sentiment", "--weight", "accuracy=much"), 2)
    assert "must be a number" in stderr
    failed(cli(server, "leaderboard", "sentiment", "--json", "--csv"), 2)


def test_export(server, unique, tmp_path):
    statements = [f"{FOOLS} {unique} {i}." for i in range(2)]
    with signed_up(server, f"ex{unique}") as client:
        ids = {client.create_example("sentiment", {"statement": s, "label": "negative"}).id for s in statements}

    target = tmp_path / "sentiment.jsonl"
    stdout = ok(cli(server, "export", "sentiment", "-o", str(target)))
    records = [json.loads(line) for line in target.read_text().splitlines() if line.strip()]
    assert f"wrote {len(records)} examples" in stdout and str(target) in stdout
    found = [r for r in records if any(s in json.dumps(r) for s in statements)]
    assert len(found) == 2, records[-3:]

    result = cli(server, "export", "sentiment", "-o", "-")
    streamed = [json.loads(line) for line in ok(result).splitlines() if line.strip()]
    assert len([r for r in streamed if any(s in json.dumps(r) for s in statements)]) == 2
    assert f"wrote {len(streamed)} examples" in result.stderr and "stdout" in result.stderr
    assert ids  # created through the client, exported through the command

    stderr = failed(cli(server, "export", "no-such-task", "-o", str(tmp_path / "nothing.jsonl")))
    assert stderr.startswith("error: NOT_FOUND: ") and not (tmp_path / "nothing.jsonl").exists()
    failed(cli(server, "export", "sentiment"), 2)  # -o is required


def test_watch_prints_what_fools_the_model(server, unique):
    with signed_up(server, f"wa{unique}") as client:
        anchor = client.create_example("sentiment", {"statement": f"A fine film {unique}.", "label": "positive"})
        process = subprocess.Popen(
            [client_cli(), "watch", "sentiment", "--after", anchor.id, "--limit", "1", "--json"],
            env=cli_env(server, server.token), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert "watching" in read_line(process.stderr, 60)
            # written after the command started: sent live, or replayed after --after if it came first
            fooled = client.create_example("sentiment", {"statement": f"{FOOLS} {unique}.", "label": "negative"})
            assert fooled.fooled is not False
            stdout, stderr = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
    # nothing but the command's own lines: no asyncio complaint about a generator or task left open on close
    assert [line for line in stderr.splitlines() if not line.startswith(("watching", "received"))] == [], stderr
    lines = stdout.splitlines()
    assert len(lines) == 1, stdout
    event = json.loads(lines[0])
    assert event["id"] == fooled.id and event["fields"]["statement"] == f"{FOOLS} {unique}."
    assert event["fooled"] is True and event["prediction"]["label"] == "positive"
    assert f"--after {fooled.id}" in stderr

    # resuming after the anchor replays it (and the plain output is one line per example)
    stdout = ok(cli(server, "watch", "sentiment", "--after", anchor.id, "--limit", "1", timeout=60))
    assert stdout.startswith(f"{fooled.id}  round ") and f'statement="{FOOLS} {unique}."' in stdout
    assert "-> model: positive" in stdout and len(stdout.splitlines()) == 1


def test_watch_stops_cleanly_on_ctrl_c(server, unique):
    with signed_up(server, f"wc{unique}") as client:
        anchor = client.create_example("sentiment", {"statement": f"A fine film {unique}.", "label": "positive"})
    process = subprocess.Popen(
        [client_cli(), "watch", "sentiment", "--after", anchor.id],
        env=cli_env(server, server.token), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert "watching" in read_line(process.stderr, 60)
        time.sleep(1.0)  # subscribed, waiting for events
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr and "error" not in stderr, stderr
    assert f"(resume with --after {anchor.id})" in stderr  # nothing new: the id it was given


async def test_watch_warns_of_a_gap(server, proxy):
    """The connection drops before any event: the stream reconnects, and the command says events may be lost."""
    env = cli_env(server, server.token)
    env["DYNAFORGE_URL"] = proxy.url
    process = await asyncio.create_subprocess_exec(
        client_cli(), "watch", "sentiment", env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    stderr: list[str] = []

    async def wait_for(text: str, timeout: float) -> None:
        async def scan() -> None:
            while not any(text in line for line in stderr):
                line = (await process.stderr.readline()).decode()
                assert line, "".join(stderr)
                stderr.append(line)

        await asyncio.wait_for(scan(), timeout)

    try:
        await wait_for("watching", 60)
        for _ in range(30):  # drop every connection until one drop lands on the subscription
            proxy.cut()
            proxy.restore()
            try:
                await wait_for("events may have been missed", 1.0)
                break
            except TimeoutError:
                continue
        assert any("events may have been missed" in line for line in stderr), "".join(stderr)
        process.send_signal(signal.SIGINT)
        rest = await asyncio.wait_for(process.stderr.read(), 30)
        stderr.append(rest.decode())
        assert await asyncio.wait_for(process.wait(), 30) == 0, "".join(stderr)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    text = "".join(stderr)
    gaps = [line for line in text.splitlines() if "events may have been missed" in line]
    assert gaps and gaps[0].startswith("warning: reconnected, no event had been received yet: "), text
    assert all(" UTC)" in line for line in gaps), text  # told by the command, not also by the library's log
    assert "received 0 examples" in text and "Traceback" not in text


def test_login(server, unique):
    name = f"lo{unique}"
    signed_up(server, name).close()
    token = ok(cli(server, "login", name, "--password", f"{name} password 123", token=None)).strip()
    with Client(server.url, token) as client:
        assert client.me().username == name
    token = ok(cli(server, "login", name, "--password-stdin", input=f"{name} password 123\n", token=None)).strip()
    with Client(server.url, token) as client:
        assert client.me().username == name

    stderr = failed(cli(server, "login", name, "--password", "not the password", token=None))
    assert stderr.startswith("error: INVALID_CREDENTIALS: "), stderr


def test_errors(server, unique, tmp_path):
    # a bad token, where one is needed (reads of public data pass as anonymous): the typed error, no traceback
    bad = "df_not_a_real_token"
    stderr = failed(cli(server, "export", "sentiment", "-o", str(tmp_path / "out.jsonl"), token=bad))
    assert stderr.startswith("error: NOT_AUTHENTICATED: "), stderr
    stderr = failed(cli(server, "submit", "sentiment", "--url-model", "https://example.org/model", token=bad))
    assert stderr.startswith("error: NOT_AUTHENTICATED: "), stderr
    stderr = failed(cli(server, "watch", "sentiment", "--limit", "1", token=bad))
    assert stderr.startswith("error: NOT_AUTHENTICATED: "), stderr  # at once, not retried
    # an unknown task
    stderr = failed(cli(server, "leaderboard", "no-such-task"))
    assert stderr.startswith("error: NOT_FOUND: "), stderr
    stderr = failed(cli(server, "watch", "no-such-task", "--limit", "1"))
    assert stderr.startswith("error: NOT_FOUND: "), stderr
    stderr = failed(cli(server, "watch", "sentiment", "--limit", "1", token=None))
    assert stderr.startswith("error: NOT_AUTHENTICATED: "), stderr
    # refused input: one line per field
    with signed_up(server, f"er{unique}") as client:
        token = client.token
    stderr = failed(cli(server, "submit", "sentiment", "--url-model", "ftp://example.org/model", token=token))
    lines = stderr.splitlines()
    assert lines[0].startswith("error: INVALID_INPUT: "), stderr
    assert len(lines) >= 2 and all(line.startswith("  ") for line in lines[1:]), stderr
    # the server cannot be reached
    result = subprocess.run(
        [client_cli(), "--url", "http://127.0.0.1:9", "results", "TW9kZWw6MQ=="],
        env=cli_env(server, None), capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert failed(result).splitlines()[-1].startswith("error: TRANSPORT: cannot reach the server")

    # usage errors exit 2, as argparse's own
    assert "usage:" in failed(cli(server), 2)
    assert "the following arguments are required: MODEL_ID" in failed(cli(server, "results"), 2)
    stderr = failed(cli(server, "submit", "sentiment", str(server.model_folder), "--url-model", "https://x.org"), 2)
    assert "one of them" in stderr
    assert "is not a folder" in failed(cli(server, "submit", "sentiment", str(tmp_path / "missing")), 2)
    assert "--timeout goes with --wait" in failed(cli(server, "results", "x", "--timeout", "5"), 2)
    assert "must start with http" in failed(cli(server, "results", "x", "--url", "ftp://x"), 2)
    assert "invalid choice" in failed(cli(server, "no-such-command"), 2)
