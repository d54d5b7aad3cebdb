"""Models for the evaluation job tests, loaded by the runner's child process through the python backend."""

from __future__ import annotations


def keyword_sentiment(inputs):
    """positive when the statement has the word 'good', negative otherwise (it never says neutral)."""
    return [
        {"label": "positive" if "good" in item["statement"].lower().split() else "negative", "probabilities": {}}
        for item in inputs
    ]


def keyword_toy(inputs):
    """The toy task's keyword model, case-sensitive: an upper-cased 'GOOD' is not 'good'."""
    return [{"label": "good" if "good" in item["text"].split() else "bad", "probabilities": {}} for item in inputs]


def slow_toy(inputs):
    """keyword_toy, a quarter of a second per batch (so that a test can kill the job between chunks)."""
    import time

    time.sleep(0.25)
    return keyword_toy(inputs)


def report_confinement(inputs):
    """keyword_toy's labels, each with what the model's process sees and may do (for the sandbox tests): its
    environment's names, its resource limits, and what became of a connection to ``DYNAFORGE_EVAL_PROBE_PORT`` on
    loopback (a port the test listens on)."""
    import os
    import resource
    import socket

    connection = "no port to try"
    if port := os.environ.get("DYNAFORGE_EVAL_PROBE_PORT"):
        try:
            with socket.create_connection(("127.0.0.1", int(port)), timeout=2):
                connection = "connected"
        except OSError as exc:
            connection = f"{type(exc).__name__}: {exc.strerror or exc}"
    report = {
        "environment": sorted(os.environ),
        "values": sorted(os.environ.values()),
        "memory": resource.getrlimit(resource.RLIMIT_DATA)[0],
        "cpu": resource.getrlimit(resource.RLIMIT_CPU)[0],
        "open_files": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
        "connection": connection,
        "pid": os.getpid(),
    }
    return [dict(answer, report=report) for answer in keyword_toy(inputs)]


def hoard_memory(inputs):
    """Asks for 2 GiB at once."""
    block = bytearray(2 * 1024**3)
    return [{"label": "good", "probabilities": {}, "size": len(block)} for _ in inputs]


def spin(inputs):
    """Burns CPU for a minute."""
    import time

    end = time.monotonic() + 60
    while time.monotonic() < end:
        sum(range(10_000))
    return keyword_toy(inputs)


def hang(inputs):
    """Writes its pid to DYNAFORGE_EVAL_PROBE_DIR/pid, then never answers."""
    import os
    import pathlib
    import time

    if folder := os.environ.get("DYNAFORGE_EVAL_PROBE_DIR"):
        pathlib.Path(folder, "pid").write_text(str(os.getpid()))
    time.sleep(3600)
    return keyword_toy(inputs)


def sleepy_toy(inputs):
    """keyword_toy, two seconds per batch: an evaluation that holds its worker thread for a while."""
    import time

    time.sleep(2.0)
    return keyword_toy(inputs)
