"""The plugin manager, without a database: registration hooks, event hooks, broken plugins, the allowlist, and the
example plugin of docs/plugins.md. Every hook in dynaforge/hookspecs.py has at least one test named after it here."""

from __future__ import annotations

import asyncio
import logging
import random
import re
import sys
import types
from pathlib import Path

import pytest

import dynaforge.plugins as plugins_module
from dynaforge import (
    ChoiceField,
    InvalidInput,
    Metric,
    ModelBackend,
    Perturbation,
    Role,
    Slice,
    Task,
    TextField,
    hookimpl,
)
from dynaforge.conformance import CHECKS, run_checks_sync
from dynaforge.errors import PluginError
from dynaforge.plugins import DEFAULT_PLUGINS, Plugins
from dynaforge.settings import Settings

DOCS = Path(__file__).resolve().parent.parent / "docs" / "plugins.md"


# --------------------------------------------------------------------------- helpers


def make_task(code: str, *, with_target: bool = True, name: str = "Temporary") -> Task:
    fields = [TextField(name="text", role=Role.INPUT, max_length=100)]
    if with_target:
        fields.append(ChoiceField(name="label", role=Role.TARGET))
    cls = type(
        f"Task_{code.replace('-', '_')}",
        (Task,),
        {"code": code, "name": name, "labels": ("yes", "no"), "fields": tuple(fields)},
    )
    return cls()


def task_plugin(class_name: str, *tasks: Task) -> object:
    """An instance of a fresh class named ``class_name`` whose register_tasks registers ``tasks``."""

    def register_tasks(self, register):
        for task in tasks:
            register(task)

    return type(class_name, (), {"register_tasks": hookimpl(register_tasks)})()


@pytest.fixture
def core():
    """Core defaults only, whatever else is installed."""
    return Plugins(allowlist=set())


# --------------------------------------------------------------------------- loading order, allowlist


def test_core_defaults_are_registered_first_and_marked_default(core):
    rows = core.info()
    assert [r.name for r in rows] == sorted(DEFAULT_PLUGINS)
    assert all(r.is_default and r.error is None for r in rows)
    assert core.registry.owners[("metrics", "accuracy")] == "dynaforge.defaults.metrics"
    assert core.registry.owners[("backends", "python")] == "dynaforge.defaults.backends.python"
    assert core.registry.owners[("perturbations", "typo")] == "dynaforge.defaults.perturbations"


def test_allowlist_with_sentiment_loads_sentiment():
    p = Plugins(allowlist={"sentiment"})
    assert p.errors == {}
    assert "sentiment" in p.registry.tasks
    row = next(r for r in p.info() if r.name == "sentiment")
    assert row.hooks == ("register_adversaries", "register_importers", "register_tasks")
    assert not row.is_default and row.version


def test_empty_allowlist_loads_no_entry_point_but_keeps_core_defaults(core):
    assert core.registry.tasks == {}
    assert {r.name for r in core.info()} == set(DEFAULT_PLUGINS)
    assert {"accuracy", "macro_f1"} <= set(core.registry.metrics)
    assert {"python", "transformers"} <= set(core.registry.backends)
    assert {"typo", "lowercase", "uppercase"} <= set(core.registry.perturbations)


def test_allowlist_of_unknown_name_loads_nothing_extra():
    p = Plugins(allowlist={"no-such-plugin"})
    assert p.registry.tasks == {} and p.errors == {}


def test_no_allowlist_loads_every_installed_plugin():
    p = Plugins()
    assert "sentiment" in p.registry.tasks


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, None), ("", set()), ("sentiment", {"sentiment"}), (" sentiment , formality ,", {"sentiment", "formality"})],
)
def test_load_plugins_setting_is_the_allowlist(raw, expected):
    assert Settings(load_plugins=raw).plugin_allowlist() == expected


# --------------------------------------------------------------------------- register_tasks


def test_register_tasks_from_a_temporary_plugin_object():
    task = make_task("temp-a")
    p = Plugins(allowlist=set(), extra=[task_plugin("TempA", task)])
    assert p.errors == {}
    assert p.task("temp-a") is task
    assert p.registry.owners[("tasks", "temp-a")] == "TempA"
    row = next(r for r in p.info() if r.name == "TempA")
    assert row.hooks == ("register_tasks",) and row.error is None and not row.is_default


