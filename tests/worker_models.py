"""Models for the worker tests, imported by the model-worker process through the python backend."""

from __future__ import annotations

import os
import time


def echo(inputs):
    """Upper-cases each text and says which process answered."""
    return [{"label": item["text"].upper(), "pid": os.getpid()} for item in inputs]


def slow(inputs):
    time.sleep(3.0)
    return echo(inputs)
