"""The conformance kit itself (dynaforge.conformance, `dynaforge check`, dynaforge.testing): on a task that passes
every check and one that fails each in a known way (conformance_kit_plugin), and the names a task declares checked
against the registries when plugins load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import conformance_kit_plugin as kit
import pytest

from dynaforge import DataSelection, Metric, ModelSpec, Task, hookimpl
from dynaforge.conformance import CHECKS, run_checks
from dynaforge.plugins import Plugins

HERE = Path(__file__).parent
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def plugins():
    return Plugins(allowlist=set(), extra=[kit])


NO_SELECTIONS = "the task takes no data selections"


async def test_a_conforming_task_passes_every_check(plugins):
    results = await run_checks(plugins, ["kit-good", "kit-select"])
    assert [(r.task, r.check, r.problems, r.skipped) for r in results] == [
        *[("kit-good", c.name, (), NO_SELECTIONS if c.name == "data-selection" else None) for c in CHECKS],
        *[("kit-select", c.name, (), None) for c in CHECKS],
    ]


async def test_a_data_selection_recipe_must_answer_as_a_model_does():
    class Selecting(kit.SelectingTask):
        code = "kit-select-broken"
        data_selection = DataSelection(budget=2, trainer="conformance_kit_plugin:batch_sensitive_model")

    p = Plugins(allowlist=set(), extra=[kit, _plugin("selecting", Selecting())])
    [result] = await run_checks(p, ["kit-select-broken"], checks=["data-selection"])
    assert result.problems == (
        "data_selection.trainer conformance_kit_plugin:batch_sensitive_model did not train on the samples and answer "
        "them: InferenceError: model 'conformance-selection' failed to load: TypeError: batch_sensitive_model() got "
        "an unexpected keyword argument 'examples'",
    )


async def test_each_check_says_what_is_wrong(plugins):
    found = {r.check: list(r.problems) for r in await run_checks(plugins, ["kit-broken"])}
    assert found["declaration"] == [
        "instructions are under 80 characters: tell annotators what fools the model and what is fair"
    ]
    assert found["json-schema"] == [
        "json_schema() properties ['label', 'text'] != the fields, in order ['text', 'label']"
    ]
    assert found["samples"] == [
        "sample_examples[1] fails validation: InvalidInput: Invalid input: label: must be one of good, bad; got 'meh'",
        "sample_examples[2] fails validation: InvalidInput: Invalid input: text: must have at most 60 characters, "
        "got 129",
    ]
    # only the sample that passes validation is perturbed; the others are the samples check's finding
    assert found["perturbations"] == [
        "perturbation kit-pad on sample_examples[0] changed the non-input fields ['label']",
        "perturbation kit-pad on sample_examples[0] is not reproducible: the same seed gave two different copies",
    ]
    # one valid sample: sent twice as a batch, then alone, where the model answers otherwise
    assert found["default-models"] == [
        "default model padding-bug answers sample 0 differently alone ({'label': 'bad'}) and in a batch "
        "({'label': 'good'})"
    ]


async def test_models_can_be_left_out_and_checks_chosen(plugins):
    results = await run_checks(plugins, ["kit-good"], models=False, checks=["samples", "default-models"])
    assert [(r.check, r.passed, r.skipped) for r in results] == [
        ("samples", True, None),
        ("default-models", True, "models not run (--no-models)"),
    ]
    with pytest.raises(KeyError, match="no task nope .installed: kit-broken, kit-good, kit-select"):
        await run_checks(plugins, ["nope"])
    with pytest.raises(KeyError, match="no check spelling"):
        await run_checks(plugins, ["kit-good"], checks=["spelling"])


async def test_a_check_that_raises_is_a_finding():
    class Raising(kit.ConformingTask):
        code = "kit-raising"

        def json_schema(self, *roles):
            raise RuntimeError("no schema today")

    class Plugin:
        @hookimpl
        def register_tasks(self, register):
            register(Raising())

    p = Plugins(allowlist=set(), extra=[kit, Plugin()])
    [result] = await run_checks(p, ["kit-raising"], checks=["json-schema"])
    assert result.problems == ("the check raised RuntimeError: no schema today",)


# ---------------------------------------------------------------- names checked when plugins load


def _task(code: str, **declared) -> Task:
    return type("Declared", (kit.ConformingTask,), {"code": code, **declared})()


def _plugin(name: str, *items, hook: str = "register_tasks"):
    """A plugin object called ``name`` whose ``hook`` registers ``items``."""

    class One:
        pass

    def register(self, register):
        for item in items:
            register(item)

    setattr(One, hook, hookimpl(register))
    one = One()
    one.__name__ = name
    return one


def test_a_task_naming_what_no_plugin_registered_is_broken_at_load():
    unknown_metric = _plugin("metric", _task("kit-metric", metrics=("accuracy", "acuracy")))
    unknown_backend = _plugin("backend", _task("kit-backend", default_target_models=(ModelSpec("m", "onnx", {}),)))
    p = Plugins(allowlist=set(), extra=[kit, unknown_metric, unknown_backend])
    assert set(p.registry.tasks) == {"kit-good", "kit-select", "kit-broken"}  # the others load
    errors = sorted(p.errors.values())
    assert "metric 'acuracy' is not registered by any loaded plugin (registered: accuracy," in errors[1]
    assert errors[1].startswith("register_tasks failed: PluginError: task 'kit-metric': ")
    assert "default model m: backend 'onnx' is not registered (registered: http, python, transformers)" in errors[0]
    unknown_perturbation = _plugin("pert", _task("kit-pert", perturbations=("kit-shout", "typos")))
    p = Plugins(allowlist=set(), extra=[unknown_perturbation])  # kit-shout comes with kit, which is not loaded
    [error] = p.errors.values()
    assert "perturbation 'kit-shout' is not registered" in error and "perturbation 'typos'" in error


def test_reserved_metric_names_are_refused():
    p = Plugins(
        allowlist=set(),
        extra=[
            _plugin("reserved-task", _task("kit-reserved", metrics=("accuracy", "throughput"))),
            _plugin("reserved-metric", Metric("memory", lambda golds, preds: 0.0), hook="register_metrics"),
        ],
    )
    errors = sorted(p.errors.values())
    assert len(errors) == 2
    assert "metric 'memory' is reserved: the leaderboard adds throughput, memory, robustness, fairness" in errors[0]
    assert "metrics ['throughput'] are reserved" in errors[1]
    assert "kit-reserved" not in p.registry.tasks and "memory" not in p.registry.metrics


# ---------------------------------------------------------------- `dynaforge check`, as an author runs it


def _run(*args: str, cwd: Path = HERE) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "DYNAFORGE_LOAD_PLUGINS": "sentiment"}
    return subprocess.run(
        [str(BIN / "dynaforge"), "--log-level", "WARNING", "check", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_command_reports_each_check_and_exits_by_the_outcome():
    ok = _run("--plugin", "conformance_kit_plugin", "kit-good")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    lines = ok.stdout.splitlines()
    assert lines[0].split() == ["ok", "kit-good", "declaration"]
    assert lines[-1] == "6 passed, 0 failed, 1 skipped: 7 checks on 1 task"

    broken = _run("--plugin", "conformance_kit_plugin", "--json", "--no-models", "kit-broken")
    assert broken.returncode == 1, broken.stderr
    report = json.loads(broken.stdout)
    assert report["broken_plugins"] == {}
    statuses = {r["check"]: r["status"] for r in report["results"]}
    assert statuses == {
        "declaration": "failed",
        "json-schema": "failed",
        "samples": "failed",
        "perturbations": "failed",
        "default-models": "skipped",
        "data-selection": "skipped",
        "adversaries": "passed",
    }


def test_the_command_refuses_what_it_cannot_check():
    unknown = _run("--plugin", "conformance_kit_plugin", "--no-models", "kit-good", "nope")
    assert unknown.returncode == 2
    assert "no task nope (installed: " in unknown.stderr and "kit-good" in unknown.stderr
    missing = _run("--plugin", "no_such_plugin_module")
    assert missing.returncode == 2
    assert "--plugin no_such_plugin_module: cannot import it: ModuleNotFoundError" in missing.stderr


# ---------------------------------------------------------------- the pytest form, in an author's own suite


def test_parametrize_with_checks_in_a_plugin_suite(tmp_path):
    (tmp_path / "test_my_task.py").write_text(
        textwrap.dedent(
            """
            from dynaforge.testing import parametrize_with_checks

            @parametrize_with_checks(["kit-good", "kit-broken"], plugins=["conformance_kit_plugin"])
            def test_conforms(check):
                check()
            """
        )
    )

    def pytest_run(*options: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHONPATH": str(HERE), "HF_HUB_OFFLINE": "1", "DYNAFORGE_LOAD_PLUGINS": "sentiment"}
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *options],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    run = pytest_run()
    assert run.returncode == 1
    assert run.stdout.splitlines()[-1].startswith("5 failed, 7 passed, 2 skipped"), run.stdout
    assert "FAILED test_my_task.py::test_conforms[kit-broken-samples]" in run.stdout
    assert "TaskConformanceError: task kit-broken, check samples:" in run.stdout
    assert "  - sample_examples[1] fails validation" in run.stdout
    skipping = pytest_run("--dynaforge-skip-models")
    assert skipping.stdout.splitlines()[-1].startswith("4 failed, 6 passed, 4 skipped"), skipping.stdout


def test_the_reserved_names_are_the_leaderboards_own_columns():
    from dynaforge.services.leaderboard import EXTRA_METRICS
    from dynaforge.tasks.base import RESERVED_METRIC_NAMES

    assert [m.name for m in EXTRA_METRICS] == list(RESERVED_METRIC_NAMES)