def test_register_tasks_with_register_and_unregister(core):
    task = make_task("temp-b")
    core.register(task_plugin("TempB", task), "temp-b-plugin")
    try:
        assert core.task("temp-b") is task
        assert "temp-b-plugin" in {r.name for r in core.info()}
    finally:
        core.unregister("temp-b-plugin")
    assert core.task("temp-b") is None
    assert "temp-b-plugin" not in {r.name for r in core.info()}


def test_register_tasks_from_a_module_and_a_class():
    module = types.ModuleType("temp_module_plugin")
    module.register_tasks = hookimpl(lambda register: register(make_task("temp-module")))

    class ClassPlugin:
        @staticmethod
        @hookimpl
        def register_tasks(register):
            register(make_task("temp-class"))

    p = Plugins(allowlist=set(), extra=[module, ClassPlugin])
    assert p.errors == {}
    assert {"temp-module", "temp-class"} <= set(p.registry.tasks)
    assert p.registry.owners[("tasks", "temp-module")] == "temp_module_plugin"
    assert p.registry.owners[("tasks", "temp-class")] == "ClassPlugin"


def test_register_tasks_duplicate_code_reports_one_plugin_and_keeps_the_task():
    first, second = make_task("temp-dup"), make_task("temp-dup", name="Second")
    p = Plugins(allowlist=set(), extra=[task_plugin("DupFirst", first), task_plugin("DupSecond", second)])
    assert len(p.errors) == 1
    [(broken, error)] = p.errors.items()
    assert broken in {"DupFirst", "DupSecond"}
    assert "'temp-dup' is already registered by" in error
    assert p.task("temp-dup") in (first, second)
    assert p.registry.owners[("tasks", "temp-dup")] != broken
    assert next(r for r in p.info() if r.name == broken).error == error


def test_register_tasks_duplicate_code_is_blamed_on_the_later_plugin():
    for _ in range(30):
        first, second = make_task("temp-dup"), make_task("temp-dup", name="Second")
        p = Plugins(allowlist=set(), extra=[task_plugin("DupFirst", first), task_plugin("DupSecond", second)])
        assert set(p.errors) == {"DupSecond"}
        assert p.task("temp-dup") is first

        p = Plugins(allowlist={"sentiment"})
        with pytest.raises(PluginError, match="already registered by sentiment"):
            p.register(task_plugin("Intruder", make_task("sentiment")), "intruder")
        assert set(p.errors) == {"intruder"}
        assert p.registry.owners[("tasks", "sentiment")] == "sentiment"
        assert type(p.task("sentiment")).__name__ == "SentimentTask"


def test_register_tasks_bad_declaration_is_reported_and_others_load():
    p = Plugins(
        allowlist=set(),
        extra=[
            task_plugin("NoTarget", make_task("temp-no-target", with_target=False)),
            task_plugin("Fine", make_task("temp-fine")),
        ],
    )
    assert set(p.errors) == {"NoTarget"}
    assert "task 'temp-no-target'" in p.errors["NoTarget"]
    assert "a task needs at least one target field" in p.errors["NoTarget"]
    assert p.task("temp-no-target") is None
    assert p.task("temp-fine") is not None
    row = next(r for r in p.info() if r.name == "NoTarget")
    assert row.error == p.errors["NoTarget"] and not row.is_default


def test_register_tasks_bad_code_is_reported(core):
    with pytest.raises(PluginError, match="code must match"):
        core.register(task_plugin("BadCode", make_task("Not A Code")), "bad-code")
    try:
        assert "code must match" in core.errors["bad-code"]
        assert "Not A Code" not in core.registry.tasks
    finally:
        core.unregister("bad-code")


def test_register_tasks_rejects_objects_that_are_not_tasks():
    class NotATask:
        @hookimpl
        def register_tasks(self, register):
            register("sentiment")

    p = Plugins(allowlist=set(), extra=[NotATask()])
    assert "which is not a Task" in p.errors["NotATask"]


