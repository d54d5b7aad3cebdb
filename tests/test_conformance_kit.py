"""The conformance kit itself (dynaforge.conformance, `dynaforge check`, dynaforge.testing): on a task that passes
every check and one that fails each in a known way (conformance_kit_plugin), and the names a task declares checked
against the registries when plugins load."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import conformance_kit_plugin as kit
import pytest

from dynaforge import (
    DataSelection,
    Metric,
    ModelSpec,
    NumberField,
    Perturbation,
    Role,
    Slice,
    Task,
    TextField,
    hookimpl,
)
from dynaforge.conformance import CHECKS, ServerLimits, run_checks
from dynaforge.plugins import Plugins

HERE = Path(__file__).parent
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def plugins():
    return Plugins(allowlist=set(), extra=[kit])


NO_SELECTIONS = "the task takes no data selections"
RULE_DECIDES = "the task's rule decides its verdicts at once"
SKIPPED = {"data-selection": NO_SELECTIONS, "verdicts": RULE_DECIDES}


async def test_a_conforming_task_passes_every_check(plugins):
    results = await run_checks(plugins, ["kit-good", "kit-select"])
    assert [(r.task, r.check, r.problems, r.skipped) for r in results] == [
        *[("kit-good", c.name, (), SKIPPED.get(c.name)) for c in CHECKS],
        *[("kit-select", c.name, (), RULE_DECIDES if c.name == "verdicts" else None) for c in CHECKS],
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
    registered = "registered: http, kserve, openai, python, transformers"
    assert f"default model m: backend 'onnx' is not registered ({registered})" in errors[0]
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


def test_names_scoped_to_another_task_break_the_plugin_at_load():
    """A subclass inherits its parent's slice names, not their scope: refused at load, with what to do, rather than
    failing every evaluation."""

    class Parent(kit.ConformingTask):
        code = "kit-parent"
        fairness_slices = ("kit-parent-length",)

    class Child(Parent):
        code = "kit-child"

    length = Slice("kit-parent-length", lambda fields: str(len(fields["text"]) > 10), task_code="kit-parent")
    p = Plugins(
        allowlist=set(),
        extra=[kit, _plugin("slices", length, hook="register_fairness_slices"), _plugin("parent", Parent()),
               _plugin("child", Child())],
    )  # fmt: skip
    assert "kit-parent" in p.registry.tasks and "kit-child" not in p.registry.tasks
    assert p.errors == {
        "child": "register_tasks failed: PluginError: task 'kit-child': fairness slice 'kit-parent-length' belongs to "
        "task 'kit-parent' (registered by slices with task_code='kit-parent'), not to 'kit-child': register one for "
        "'kit-child' (task_code='kit-child'), or make it shared (task_code=None)"
    }
    scoped = _plugin(
        "scoped",
        Metric("kit-parent-metric", lambda golds, preds: 0.0, task_code="kit-parent"),
        hook="register_metrics",
    )
    shout = Perturbation("kit-parent-shout", kit.shout, task_code="kit-parent")
    scoped_perturbation = _plugin("scoped-perturbation", shout, hook="register_perturbations")
    borrower = _task("kit-borrower", metrics=("accuracy", "kit-parent-metric"), perturbations=("kit-parent-shout",))
    owner = _task("kit-parent", metrics=("accuracy", "kit-parent-metric"), perturbations=("kit-parent-shout",))
    p = Plugins(allowlist=set(), extra=[scoped, scoped_perturbation, _plugin("borrower", borrower),
                                        _plugin("owner", owner)])  # fmt: skip
    assert "kit-parent" in p.registry.tasks and set(p.errors) == {"borrower"}
    assert "metric 'kit-parent-metric' belongs to task 'kit-parent'" in p.errors["borrower"]
    assert "perturbation 'kit-parent-shout' belongs to task 'kit-parent'" in p.errors["borrower"]


def test_a_metric_needing_probabilities_fits_only_a_task_with_one_choice_target():
    fields = (TextField(name="text", role=Role.INPUT), NumberField(name="stars", role=Role.TARGET))
    stars = _task("kit-stars", fields=fields, metrics=("ece",), principal_metric="ece")
    p = Plugins(allowlist=set(), extra=[kit, _plugin("stars", stars)])
    assert p.errors == {
        "stars": "register_tasks failed: PluginError: task 'kit-stars': metric 'ece' needs probabilities over the "
        "labels of the task's one choice target, and task 'kit-stars' has no such target: drop the metric"
    }


def zero_division(golds, preds):
    return len(golds) / 0


def upper_case_match(golds, preds):
    """A careless metric: it breaks on an item whose output was unusable (None)."""
    return sum(p.upper() == g.upper() for g, p in zip(golds, preds, strict=True)) / len(golds)


async def test_a_metric_that_raises_fails_the_kit_naming_it_and_where():
    metrics = _plugin(
        "raising", Metric("kit-zero", zero_division), Metric("kit-upper", upper_case_match), hook="register_metrics"
    )
    p = Plugins(allowlist=set(), extra=[kit, metrics, _plugin("task", _task("kit-raising", metrics=(
        "accuracy", "kit-zero", "kit-upper")))])  # fmt: skip
    found = {r.check: r.problems for r in await run_checks(p, ["kit-raising"], checks=["metrics", "default-models"])}
    assert found["metrics"] == (
        "metric kit-zero failed on stand-in predictions equal to the gold (the whole set): ZeroDivisionError: "
        "division by zero: an evaluation computes it there too, and would fail",
        "metric kit-upper failed on stand-in predictions with the first output unusable (None) (the whole set): "
        "AttributeError: 'NoneType' object has no attribute 'upper': an evaluation computes it there too, and would "
        "fail",
    )
    # and on what the default model answers, as its round's evaluations would
    assert found["default-models"] == (
        "metric kit-zero failed on default model keyword's answers (the whole set): ZeroDivisionError: division by "
        "zero: an evaluation computes it there too, and would fail",
    )


async def test_a_calibration_metric_asks_the_default_model_for_probabilities():
    calibrated = _task("kit-calibrated", metrics=("accuracy", "ece", "brier"))
    probable = _task(
        "kit-probable",
        metrics=("accuracy", "ece", "brier"),
        default_target_models=(ModelSpec("probable", "python", {"callable": "conformance_kit_plugin:"
                                                                            "probable_keyword_model"}),),
    )  # fmt: skip
    p = Plugins(allowlist=set(), extra=[kit, _plugin("calibrated", calibrated), _plugin("probable", probable)])
    results = await run_checks(p, ["kit-calibrated", "kit-probable"], checks=["metrics", "default-models"])
    assert [(r.task, r.check, r.problems) for r in results] == [
        ("kit-calibrated", "metrics", ()),  # the stand-in predictions carry probabilities
        (
            "kit-calibrated",
            "default-models",
            tuple(
                f"metric {name} has no value on default model keyword's answers: it skipped every item (no "
                "probabilities (3)); have the model give what the metric needs (probabilities), or drop the metric"
                for name in ("ece", "brier")
            ),
        ),
        ("kit-probable", "metrics", ()),
        ("kit-probable", "default-models", ()),
    ]


async def test_a_model_slower_than_the_server_waits_fails_the_kit(monkeypatch):
    slow = _task(
        "kit-slow", default_target_models=(ModelSpec("slow", "python", {"callable": "conformance_kit_plugin:"
                                                                                    "slow_keyword_model"}),)
    )  # fmt: skip
    p = Plugins(allowlist=set(), extra=[kit, _plugin("slow", slow)])
    monkeypatch.setenv("DYNAFORGE_INFERENCE_TIMEOUT_S", "0.05")  # what the server would wait, in the settings
    [result] = await run_checks(p, ["kit-slow"], checks=["default-models"])
    [problem] = result.problems
    assert re.fullmatch(
        r"default model slow took \d+\.\d\d s to answer sample \d alone, longer than the 0\.05 s the server waits for "
        r"a prediction \(DYNAFORGE_INFERENCE_TIMEOUT_S\): every example an annotator writes would be stored as "
        r"pending\. Make the model faster, or raise DYNAFORGE_INFERENCE_TIMEOUT_S on the server \(and here, to check "
        r"against it\)",
        problem,
    ), problem
    assert float(problem.split(" took ")[1].split()[0]) >= 0.15
    [within] = await run_checks(p, ["kit-slow"], checks=["default-models"], limits=ServerLimits(30.0, 300.0))
    assert within.passed


# ---------------------------------------------------------------- `dynaforge check`, as an author runs it


def _run(*args: str, cwd: Path = HERE, **env_vars: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "DYNAFORGE_LOAD_PLUGINS": "sentiment", **env_vars}
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
    assert lines[-1] == "7 passed, 0 failed, 2 skipped: 9 checks on 1 task"

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
        "metrics": "passed",
        "default-models": "skipped",
        "data-selection": "skipped",
        "adversaries": "passed",
        "verdicts": "skipped",
    }


def test_the_command_refuses_what_it_cannot_check():
    unknown = _run("--plugin", "conformance_kit_plugin", "--no-models", "kit-good", "nope")
    assert unknown.returncode == 2
    assert "no task nope (installed: " in unknown.stderr and "kit-good" in unknown.stderr
    missing = _run("--plugin", "no_such_plugin_module")
    assert missing.returncode == 2
    assert "--plugin no_such_plugin_module: cannot import it: ModuleNotFoundError" in missing.stderr


def test_the_command_reports_a_foreign_slice_as_a_broken_plugin(tmp_path):
    (tmp_path / "inheriting_plugin.py").write_text(
        textwrap.dedent(
            """
            from conformance_kit_plugin import ConformingTask
            from dynaforge import Slice, hookimpl

            class Parent(ConformingTask):
                code = "kit-parent"
                perturbations = ("typo",)
                fairness_slices = ("kit-parent-length",)

            class Child(Parent):
                code = "kit-child"

            @hookimpl
            def register_fairness_slices(register):
                register(Slice("kit-parent-length", lambda fields: "any", task_code="kit-parent"))

            @hookimpl
            def register_tasks(register):
                register(Parent())
                register(Child())
            """
        )
    )
    run = _run("--plugin", "inheriting_plugin", "--no-models", "--check", "declaration", cwd=tmp_path,
               PYTHONPATH=str(HERE))  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    assert (
        "FAIL  plugin inheriting_plugin is broken and was not loaded: register_tasks failed: PluginError: task "
        "'kit-child': fairness slice 'kit-parent-length' belongs to task 'kit-parent'" in run.stdout
    )
    assert run.stdout.splitlines()[-1].endswith("; 1 plugin broken")


def test_the_command_names_every_check_it_can_run():
    from click.testing import CliRunner

    from dynaforge.cli import main

    shown = CliRunner().invoke(main, ["check", "--help"], terminal_width=1000).output
    listed = re.search(r"Run only this check \(repeatable\): ([a-z, -]+)\.", " ".join(shown.split()))
    assert listed is not None, shown
    assert listed.group(1).split(", ") == [c.name for c in CHECKS]


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
    assert run.stdout.splitlines()[-1].startswith("5 failed, 9 passed, 4 skipped"), run.stdout
    assert "FAILED test_my_task.py::test_conforms[kit-broken-samples]" in run.stdout
    assert "TaskConformanceError: task kit-broken, check samples:" in run.stdout
    assert "  - sample_examples[1] fails validation" in run.stdout
    skipping = pytest_run("--dynaforge-skip-models")
    assert skipping.stdout.splitlines()[-1].startswith("4 failed, 8 passed, 6 skipped"), skipping.stdout


def test_the_reserved_names_are_the_leaderboards_own_columns():
    from dynaforge.services.leaderboard import EXTRA_METRICS
    from dynaforge.tasks.base import RESERVED_METRIC_NAMES

    assert [m.name for m in EXTRA_METRICS] == list(RESERVED_METRIC_NAMES)
