"""The task conformance kit: the checks every task must pass, whoever wrote it and wherever it is installed.

A task passes when it declares itself consistently (naming only metrics, perturbations and slices that are
registered, for it or for every task), publishes a JSON Schema that matches its fields, ships sample examples and
demo contexts that pass its own validation, keeps every sample valid under each of its perturbations (the same seed
giving the same copy), has metrics and slices that score its samples as an evaluation scores a data set, and comes
with default target models that load offline and answer its samples in a batch and one at a time, alike, within
the server's time limits, with predictions the task can read, judge and score.

Three ways in, one set of checks:

- ``dynaforge check [TASK ...]`` on the command line, for every installed task or the ones named (exit status 1 when
  one fails, ``--json`` for machines);
- ``parametrize_with_checks`` in a plugin's own tests, one pytest test per check (``dynaforge.testing``);
- :func:`run_checks` from Python.

Each check returns the problems it found, in words a task author can act on, rather than stopping at the first.
"""

from __future__ import annotations

import asyncio
import functools
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from dynaforge.adversaries.base import AttackRequest, Oracle
from dynaforge.defaults.backends.common import import_object
from dynaforge.errors import InvalidInput
from dynaforge.evaluation import scoring
from dynaforge.inference.backends import InferenceTimeout
from dynaforge.inference.client import InferenceClient, LocalInferenceClient
from dynaforge.plugins import Plugins, Registry, task_registry_problems
from dynaforge.tasks.base import Task, choice_labels
from dynaforge.tasks.fields import Role
from dynaforge.tasks.outputs import read_output, read_verdict

__all__ = [
    "CHECKS",
    "Check",
    "CheckResult",
    "ServerLimits",
    "report_lines",
    "run_check",
    "run_checks",
    "run_checks_sync",
]

#: How long one default model may take to load, or to answer the samples, in seconds (longer when the server's own
#: limits are: the checks measure a slow model and say which setting it breaks rather than stop it).
MODEL_TIMEOUT_S = 120.0
#: Bootstrap resamples the metrics check draws (evaluations draw EVAL_BOOTSTRAP_RESAMPLES; a few show the metric
#: copes with resampled items, repeats included).
CHECK_RESAMPLES = 20


@dataclass(frozen=True)
class ServerLimits:
    """The server's limits a default model is timed against (:func:`run_checks` reads them from the settings)."""

    #: ``DYNAFORGE_INFERENCE_TIMEOUT_S``: how long the server waits for an annotator's example to be predicted.
    inference_timeout_s: float
    #: ``DYNAFORGE_INFERENCE_LOAD_TIMEOUT_S``: how long a model may take to load in the model worker.
    load_timeout_s: float

    @classmethod
    def from_settings(cls) -> ServerLimits:
        from dynaforge.settings import Settings

        settings = Settings()
        return cls(settings.inference_timeout_s, settings.inference_load_timeout_s)


_LIMITS: ContextVar[ServerLimits | None] = ContextVar("dynaforge_conformance_limits", default=None)


def _limits() -> ServerLimits:
    return _LIMITS.get() or ServerLimits.from_settings()