def test_register_tasks_failure_drops_everything_the_plugin_registered():
    class HalfBroken:
        @hookimpl
        def register_metrics(self, register):
            register(Metric("temp-metric", lambda golds, preds: 0.0))

        @hookimpl
        def register_tasks(self, register):
            register(make_task("temp-half"))
            raise RuntimeError("boom")

    p = Plugins(allowlist=set(), extra=[HalfBroken()])
    assert p.errors["HalfBroken"] == "register_tasks failed: RuntimeError: boom"
    assert "temp-half" not in p.registry.tasks
    assert "temp-metric" not in p.registry.metrics
    assert {"accuracy", "macro_f1"} <= set(p.registry.metrics)


def test_register_tasks_async_implementation_without_running_loop():
    class AsyncPlugin:
        @hookimpl
        async def register_tasks(self, register):
            await asyncio.sleep(0)
            register(make_task("temp-async"))

    p = Plugins(allowlist=set(), extra=[AsyncPlugin()])
    assert p.errors == {}
    assert p.task("temp-async") is not None


async def test_register_tasks_async_implementation_inside_running_loop():
    class AsyncPlugin:
        @hookimpl
        async def register_tasks(self, register):
            await asyncio.sleep(0)
            register(make_task("temp-async-loop"))

    class AsyncBroken:
        @hookimpl
        async def register_tasks(self, register):
            raise RuntimeError("async boom")

    p = Plugins(allowlist=set(), extra=[AsyncPlugin(), AsyncBroken()])
    assert p.task("temp-async-loop") is not None
    assert p.errors == {"AsyncBroken": "register_tasks failed: RuntimeError: async boom"}


# --------------------------------------------------------------------------- broken plugins


def test_register_tasks_misspelled_hook_name_reports_plugin_by_name_while_others_load():
    class Misspelled:
        @hookimpl
        def register_taskz(self, register):
            register(make_task("temp-misspelled"))

    good = task_plugin("GoodNeighbour", make_task("temp-good"))
    p = Plugins(allowlist={"sentiment"}, extra=[Misspelled(), good])
    assert set(p.errors) == {"Misspelled"}
    assert p.errors["Misspelled"].startswith("implements an unknown hook")
    assert "register_taskz" in p.errors["Misspelled"]
    assert {"sentiment", "temp-good"} <= set(p.registry.tasks)
    assert "temp-misspelled" not in p.registry.tasks
    row = next(r for r in p.info() if r.name == "Misspelled")
    assert row.error == p.errors["Misspelled"] and row.hooks == ()
    assert next(r for r in p.info() if r.name == "GoodNeighbour").error is None


def test_register_tasks_misspelled_hook_after_startup_raises_and_leaves_others(core):
    class Misspelled:
        @hookimpl
        def register_taskz(self, register):
            pass

    with pytest.raises(PluginError, match="register_taskz"):
        core.register(Misspelled(), "late-misspelled")
    assert core.pm.get_plugin("late-misspelled") is None
    assert {"accuracy", "macro_f1"} <= set(core.registry.metrics)


class FakeEntryPoint:
    """Just what Plugins reads from an importlib.metadata entry point."""

    def __init__(self, name: str, value: str, error: Exception):
        self.name, self.value, self.dist, self.group = name, value, None, "dynaforge"
        self._error = error

    def load(self):
        raise self._error


def test_entry_point_that_fails_to_import_is_reported_by_name(monkeypatch, caplog):
    real = plugins_module.entry_points
    broken = FakeEntryPoint(
        "broken-plugin", "dynaforge_broken.plugin", ImportError("No module named 'dynaforge_broken'")
    )

    def fake_entry_points(**kwargs):
        return [*real(**kwargs), broken]

    monkeypatch.setattr(plugins_module, "entry_points", fake_entry_points)
    with caplog.at_level(logging.ERROR, logger="dynaforge.plugins"):
        p = Plugins()
    assert p.errors == {
        "broken-plugin": "failed to import dynaforge_broken.plugin: ImportError: No module named 'dynaforge_broken'"
    }
    assert "sentiment" in p.registry.tasks
    row = next(r for r in p.info() if r.name == "broken-plugin")
    assert row.version is None and row.hooks == () and not row.is_default and "ImportError" in row.error
    assert any("broken-plugin" in r.getMessage() and "is broken" in r.getMessage() for r in caplog.records)


