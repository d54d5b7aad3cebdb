"""The task conformance kit: the checks every task must pass, whoever wrote it and wherever it is installed.

A task passes when it declares itself consistently, publishes a JSON Schema that matches its fields, ships sample
examples and demo contexts that pass its own validation, keeps every sample valid under each of its perturbations
(the same seed giving the same copy), and comes with default target models that load offline and answer its samples
in a batch and one at a time, alike, with predictions the task can read and judge.

Three ways in, one set of checks:

- ``dynaforge check [TASK ...]`` on the command line, for every installed task or the ones named (exit status 1 when
  one fails, ``--json`` for machines);
- ``parametrize_with_checks`` in a plugin's own tests, one pytest test per check (``dynaforge.testing``);
- :func:`run_checks` from Python.

Each check returns the problems it found, in words a task author can act on, rather than stopping at the first.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from dynaforge.adversaries.base import AttackRequest, Oracle
from dynaforge.defaults.backends.common import import_object
from dynaforge.inference.client import InferenceClient, LocalInferenceClient
from dynaforge.plugins import Plugins, Registry, task_registry_problems
from dynaforge.tasks.base import Task
from dynaforge.tasks.fields import Role

__all__ = ["CHECKS", "Check", "CheckResult", "report_lines", "run_check", "run_checks", "run_checks_sync"]

#: How long one default model may take to load and answer the samples, in seconds.
MODEL_TIMEOUT_S = 120.0


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
    """Each perturbation keeps every sample valid, changes only input fields, and is reproducible by seed."""
    problems = []
    samples = _valid_samples(task)
    for name in task.perturbations:
        perturbation = registry.perturbations.get(name)
        if perturbation is None:
            continue  # check_declaration reports it
        for i, example, _, context in samples:
            where = f"perturbation {name} on sample_examples[{i}]"
            try:
                perturbed = task.perturb(example, perturbation, random.Random(i))
                again = task.perturb(example, perturbation, random.Random(i))
            except Exception as exc:
                problems.append(f"{where} raised {type(exc).__name__}: {exc}")
                continue
            if set(perturbed) != set(example):
                problems.append(f"{where} changed the set of fields to {sorted(perturbed)}")
                continue
            changed = [
                f.name
                for f in task.fields
                if f.role is not Role.INPUT and f.name in example and perturbed[f.name] != example[f.name]
            ]
            if changed:
                problems.append(f"{where} changed the non-input fields {changed}")
            try:
                task.validate_example(perturbed, context or None)
            except Exception as exc:
                problems.append(f"{where} made an invalid example: {type(exc).__name__}: {exc}")
            if again != perturbed:
                problems.append(f"{where} is not reproducible: the same seed gave two different copies")
    return problems


async def check_default_models(task: Task, registry: Registry, inference: InferenceClient | None) -> list[str]:
    """Each default target model loads offline and answers the samples in a batch and one at a time, alike, with
    outputs the task reads into every target field and judges as fooled or not."""
    assert inference is not None
    problems = []
    examples = [(cleaned, context) for _, _, cleaned, context in _valid_samples(task)]
    inputs = [task.build_model_input(context, cleaned) for cleaned, context in examples]
    if not inputs:
        return ["no valid sample example to run the default models on"]
    distinct = len(inputs)
    if distinct == 1:  # a batch of one is no batch: send the one sample twice
        inputs, examples = inputs * 2, examples * 2
    targets = task.field_names(Role.TARGET)
    for spec in task.default_target_models:
        if spec.backend not in registry.backends:
            continue  # check_declaration reports it
        where = f"default model {spec.name}"
        try:
            answer = await inference.predict(spec, inputs)
        except Exception as exc:
            problems.append(f"{where} did not answer the samples: {type(exc).__name__}: {exc}")
            continue
        if len(answer.outputs) != len(inputs):
            problems.append(f"{where} answered {len(answer.outputs)} outputs for {len(inputs)} inputs")
            continue
        batched: list[dict[str, Any] | None] = []
        for i, (output, (cleaned, context)) in enumerate(zip(answer.outputs, examples, strict=True)):
            try:
                prediction = task.read_model_output(output)
            except Exception as exc:
                problems.append(f"{where}: read_model_output failed on output {i}: {type(exc).__name__}: {exc}")
                batched.append(None)
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
            batched.append({t: prediction.get(t) for t in targets})
        # batching, and the padding it brings, must not change what the model answers
        for i, item in enumerate(inputs[: min(distinct, 3)]):
            if batched[i] is None:
                continue
            try:
                alone = task.read_model_output((await inference.predict(spec, [item])).outputs[0])
            except Exception as exc:
                problems.append(f"{where} did not answer sample {i} alone: {type(exc).__name__}: {exc}")
                continue
            if {t: alone.get(t) for t in targets} != batched[i]:
                problems.append(
                    f"{where} answers sample {i} differently alone ({ {t: alone.get(t) for t in targets} }) "
                    f"and in a batch ({batched[i]})"
                )
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


CHECKS: tuple[Check, ...] = (
    Check("declaration", "names, texts and registered metrics, perturbations, slices and backends", check_declaration),
    Check("json-schema", "the JSON Schema matches the fields", check_json_schema),
    Check("samples", "sample examples and demo contexts pass validation", check_samples),
    Check("perturbations", "perturbations keep samples valid and are seeded", check_perturbations),
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
) -> list[CheckResult]:
    """Every check (or those named) on every registered task (or those named), in order.

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
    inference = LocalInferenceClient(lambda: plugins.registry.backends, timeout_s=MODEL_TIMEOUT_S) if models else None
    try:
        return [await run_check(c, registry.tasks[code], registry, inference) for code in wanted for c in selected]
    finally:
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