@dataclass(frozen=True)
class CheckResult:
    """What one check found on one task: no problems means it passed; ``skipped`` says why it did not run."""

    task: str
    check: str
    problems: tuple[str, ...] = ()
    skipped: str | None = None

    @property
    def passed(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        status = "skipped" if self.skipped else ("passed" if self.passed else "failed")
        return {"task": self.task, "check": self.check, "status": status, "problems": list(self.problems)} | (
            {"skipped": self.skipped} if self.skipped else {}
        )


@dataclass(frozen=True)
class Check:
    """One conformance check: ``run(task, registry, inference)`` returns the problems it found."""

    name: str
    description: str
    run: Callable[[Task, Registry, InferenceClient | None], Awaitable[list[str]]]
    needs_models: bool = False
    #: why the check does not apply to a task (it is then skipped), or None when it does
    not_applicable: Callable[[Task], str | None] = lambda task: None


def _resolves(path: str) -> str | None:
    """Why the import path ``pkg.module:name`` does not name an object, or None when it does."""
    try:
        import_object(path)
    except Exception as exc:  # the author's code: any failure is the finding
        return f"cannot import it: {type(exc).__name__}: {exc}"
    return None


async def check_declaration(task: Task, registry: Registry, inference: InferenceClient | None) -> list[str]:
    """The task's own declaration, and every name in it found in the registries (as the plugin loader checks)."""
    problems = list(task.check_declaration())
    problems += task_registry_problems(task, registry)
    if not (task.name or "").strip():
        problems.append("name is empty: annotators see it in every list")
    if not (task.description or "").strip():
        problems.append("description is empty: say in a sentence what the task collects")
    if len((task.instructions or "").strip()) < 80:
        problems.append("instructions are under 80 characters: tell annotators what fools the model and what is fair")
    if not task.default_target_models:
        problems.append("default_target_models is empty: a task ships at least one model its first round targets")
    rules = task.data_selection
    if rules is not None and ":" in rules.trainer and (why := _resolves(rules.trainer)) is not None:
        problems.append(f"data_selection.trainer {rules.trainer}: {why}")
    for recipe in task.training_recipes:
        for what in ("trainer", "factory"):
            path = getattr(recipe, what)
            if ":" in path and (why := _resolves(path)) is not None:
                problems.append(f"training recipe {recipe.name}: {what} {path}: {why}")
    return problems


async def check_json_schema(task: Task, registry: Registry, inference: InferenceClient | None) -> list[str]:
    """The published JSON Schema lists the fields, in order, with the required ones, for every role."""
    problems = []
    schema = task.json_schema()
    if list(schema.get("properties", {})) != [f.name for f in task.fields]:
        names = [f.name for f in task.fields]
        problems.append(
            f"json_schema() properties {list(schema.get('properties', {}))} != the fields, in order {names}"
        )
    required = {f.name for f in task.fields if f.required}
    if set(schema.get("required", [])) != required:
        problems.append(f"json_schema() required {sorted(schema.get('required', []))} != {sorted(required)}")
    for role in Role:
        part = task.json_schema(role)
        if set(part.get("properties", {})) != set(task.field_names(role)):
            problems.append(f"json_schema({role.name}) does not list exactly the {role.name.lower()} fields")
    return problems


def _validate(task: Task, values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    context, example = task.split_fields(values)
    if context:
        task.validate_context(context)
    return task.validate_example(example, context or None), context


Sample = tuple[int, dict[str, Any], dict[str, Any], dict[str, Any]]


def _valid_samples(task: Task) -> list[Sample]:
    """The sample examples that pass the task's validation (check_samples reports the others), each as its index,
    its example fields as written, the cleaned ones, and its context."""
    valid = []
    for i, values in enumerate(task.sample_examples):
        try:
            cleaned, context = _validate(task, values)
        except Exception:
            continue
        valid.append((i, task.split_fields(values)[1], cleaned, context))
    return valid


async def check_samples(task: Task, registry: Registry, inference: InferenceClient | None) -> list[str]:
    """At least two sample examples, each (and each demo context) passing the task's own validation."""
    problems = []
    if len(task.sample_examples) < 2:
        problems.append(
            f"sample_examples has {len(task.sample_examples)}: ship at least two (the checks validate them, perturb "
            "them and run the models on them)"
        )
    for i, values in enumerate(task.sample_examples):
        try:
            cleaned, _ = _validate(task, values)
        except Exception as exc:
            problems.append(f"sample_examples[{i}] fails validation: {type(exc).__name__}: {exc}")
            continue
        _, example = task.split_fields(values)
        if not set(cleaned) <= set(example):
            problems.append(f"sample_examples[{i}]: validation added fields {sorted(set(cleaned) - set(example))}")
    for i, context in enumerate(task.demo_contexts):
        try:
            task.validate_context(context)
        except Exception as exc:
            problems.append(f"demo_contexts[{i}] fails validation: {type(exc).__name__}: {exc}")
    if any(f.required for f in task.fields_with(Role.CONTEXT)) and not task.demo_contexts:
        problems.append("the task has required context fields but no demo_contexts to start annotators with")
    return problems


async def check_perturbations(task: Task, registry: Registry, inference: InferenceClient | None) -> list[str]:
    """Each perturbation, applied to every valid sample as evaluation applies it to a scoring set's items (context
    fields included), keeps the sample valid, changes only the fields its scope allows (input fields; for an
    example-wide one, context and input fields and the spans into them), removes the gold fields exactly when its
    gold is ``dropped``, and is reproducible by seed."""
    problems = []
    samples = _valid_samples(task)
    gold_fields = task.gold_field_names()
    for name in task.perturbations:
        perturbation = registry.perturbations.get(name)
        if perturbation is None:
            continue  # check_declaration reports it
        example_wide = perturbation.scope == "example"
        may_change = set(task.field_names(Role.INPUT))
        if example_wide:
            may_change |= set(task.field_names(Role.CONTEXT))
            may_change |= {f.name for f in task.fields if getattr(f, "context_field", None) in may_change}
        for i, example, _, context in samples:
            where = f"perturbation {name} on sample_examples[{i}]"
            whole = {**context, **example}
            try:
                perturbed = task.perturb(whole, perturbation, random.Random(i))
                again = task.perturb(whole, perturbation, random.Random(i))
            except Exception as exc:
                problems.append(f"{where} raised {type(exc).__name__}: {exc}")
                continue
            removed = gold_fields & set(whole) if perturbation.gold == "dropped" else set()
            if set(perturbed) != set(whole) - removed:
                dropped = f" (its gold is dropped: all but {sorted(removed)})" if removed else ""
                problems.append(f"{where} changed the set of fields to {sorted(perturbed)}{dropped}")
                continue
            changed = [
                f.name
                for f in task.fields
                if f.name in perturbed and f.name not in may_change and perturbed[f.name] != whole[f.name]
            ]
            if changed and example_wide:
                problems.append(f"{where} changed fields outside the context and input fields: {changed}")
            elif changed:
                problems.append(f"{where} changed the non-input fields {changed}")
            invalid = None
            if removed:  # no gold left to validate: each field it kept passes its own field's check
                kept = [f for f in task.fields if f.name in perturbed]
                errors = [e for f in kept for e in f.check(perturbed[f.name], task=task, values=perturbed)]
                invalid = "; ".join(f"{e.field}: {e.message}" for e in errors) or None
            else:
                new_context, new_example = task.split_fields(perturbed)
                try:
                    task.validate_example(new_example, new_context or None)
                except Exception as exc:
                    invalid = f"{type(exc).__name__}: {exc}"
            if invalid:
                problems.append(f"{where} made an invalid example: {invalid}")
            if again != perturbed:
                problems.append(f"{where} is not reproducible: the same seed gave two different copies")
    return problems


def _why(exc: Exception) -> str:
    """What a metric or slice raised, without the wrapper scoring puts around it (which names the metric again)."""
    cause = exc.__cause__ if isinstance(exc, InvalidInput) else None
    if isinstance(cause, Exception):
        return f"{type(cause).__name__}: {cause}"
    return exc.message if isinstance(exc, InvalidInput) else f"{type(exc).__name__}: {exc}"


def _scoring_problems(
    task: Task,
    registry: Registry,
    golds: Sequence[dict[str, Any]],
    predictions: Sequence[dict[str, Any] | None],
    what: str,
    *,
    need_values: bool,
) -> dict[str, str]:
    """Every metric of the task on these items, computed as evaluations compute it (:mod:`dynaforge.evaluation.
    scoring`): the whole set, each item alone, a bootstrap interval, and each fairness slice's groups with their
    gaps. The problem of each metric that fails, at the first step that does, saying where. ``need_values``: a
    metric with no value on these items (one that reads items and skipped them all) is a problem too."""
    metrics = {name: registry.metrics[name] for name in task.metrics if name in registry.metrics}
    slices = [registry.slices[name] for name in task.fairness_slices if name in registry.slices]
    problems = {}
    for name in metrics:
        overall: dict[str, float] = {}

        def whole(name: str = name, overall: dict[str, float] = overall) -> None:
            overall.update(scoring.score(task, [name], golds, predictions, metrics=metrics))

        def alone(i: int, name: str = name) -> None:
            scoring.score(task, [name], [golds[i]], [predictions[i]], metrics=metrics)

        def interval(name: str = name, overall: dict[str, float] = overall) -> None:
            if name in overall:
                scoring.metric_interval(
                    task, name, golds, predictions, metrics=metrics, seed=0, resamples=CHECK_RESAMPLES
                )

        def groups(slice_: Any, name: str = name, overall: dict[str, float] = overall) -> None:
            per_slice = scoring.slice_metrics(
                task, [slice_], golds, predictions, golds, metrics=metrics, metric_names=[name]
            )
            if overall:
                scoring.slice_gaps(overall, per_slice, metrics=metrics, min_group_size=1)

        steps: list[tuple[str, Callable[[], None]]] = [("the whole set", whole)]
        steps += [(f"item {i} alone", functools.partial(alone, i)) for i in range(len(golds))]
        steps.append(("a bootstrap interval", interval))
        steps += [(f"the groups of slice {sl.name}", functools.partial(groups, sl)) for sl in slices]
        for where, step in steps:
            try:
                step()
            except Exception as exc:  # the author's code: any failure is the finding
                problems[name] = (
                    f"metric {name} failed on {what} ({where}): {_why(exc)}: an evaluation computes it there too, "
                    "and would fail"
                )
                break
        else:
            if need_values and name not in overall:
                skipped = scoring.coverage(task, [name], golds, predictions, metrics=metrics)[name]["skipped"]
                reasons = ", ".join(f"{why} ({n})" for why, n in skipped.items())
                problems[name] = (
                    f"metric {name} has no value on {what}: it skipped every item ({reasons}); have the model give "
                    f"what the metric needs ({', '.join(metrics[name].needs)}), or drop the metric"
                )
    return problems


def _stand_in(task: Task, values: dict[str, Any]) -> dict[str, Any]:
    """A prediction of ``values``' targets, with a confidence and, for a task with one choice target, probabilities
    that favour that answer."""
    prediction = {name: values.get(name) for name in task.field_names(Role.TARGET)}
    labels = choice_labels(task)
    answer = next(iter(prediction.values()))
    if labels and answer in labels:
        rest = 0.3 / (len(labels) - 1) if len(labels) > 1 else 0.0
        prediction["probabilities"] = {label: 0.7 if label == answer else rest for label in labels}
        if len(labels) == 1:
            prediction["probabilities"] = {answer: 1.0}
    prediction["confidence"] = 0.7
    return prediction


async def check_metrics(task: Task, registry: Registry, inference: InferenceClient | None) -> list[str]:
    """Each metric of the task, and each fairness slice, runs on the valid samples as an evaluation runs them (the
    whole set, each item alone, a bootstrap interval, each slice's groups and gaps) against stand-in predictions:
    the gold itself, another sample's gold, and the gold with the first output unusable (None, what evaluation
    passes for an output the task cannot read); every value a finite number."""
    golds = [{**context, **cleaned} for _, _, cleaned, context in _valid_samples(task)]
    if not golds:
        return []  # check_samples reports it
    problems = []
    for slice_name in task.fairness_slices:
        slice_ = registry.slices.get(slice_name)
        if slice_ is None:
            continue  # check_declaration reports it
        for i, values in enumerate(golds):
            try:
                slice_.group(dict(values))
            except Exception as exc:  # the author's code: any failure is the finding
                problems.append(f"slice {slice_name} raised on sample {i}: {type(exc).__name__}: {exc}")
                break
    if problems:
        return problems
    right = [_stand_in(task, values) for values in golds]
    shifted = [right[(i + 1) % len(right)] for i in range(len(right))]
    unusable: list[dict[str, Any] | None] = [None, *right[1:]]
    found: dict[str, str] = {}
    for what, predictions in (
        ("stand-in predictions equal to the gold", right),
        ("stand-in predictions of another sample's gold", shifted),
        ("stand-in predictions with the first output unusable (None)", unusable),
    ):
        for name, problem in _scoring_problems(task, registry, golds, predictions, what, need_values=False).items():
            found.setdefault(name, problem)  # one problem per metric: the first stand-in it fails on
    return list(found.values())


def _slower_than_the_server(exc: Exception) -> str:
    """The advice for a model that ran out of time in the checks, whose limits are at least the server's."""
    if not isinstance(exc, InferenceTimeout):
        return ""
    limits = _limits()
    return (
        f"; the server gives a model DYNAFORGE_INFERENCE_LOAD_TIMEOUT_S ({limits.load_timeout_s:g} s) to load and "
        f"DYNAFORGE_INFERENCE_TIMEOUT_S ({limits.inference_timeout_s:g} s) to answer: make it faster, or raise the "
        "setting it runs past"
    )


async def check_default_models(task: Task, registry: Registry, inference: InferenceClient | None) -> list[str]:
    """Each default target model loads offline within DYNAFORGE_INFERENCE_LOAD_TIMEOUT_S and answers the samples in a
    batch and one at a time, alike, each sample alone within DYNAFORGE_INFERENCE_TIMEOUT_S, with outputs the task
    reads (as evaluation reads them) into every target field and judges as fooled or not, and that every metric of
    the task scores as an evaluation would."""

    assert inference is not None
    limits = _limits()
    problems = []
    examples = [(cleaned, context) for _, _, cleaned, context in _valid_samples(task)]
    inputs = [task.build_model_input(context, cleaned) for cleaned, context in examples]
    if not inputs:
        return ["no valid sample example to run the default models on"]
    distinct = len(inputs)
    if distinct == 1:  # a batch of one is no batch: send the one sample twice
        inputs, examples = inputs * 2, examples * 2
    golds = [{**context, **cleaned} for cleaned, context in examples]
    targets = task.field_names(Role.TARGET)
    for spec in task.default_target_models:
        if spec.backend not in registry.backends:
            continue  # check_declaration reports it
        where = f"default model {spec.name}"
        started = time.perf_counter()
        try:
            answer = await inference.predict(spec, inputs)
        except Exception as exc:
            problems.append(
                f"{where} did not answer the samples: {type(exc).__name__}: {exc}{_slower_than_the_server(exc)}"
            )
            continue
        loading_s = time.perf_counter() - started - answer.latency_ms / 1000
        if loading_s > limits.load_timeout_s:
            problems.append(
                f"{where} took {loading_s:.1f} s to load, longer than the {limits.load_timeout_s:g} s the server's "
                "model worker waits (DYNAFORGE_INFERENCE_LOAD_TIMEOUT_S): make it load faster, or raise "
                "DYNAFORGE_INFERENCE_LOAD_TIMEOUT_S on the server"
            )
        if len(answer.outputs) != len(inputs):
            problems.append(f"{where} answered {len(answer.outputs)} outputs for {len(inputs)} inputs")
            continue
        read: list[dict[str, Any] | None] = []
        for i, (output, (cleaned, context)) in enumerate(zip(answer.outputs, examples, strict=True)):
            try:
                prediction = read_output(task, output, inputs[i])
            except Exception as exc:
                problems.append(f"{where}: read_model_output failed on output {i}: {type(exc).__name__}: {exc}")
                read.append(None)  # what an evaluation scores for an output the task cannot read
                continue
            missing = sorted(set(targets) - set(prediction))
            if missing:
                problems.append(f"{where}: the prediction for sample {i} lacks the target fields {missing}")
            try:
                fooled = task.is_fooled(cleaned, prediction, context)
            except Exception as exc:
                problems.append(f"{where}: is_fooled failed on sample {i}: {type(exc).__name__}: {exc}")
            else:
                if not isinstance(fooled, bool):
                    problems.append(f"{where}: is_fooled returned {fooled!r} for sample {i}, not a bool")
            read.append(prediction)
        batched = [None if p is None else {t: p.get(t) for t in targets} for p in read]
        # batching, and the padding it brings, must not change what the model answers; alone, a sample is what an
        # annotator's example is, and the server waits INFERENCE_TIMEOUT_S for it
        slowest: tuple[float, int] | None = None
        for i, item in enumerate(inputs[: min(distinct, 3)]):
            try:
                single = await inference.predict(spec, [item])
            except Exception as exc:
                problems.append(
                    f"{where} did not answer sample {i} alone: {type(exc).__name__}: {exc}"
                    + _slower_than_the_server(exc)
                )
                continue
            if slowest is None or single.latency_ms / 1000 > slowest[0]:
                slowest = (single.latency_ms / 1000, i)
            if batched[i] is None:
                continue
            try:
                alone = read_output(task, single.outputs[0], item)
            except Exception as exc:
                problems.append(f"{where}: read_model_output failed on sample {i} alone: {type(exc).__name__}: {exc}")
                continue
            if {t: alone.get(t) for t in targets} != batched[i]:
                problems.append(
                    f"{where} answers sample {i} differently alone ({ {t: alone.get(t) for t in targets} }) "
                    f"and in a batch ({batched[i]})"
                )
        if slowest is not None and slowest[0] > limits.inference_timeout_s:
            problems.append(
                f"{where} took {slowest[0]:.2f} s to answer sample {slowest[1]} alone, longer than the "
                f"{limits.inference_timeout_s:g} s the server waits for a prediction (DYNAFORGE_INFERENCE_TIMEOUT_S): "
                "every example an annotator writes would be stored as pending. Make the model faster, or raise "
                "DYNAFORGE_INFERENCE_TIMEOUT_S on the server (and here, to check against it)"
            )
        if any(p is not None for p in read):
            scored = _scoring_problems(task, registry, golds, read, f"{where}'s answers", need_values=True)
            problems += scored.values()
    return problems


async def check_data_selection(task: Task, registry: Registry, inference: InferenceClient | None) -> list[str]:
    """A task that takes data selections: its fixed recipe trains on the valid samples (as a selection within the
    budget) and answers them, in a batch, with outputs the task reads into every target field."""
    rules = task.data_selection
    if rules is None:
        return []
    assert inference is not None
    samples = [(cleaned, context) for i, _, cleaned, context in _valid_samples(task) if i < rules.budget]
    selected = [{**context, **cleaned} for cleaned, context in samples]
    inputs = [task.build_model_input(context, cleaned) for cleaned, context in samples]
    if not selected:
        return ["no valid sample example to train the data selection recipe on"]
    where = f"data_selection.trainer {rules.trainer}"
    try:
        answer = await inference.predict(rules.model_spec("conformance-selection", selected), inputs)
    except Exception as exc:
        return [f"{where} did not train on the samples and answer them: {type(exc).__name__}: {exc}"]
    if len(answer.outputs) != len(inputs):
        return [f"{where}: its model answered {len(answer.outputs)} outputs for {len(inputs)} inputs"]
    problems = []
    targets = set(task.field_names(Role.TARGET))
    for i, output in enumerate(answer.outputs):
        try:
            prediction = task.read_model_output(output)
        except Exception as exc:
            problems.append(f"{where}: read_model_output failed on output {i}: {type(exc).__name__}: {exc}")
            continue
        if missing := sorted(targets - set(prediction)):
            problems.append(f"{where}: the prediction for sample {i} lacks the target fields {missing}")
    return problems


def _own_adversaries(task: Task, registry: Registry) -> list[Any]:
    return [a for a in registry.adversaries.values() if task.code in a.task_codes]


async def check_adversaries(task: Task, registry: Registry, inference: InferenceClient | None) -> list[str]:
    """The adversaries written for the task (its templates): on each valid sample (as a draft) and each demo context,
    against a stand-in target that always answers the claimed gold, each runs without raising, proposes only
    examples the task's own validation accepts, each with a rationale, within its query budget, the same for the
    same seed; and it proposes something for at least one of them."""
    problems = []
    drafts = [(context, cleaned) for _, _, cleaned, context in _valid_samples(task)]
    contexts = []
    for values in task.demo_contexts:
        try:
            contexts.append((task.validate_context(values), None))
        except Exception:
            continue  # check_samples reports it
    for adversary in _own_adversaries(task, registry):
        if why := adversary.unsuitable(task, None):
            problems.append(f"adversary {adversary.name} refuses the task it is written for: {why}")
            continue
        proposed = 0
        for context, draft in drafts + contexts:
            if draft is None and adversary.needs_draft:
                continue
            where = f"adversary {adversary.name} on {'a sample' if draft is not None else 'a demo context'}"
            runs = []
            for _ in range(2):
                oracle = Oracle(task, context, _gold_answers(task), _stand_in_judge(task), max_queries=32,
                                time_limit_s=MODEL_TIMEOUT_S)  # fmt: skip
                request = AttackRequest(task=task, context=dict(context), draft=draft, rng=random.Random(7))
                try:
                    runs.append((await adversary.attack(request, oracle), oracle.queries))
                except Exception as exc:
                    problems.append(f"{where}: attack raised {type(exc).__name__}: {exc}")
                    break
            if len(runs) < 2:
                continue
            (found, queries), (again, _) = runs
            if queries > 32:
                problems.append(f"{where}: asked the target {queries} times with a budget of 32")
            if [c.fields for c in found] != [c.fields for c in again]:
                problems.append(f"{where}: the same seed proposed different candidates")
            for c in found:
                try:
                    task.validate_example(c.fields, context or None)
                except Exception as exc:
                    problems.append(f"{where}: proposed {c.fields} which the task refuses: {exc}")
                if not str(c.rationale).strip():
                    problems.append(f"{where}: proposed {c.fields} without a rationale")
            proposed += len(found)
        if proposed == 0:
            problems.append(
                f"adversary {adversary.name} proposed nothing for any sample example or demo context: add a sample "
                "its templates can rewrite, or check them"
            )
    return problems


def _gold_answers(task: Task) -> Any:
    """A stand-in target that answers every example with its claimed gold (no model needed)."""

    async def predict(inputs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
        return [[{"model": "stand-in", "prediction": {}, "latency_ms": 0.0}] for _ in inputs]

    return predict


def _stand_in_judge(task: Task) -> Any:
    def judge(members: list[dict[str, Any]], example: dict[str, Any], context: dict[str, Any]):
        prediction = {name: example.get(name) for name in task.field_names(Role.TARGET)}
        return prediction, False

    return judge


async def check_verdicts(task: Task, registry: Registry, inference: InferenceClient | None) -> list[str]:
    """A task whose verdicts wait (``verdict`` ``judge`` or ``people``): ``claims_fooled`` answers a bool on every
    valid sample (people); the judge model's backend is registered and takes its configuration, ``judge_input`` gives
    text for each part of its prompt, and (when models run) the judge answers the first valid sample with a verdict
    the platform reads: ``{"fooled": bool, "rationale": str}`` (judge)."""

    problems: list[str] = []
    valid = _valid_samples(task)
    if task.verdict == "people":
        for i, _, cleaned, _ in valid:
            claim = task.claims_fooled(cleaned)
            if not isinstance(claim, bool):
                problems.append(f"claims_fooled returned {claim!r} for sample {i}, not a bool")
        return problems
    judge = task.judge
    if judge is None:
        return ['verdict is "judge" but the task has no judge']
    spec = judge.model_spec()
    backend = registry.backends.get(spec.backend)
    if backend is None:
        return [f"the judge's backend {spec.backend!r} is not registered"]
    problems += [f"the judge's config: {problem}" for problem in backend.check_config(dict(spec.config))]
    if not valid:
        return [*problems, "no valid sample example to judge"]
    _, _, cleaned, context = valid[0]
    answer = {name: cleaned.get(name) for name in task.field_names(Role.TARGET)}
    parts = task.judge_input(context, cleaned, answer)
    for part in ("rubric", "input", "output", "references"):
        if not isinstance(parts.get(part), str):
            problems.append(f"judge_input gives no text for {part!r}")
    if problems or inference is None:
        return problems
    try:
        reply = await inference.predict(spec, [parts])
        read_verdict(reply.outputs[0])
    except Exception as exc:
        problems.append(f"the judge gave no verdict on sample {valid[0][0]}: {type(exc).__name__}: {exc}")
    return problems


CHECKS: tuple[Check, ...] = (
    Check("declaration", "names, texts and registered metrics, perturbations, slices and backends", check_declaration),
    Check("json-schema", "the JSON Schema matches the fields", check_json_schema),
    Check("samples", "sample examples and demo contexts pass validation", check_samples),
    Check("perturbations", "perturbations keep samples valid and are seeded", check_perturbations),
    Check("metrics", "every metric and slice scores the samples as an evaluation would", check_metrics),
    Check("default-models", "default models answer the samples, batched and alone", check_default_models, True),
    Check(
        "data-selection",
        "the data selection recipe trains on the samples and answers",
        check_data_selection,
        True,
        lambda task: None if task.data_selection is not None else "the task takes no data selections",
    ),
    Check(
        "adversaries",
        "the task's own adversaries propose valid, seeded candidates within budget",
        check_adversaries,
    ),
    Check(
        "verdicts",
        "a judge or people can decide the task's verdicts",
        check_verdicts,
        False,
        lambda task: None if task.verdict != "rule" else "the task's rule decides its verdicts at once",
    ),
)


async def run_check(
    check: Check, task: Task, registry: Registry, inference: InferenceClient | None = None
) -> CheckResult:
    """Run one check; a check that raises is a finding too (what raised, and where)."""
    if (why := check.not_applicable(task)) is not None:
        return CheckResult(task.code, check.name, skipped=why)
    if check.needs_models and inference is None:
        return CheckResult(task.code, check.name, skipped="models not run (--no-models)")
    try:
        problems = await check.run(task, registry, inference)
    except Exception as exc:
        problems = [f"the check raised {type(exc).__name__}: {exc}"]
    return CheckResult(task.code, check.name, tuple(problems))


async def run_checks(
    plugins: Plugins,
    codes: Iterable[str] | None = None,
    *,
    models: bool = True,
    checks: Iterable[str] | None = None,
    limits: ServerLimits | None = None,
) -> list[CheckResult]:
    """Every check (or those named) on every registered task (or those named), in order. ``limits``: the server's
    limits the default models are timed against (default: the settings, ``DYNAFORGE_INFERENCE_TIMEOUT_S`` and
    ``DYNAFORGE_INFERENCE_LOAD_TIMEOUT_S``).

    Raises KeyError naming the tasks or checks that do not exist."""
    registry = plugins.registry
    wanted = list(codes) if codes else sorted(registry.tasks)
    unknown = [c for c in wanted if c not in registry.tasks]
    if unknown:
        raise KeyError(f"no task {', '.join(unknown)} (installed: {', '.join(sorted(registry.tasks)) or 'none'})")
    selected = [c for c in CHECKS if checks is None or c.name in set(checks)]
    if checks is not None and len(selected) != len(set(checks)):
        names = ", ".join(c.name for c in CHECKS)
        raise KeyError(f"no check {', '.join(sorted(set(checks) - {c.name for c in selected}))} (checks: {names})")
    limits = limits or ServerLimits.from_settings()
    inference = None
    if models:
        inference = LocalInferenceClient(
            lambda: plugins.registry.backends,
            timeout_s=max(MODEL_TIMEOUT_S, limits.inference_timeout_s),
            load_timeout_s=max(MODEL_TIMEOUT_S, limits.load_timeout_s),
        )
    token = _LIMITS.set(limits)
    try:
        return [await run_check(c, registry.tasks[code], registry, inference) for code in wanted for c in selected]
    finally:
        _LIMITS.reset(token)
        if inference is not None:
            await inference.close()


def run_checks_sync(plugins: Plugins, codes: Iterable[str] | None = None, **kwargs: Any) -> list[CheckResult]:
    """:func:`run_checks` from code that runs no event loop."""
    return asyncio.run(run_checks(plugins, codes, **kwargs))


def report_lines(results: Iterable[CheckResult]) -> list[str]:
    """One line per check (ok, FAIL or skip, the task, the check), each failed one followed by its problems."""
    out = []
    for r in results:
        mark = "skip" if r.skipped else ("ok" if r.passed else "FAIL")
        out.append(f"{mark:4}  {r.task}  {r.check}" + (f"  ({r.skipped})" if r.skipped else ""))
        out += [f"      - {p}" for p in r.problems]
    return out