def test_entry_point_outside_the_allowlist_is_not_even_imported(monkeypatch):
    broken = FakeEntryPoint("broken-plugin", "dynaforge_broken.plugin", ImportError("nope"))
    monkeypatch.setattr(plugins_module, "entry_points", lambda **kwargs: [broken])
    p = Plugins(allowlist={"sentiment"})
    assert p.errors == {}


# --------------------------------------------------------------------------- register_model_backends


class EchoBackend(ModelBackend):
    name = "temp-echo"
    description = "Answers the label in its config."

    def check_config(self, config):
        return [] if "label" in config else ['config needs "label"']

    def load(self, config):
        label = config["label"]

        class Echo:
            def predict(self, inputs):
                return [{"label": label} for _ in inputs]

        return Echo()


def test_register_model_backends_defaults_present(core):
    backends = core.registry.backends
    assert isinstance(backends["python"], ModelBackend) and isinstance(backends["transformers"], ModelBackend)
    python = backends["python"]
    assert python.check_config({"callable": "pkg.mod:fn"}) == []
    assert python.check_config({}) and python.check_config({"callable": "a:b", "factory": "c:d"})
    assert python.check_config({"factory": "a:b", "kwargs": []}) == ['"kwargs" must be an object']
    assert backends["transformers"].check_config({"path": "/models/x"}) == []
    assert backends["transformers"].check_config({})


def test_register_model_backends_python_backend_loads_callable_and_factory(core, monkeypatch):
    fake = types.ModuleType("temp_fake_models")

    class Constant:
        def __init__(self, label="yes"):
            self.label = label

        def predict(self, inputs):
            return [{"label": self.label} for _ in inputs]

    fake.constant = lambda inputs: [{"label": "no"} for _ in inputs]
    fake.Constant = Constant
    fake.not_a_model = lambda: object()
    monkeypatch.setitem(sys.modules, "temp_fake_models", fake)
    python = core.registry.backends["python"]

    by_callable = python.load({"callable": "temp_fake_models:constant"})
    assert by_callable.predict([{"text": "a"}, {"text": "b"}]) == [{"label": "no"}, {"label": "no"}]
    by_factory = python.load({"factory": "temp_fake_models:Constant", "kwargs": {"label": "yes"}})
    assert by_factory.predict([{"text": "a"}]) == [{"label": "yes"}]
    with pytest.raises(TypeError, match="no predict"):
        python.load({"factory": "temp_fake_models:not_a_model"})
    with pytest.raises(ValueError):
        python.load({})


def test_register_model_backends_from_a_plugin(core):
    class BackendPlugin:
        @hookimpl
        def register_model_backends(self, register):
            register(EchoBackend())

    core.register(BackendPlugin(), "echo-plugin")
    try:
        backend = core.registry.backends["temp-echo"]
        assert core.registry.owners[("backends", "temp-echo")] == "echo-plugin"
        assert backend.load({"label": "yes"}).predict([{}]) == [{"label": "yes"}]
        assert "register_model_backends" in next(r for r in core.info() if r.name == "echo-plugin").hooks
    finally:
        core.unregister("echo-plugin")
    assert "temp-echo" not in core.registry.backends


def test_register_model_backends_cannot_replace_a_core_backend():
    class Impostor(ModelBackend):
        name = "python"

    class ImpostorPlugin:
        @hookimpl
        def register_model_backends(self, register):
            register(Impostor())

    p = Plugins(allowlist=set(), extra=[ImpostorPlugin()])
    assert "'python' is already registered by dynaforge.defaults.backends" in p.errors["ImpostorPlugin"]
    assert type(p.registry.backends["python"]).__name__ == "PythonBackend"


def test_register_model_backends_rejects_non_backends():
    class Wrong:
        @hookimpl
        def register_model_backends(self, register):
            register(object())

    p = Plugins(allowlist=set(), extra=[Wrong()])
    assert "which is not a ModelBackend" in p.errors["Wrong"]


# --------------------------------------------------------------------------- register_metrics


