"""Conformance of every installed task plugin, through the kit plugin authors use (dynaforge.conformance and its
pytest form, dynaforge.testing): one test per registered task and check.

Whatever a community adds, a task must: declare itself consistently (fields, metrics, perturbations and slices
that exist), publish a JSON Schema that matches its fields, ship sample examples and demo contexts that pass its
own validation, keep every sample valid under each of its perturbations, and come with default target models that
load offline and answer its samples with predictions the task can read and judge.
"""

from __future__ import annotations

from dynaforge.plugins import Plugins
from dynaforge.testing import parametrize_with_checks

PLUGINS = Plugins()
TASKS = sorted(PLUGINS.registry.tasks)


def test_the_four_tasks_are_installed_and_no_plugin_is_broken():
    assert PLUGINS.errors == {}
    assert {"nli", "qa", "sentiment", "hatespeech"} <= set(TASKS)


@parametrize_with_checks(TASKS)
def test_task_conforms(check):
    check()
