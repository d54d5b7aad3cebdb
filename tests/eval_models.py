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