def test_register_metrics_defaults_present_and_correct(core):
    accuracy = core.registry.metrics["accuracy"]
    macro_f1 = core.registry.metrics["macro_f1"]
    golds = ["a", "b", "a", "c"]
    preds = ["a", "a", "a", "c"]
    # accuracy: 3 of 4 right.
    assert accuracy.compute(golds, preds) == pytest.approx(0.75)
    # per class: a: tp=2 fp=1 fn=0 -> F1 4/5; b: tp=0 fn=1 -> 0; c: tp=1 -> 1; mean 1.8 / 3.
    assert macro_f1.compute(golds, preds) == pytest.approx(0.6)
    assert accuracy.compute([], []) == 0.0 and macro_f1.compute([], []) == 0.0
    assert macro_f1.compute(["x", "y"], ["x", "y"]) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        accuracy.compute(["a"], [])
    with pytest.raises(ValueError):
        macro_f1.compute(["a"], [])
    assert accuracy.higher_is_better and macro_f1.higher_is_better


def test_register_metrics_from_a_plugin_and_no_overriding_core_ones():
    class MetricPlugin:
        @hookimpl
        def register_metrics(self, register):
            register(
                Metric(
                    "temp-error-rate",
                    lambda g, p: sum(a != b for a, b in zip(g, p, strict=False)) / max(len(g), 1),
                    higher_is_better=False,
                )
            )

    class Override:
        @hookimpl
        def register_metrics(self, register):
            register(Metric("accuracy", lambda g, p: 1.0))

    p = Plugins(allowlist=set(), extra=[MetricPlugin(), Override()])
    assert p.registry.metrics["temp-error-rate"].compute(["a", "b"], ["a", "a"]) == 0.5
    assert set(p.errors) == {"Override"}
    assert "'accuracy' is already registered by dynaforge.defaults.metrics" in p.errors["Override"]
    assert p.registry.metrics["accuracy"].compute(["a", "b"], ["a", "a"]) == 0.5


def test_register_metrics_names_used_by_installed_tasks_exist():
    p = Plugins()
    for task in p.registry.tasks.values():
        assert set(task.metrics) <= set(p.registry.metrics), task.code
        assert task.principal_metric in task.metrics, task.code
        assert set(task.perturbations) <= set(p.registry.perturbations), task.code
        assert set(task.fairness_slices) <= set(p.registry.slices), task.code


# --------------------------------------------------------------------------- register_perturbations


TEXT = "The quick brown fox jumps over a lazy dog"  # no doubled letters: every swap changes the text


def test_register_perturbations_defaults_present(core):
    perturbations = core.registry.perturbations
    kinds = {name: p.kind for name, p in perturbations.items() if isinstance(p, Perturbation)}
    assert kinds == {
        "typo": "robustness",
        "lowercase": "robustness",
        "uppercase": "robustness",
        "punctuation": "robustness",
        "contractions": "robustness",
        "whitespace": "robustness",
        "gender_swap": "fairness",
        "name_swap": "fairness",
        "name_origin_swap": "fairness",
    }
    rng = random.Random(0)
    assert perturbations["lowercase"].apply("MiXeD Case", rng) == "mixed case"
    assert perturbations["uppercase"].apply("MiXeD Case", rng) == "MIXED CASE"


def test_register_perturbations_typo_is_deterministic_with_a_seed(core):
    typo = core.registry.perturbations["typo"].apply
    assert typo(TEXT, random.Random(7)) == typo(TEXT, random.Random(7))
    assert len({typo(TEXT, random.Random(seed)) for seed in range(30)}) > 1  # the seed matters


@pytest.mark.parametrize("seed", range(25))
def test_register_perturbations_typo_swaps_exactly_two_adjacent_letters(core, seed):
    typo = core.registry.perturbations["typo"].apply
    out = typo(TEXT, random.Random(seed))
    assert len(out) == len(TEXT)
    changed = [i for i, (a, b) in enumerate(zip(TEXT, out, strict=False)) if a != b]
    assert len(changed) == 2, (TEXT, out)
    i, j = changed
    assert j == i + 1
    assert (out[i], out[j]) == (TEXT[j], TEXT[i])
    assert TEXT[i].isalpha() and TEXT[j].isalpha()
    word = next(w for w in TEXT.split(" ") if TEXT.index(w) <= i < TEXT.index(w) + len(w))
    assert len(word) >= 4


def test_register_perturbations_typo_leaves_short_words_alone(core):
    typo = core.registry.perturbations["typo"].apply
    assert typo("a cat on the mat", random.Random(0)) == "a cat on the mat"
    assert typo("", random.Random(0)) == ""


