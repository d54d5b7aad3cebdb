"""Conformance of every installed task plugin, through the kit plugin authors use (dynaforge.conformance and its
pytest form, dynaforge.testing): one test per registered task and check.

Whatever a community adds, a task must: declare itself consistently (fields, metrics, perturbations and slices
that exist), publish a JSON Schema that matches its fields, ship sample examples and demo contexts that pass its
own validation, keep every sample valid under each of its perturbations, and come with default target models that
load offline and answer its samples with predictions the task can read and judge.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dynaforge.inference import engine
from dynaforge.plugins import Plugins
from dynaforge.testing import parametrize_with_checks

PLUGINS = Plugins()
TASKS = sorted(PLUGINS.registry.tasks)

# One worker runs this module: the local engine it starts serves every check that needs it, and stops with it.
pytestmark = pytest.mark.xdist_group("local-engine")


@pytest.fixture(scope="module")
def local_engine() -> Iterator[None]:
    """The local engine (llama.cpp serving Gemma 3 270M) where the generative tasks' default targets expect it,
    started for these checks when nothing answers there; where it cannot run, their default-models check fails and
    says so, as `dynaforge check` would."""
    url = engine.llm_url()
    process = None
    if not engine.answers(url) and engine.available() is None:
        process = engine.start(url, wait_s=180)
    try:
        yield
    finally:
        if process is not None:
            engine.stop(process)


def test_the_six_tasks_are_installed_and_no_plugin_is_broken():
    assert PLUGINS.errors == {}
    assert {"nli", "qa", "sentiment", "hatespeech", "translate-fr-en", "redteam"} <= set(TASKS)


@parametrize_with_checks(TASKS)
def test_task_conforms(check, local_engine):
    check()