def test_register_perturbations_typo_on_words_without_adjacent_letters(core):
    typo = core.registry.perturbations["typo"].apply
    assert typo("e-m-a-i-l me", random.Random(0)) == "e-m-a-i-l me"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("It was fine.", "It was fine"),
        ("Really?!", "Really"),
        ("No full stop here", "No full stop here."),
        ("   ", "   "),
        ("...", "..."),  # nothing but punctuation: left alone rather than emptied
    ],
)
def test_register_perturbations_punctuation(core, text, expected):
    assert core.registry.perturbations["punctuation"].apply(text, random.Random(0)) == expected


def test_register_perturbations_gender_swap_both_ways_keeping_case(core):
    swap = core.registry.perturbations["gender_swap"].apply
    assert (
        swap("He told his Sister that the King left.", random.Random(0)) == "She told her Brother that the Queen left."
    )
    assert swap("SHE met her uncle", random.Random(0)) == "HE met his aunt"
    assert swap("The hero shed a tear", random.Random(0)) == "The hero shed a tear"  # whole words only


def test_register_perturbations_name_swap_is_consistent_and_seeded(core):
    swap = core.registry.perturbations["name_swap"].apply
    text = "Emma called James, and then Emma left; emma is lower case."
    out = swap(text, random.Random(3))
    assert out == swap(text, random.Random(3))
    words = out.replace(",", "").replace(";", "").split()
    first, second, third = words[0], words[2], words[5]
    assert first == third and first != "Emma" and second != "James"  # one replacement per name, used each time
    assert "emma is lower case" in out  # only capitalised names are names
    from dynaforge.defaults.perturbations import FIRST_NAMES

    assert first in FIRST_NAMES["male"] and second in FIRST_NAMES["female"]


def test_register_perturbations_from_a_plugin(core):
    class PerturbationPlugin:
        @hookimpl
        def register_perturbations(self, register):
            register(Perturbation("temp-reverse", lambda text, rng: text[::-1], "fairness", "Reverse."))

    core.register(PerturbationPlugin(), "reverse-plugin")
    try:
        reverse = core.registry.perturbations["temp-reverse"]
        assert reverse.kind == "fairness"
        assert reverse.apply("abc", random.Random(0)) == "cba"
    finally:
        core.unregister("reverse-plugin")


# --------------------------------------------------------------------------- register_fairness_slices


def test_register_fairness_slices_from_a_plugin(core):
    def by_length(fields):
        text = fields.get("text")
        return None if text is None else ("short" if len(text) < 20 else "long")

    class SlicePlugin:
        @hookimpl
        def register_fairness_slices(self, register):
            register(Slice(name="temp-length", group=by_length, task_code="temp", description="By length."))

    core.register(SlicePlugin(), "slice-plugin")
    try:
        sl = core.registry.slices["temp-length"]
        assert core.registry.owners[("slices", "temp-length")] == "slice-plugin"
        assert sl.task_code == "temp"
        assert [sl.group(f) for f in ({"text": "hi"}, {"text": "x" * 30}, {})] == ["short", "long", None]
    finally:
        core.unregister("slice-plugin")
    assert "temp-length" not in core.registry.slices


def test_register_fairness_slices_rejects_other_objects_and_duplicates():
    class WrongType:
        @hookimpl
        def register_fairness_slices(self, register):
            register(Metric("not-a-slice", lambda g, p: 0.0))

    class Twice:
        @hookimpl
        def register_fairness_slices(self, register):
            register(Slice("temp-twice", lambda fields: None))
            register(Slice("temp-twice", lambda fields: None))

    p = Plugins(allowlist=set(), extra=[WrongType(), Twice()])
    assert "which is not a Slice" in p.errors["WrongType"]
    assert "Slice 'temp-twice' is already registered by Twice" in p.errors["Twice"]
    assert p.registry.slices == {}


# --------------------------------------------------------------------------- event hooks


PAYLOAD = {
    "id": 7,
    "task_code": "temp",
    "round": 1,
    "user_id": 3,
    "fields": {"text": "hello", "label": "yes"},
    "prediction": {"label": "no"},
    "fooled": True,
    "status": "created",
    "created_at": "2024-01-01T00:00:00+00:00",
}


def recorders(hook_name: str, seen: list):
    """A sync recorder, a failing implementation and an async recorder of ``hook_name``."""

    def sync_impl(self, example):
        seen.append(("sync", example))

    def failing_impl(self, example):
        raise RuntimeError(f"{hook_name} exploded")

    async def async_impl(self, example):
        await asyncio.sleep(0)
        seen.append(("async", example))

    return [
        type("SyncRecorder", (), {hook_name: hookimpl(sync_impl)})(),
        type("Exploding", (), {hook_name: hookimpl(failing_impl)})(),
        type("AsyncRecorder", (), {hook_name: hookimpl(async_impl)})(),
    ]


@pytest.mark.parametrize("hook_name", ["example_created", "example_predicted", "model_fooled"])
async def test_example_created_example_predicted_and_model_fooled_reach_sync_and_async_implementations(
    hook_name, caplog
):
    seen: list = []
    p = Plugins(allowlist=set(), extra=recorders(hook_name, seen))
    assert p.errors == {}
    with caplog.at_level(logging.ERROR, logger="dynaforge.plugins"):
        await p.emit(hook_name, example=PAYLOAD)
    assert sorted(kind for kind, _ in seen) == ["async", "sync"]
    assert all(example == PAYLOAD for _, example in seen)
    failures = [r for r in caplog.records if r.name == "dynaforge.plugins" and r.levelno == logging.ERROR]
    assert len(failures) == 1
    assert f"plugin Exploding failed in {hook_name}" in failures[0].getMessage()
    assert failures[0].exc_info and "exploded" in str(failures[0].exc_info[1])


async def test_example_created_with_no_implementation_is_a_no_op(core):
    await core.emit("example_created", example=PAYLOAD)


async def test_example_created_emits_only_that_hook(core):
    created, fooled = [], []

    class Listener:
        @hookimpl
        def example_created(self, example):
            created.append(example["id"])

        @hookimpl
        async def model_fooled(self, example):
            fooled.append(example["id"])

    core.register(Listener(), "listener")
    try:
        await core.emit("example_created", example=PAYLOAD)
        assert (created, fooled) == ([7], [])
        await core.emit("model_fooled", example=PAYLOAD)
        assert (created, fooled) == ([7], [7])
        assert next(r for r in core.info() if r.name == "listener").hooks == ("example_created", "model_fooled")
    finally:
        core.unregister("listener")
    await core.emit("example_created", example=PAYLOAD)
    assert created == [7]


async def test_model_fooled_implementation_of_a_broken_plugin_is_not_called():
    called = []

    class BrokenButListening:
        @hookimpl
        def register_tasks(self, register):
            raise RuntimeError("broken")

        @hookimpl
        def model_fooled(self, example):
            called.append(example)

    p = Plugins(allowlist=set(), extra=[BrokenButListening()])
    assert "BrokenButListening" in p.errors
    await p.emit("model_fooled", example=PAYLOAD)
    assert called == []


# --------------------------------------------------------------------------- the example plugin of docs/plugins.md


def docs_example_module(monkeypatch, folder: Path) -> types.ModuleType:
    """Exec the plugin module shown in docs/plugins.md as ``dynaforge_formality.plugin``, living in ``folder``."""
    text = DOCS.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    source = next(b for b in blocks if b.startswith('"""The formality task'))
    package = types.ModuleType("dynaforge_formality")
    package.__path__ = [str(folder)]
    module = types.ModuleType("dynaforge_formality.plugin")
    module.__file__ = str(folder / "plugin.py")
    monkeypatch.setitem(sys.modules, "dynaforge_formality", package)
    monkeypatch.setitem(sys.modules, "dynaforge_formality.plugin", module)
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    package.plugin = module
    return module


def test_register_tasks_docs_example_formality_plugin_works(monkeypatch, tmp_path, core):
    module = docs_example_module(monkeypatch, tmp_path)
    core.register(module, "formality")
    try:
        assert "formality" not in core.errors
        task = core.task("formality")
        assert task is not None and task.labels == ("formal", "informal")
        assert set(task.metrics) <= set(core.registry.metrics) and task.principal_metric in task.metrics
        assert set(task.perturbations) <= set(core.registry.perturbations)
        assert set(task.fairness_slices) <= set(core.registry.slices)
        row = next(r for r in core.info() if r.name == "formality")
        assert row.hooks == ("register_fairness_slices", "register_tasks")

        for context in task.demo_contexts:
            assert task.validate_context(context) == context

        # The validation example shown in the guide.
        with pytest.raises(InvalidInput) as caught:
            task.validate_example(
                {"sentence": "Hi", "label": "casual", "mood": "ok"}, context={"situation": "A note to a neighbour."}
            )
        assert [(e.field, e.rule) for e in caught.value.field_errors] == [
            ("mood", "unknown_field"),
            ("sentence", "min_length"),
            ("label", "choice"),
        ]

        # The JSON Schema shown in the guide.
        assert task.json_schema(Role.INPUT, Role.TARGET) == {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Formality",
            "type": "object",
            "properties": {
                "sentence": {
                    "type": "string",
                    "minLength": 5,
                    "maxLength": 400,
                    "description": "Your sentence.",
                    "x-role": "input",
                },
                "label": {
                    "type": "string",
                    "enum": ["formal", "informal"],
                    "description": "The register a careful reader would give your sentence.",
                    "x-role": "target",
                },
            },
            "required": ["sentence", "label"],
            "additionalProperties": False,
        }

        # The model in the loop, through the python backend and the default target model's config.
        context = {"situation": "A text to your sister."}
        cleaned = task.validate_example(
            {
                "sentence": "Hey, gonna be late!",
                "label": "formal",
                "cue": {"text": "gonna", "start": 5},
                "certainty": 4,
                "native_speaker": True,
            },
            context=context,
        )
        assert cleaned["sentence"] == "Hey, gonna be late!"
        model_input = task.build_model_input(context, cleaned)
        assert model_input == {"sentence": "Hey, gonna be late!"}
        [spec] = task.default_target_models
        model = core.registry.backends[spec.backend].load(spec.config)
        [output] = model.predict([model_input])
        prediction = task.read_model_output(output)
        assert prediction["label"] == "informal" and "confidence" in prediction
        assert task.is_fooled(cleaned, prediction, context) is True
        assert task.read_model_output({"score": 0.8}) == {"label": "formal", "confidence": 0.8}
        with pytest.raises(ValueError):
            task.read_model_output({"label": "casual"})

        [(sl)] = [core.registry.slices[name] for name in task.fairness_slices]
        assert [sl.group(f) for f in ({"native_speaker": True}, {"native_speaker": False}, {})] == [
            "native",
            "non-native",
            None,
        ]

        # The guide's example passes the conformance kit, as `dynaforge check formality` shows it does.
        results = run_checks_sync(core, ["formality"])
        assert [(r.check, r.problems) for r in results] == [(c.name, ()) for c in CHECKS]
        fooled = []
        for values in task.sample_examples:
            ctx, example = task.split_fields(values)
            [out] = model.predict([task.build_model_input(ctx, task.validate_example(example, ctx))])
            fooled.append(task.is_fooled(example, task.read_model_output(out), ctx))
        assert fooled == [False, False, True]  # "The third fools the model."
    finally:
        core.unregister("formality")
    assert core.task("formality") is None


def test_docs_example_train_writes_markers(monkeypatch, tmp_path):
    module = docs_example_module(monkeypatch, tmp_path / "pkg")
    data = tmp_path / "data"
    data.mkdir()
    informal = ["hey guys this is so cool", "yeah gonna grab food lol", "hey that stuff is cool", "wanna come lol"]
    formal = [
        "We regret to inform you of the delay.",
        "Please find the report attached.",
        "Thank you for your prompt reply.",
        "I would be grateful for your assistance.",
    ]
    rows = [f"{s}\tinformal" for s in informal * 5] + [f"{s}\tformal" for s in formal * 5]
    (data / "train.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    metrics = module.FormalityTask().train(data, out, progress=False, limit=None)
    assert metrics["held_out"] == 4 and 0.0 <= metrics["accuracy"] <= 1.0 and metrics["markers"] > 0
    assert (out / "markers.json").exists()
    model = module.load(str(out / "markers.json"))
    assert model.predict([{"sentence": "hey guys"}])[0]["label"] == "informal"
