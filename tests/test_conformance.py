"""Conformance of every installed task plugin, one test set per registered task.

Whatever a community adds, a task must: declare itself consistently (fields, metrics, perturbations and slices
that exist), publish a JSON Schema that matches its fields, ship sample examples and demo contexts that pass its
own validation, keep every sample valid under each of its perturbations, and come with default target models that
load offline and answer its samples with predictions the task can read and judge.
"""

from __future__ import annotations

import asyncio
import random

import pytest

from dynaforge.inference.client import LocalInferenceClient
from dynaforge.plugins import Plugins
from dynaforge.tasks.fields import Role

PLUGINS = Plugins()
TASKS = sorted(PLUGINS.registry.tasks)


@pytest.fixture(scope="module")
def inference():
    client = LocalInferenceClient(PLUGINS.registry.backends, timeout_s=120.0)
    yield client
    asyncio.run(client.close())


def test_the_four_tasks_are_installed_and_no_plugin_is_broken():
    assert PLUGINS.errors == {}
    assert {"nli", "qa", "sentiment", "hatespeech"} <= set(TASKS)


@pytest.fixture(params=TASKS)
def task(request):
    return PLUGINS.registry.tasks[request.param]


def test_declaration(task):
    registry = PLUGINS.registry
    assert task.check_declaration() == []
    assert task.name and task.description and len(task.instructions) > 80
    assert task.principal_metric in task.metrics
    assert set(task.metrics) <= set(registry.metrics), "metrics must be registered by some plugin"
    assert set(task.perturbations) <= set(registry.perturbations)
    assert set(task.fairness_slices) <= set(registry.slices)
    assert task.default_target_models, "a task ships at least one default target model"
    for spec in task.default_target_models:
        assert spec.backend in registry.backends
        assert registry.backends[spec.backend].check_config(spec.config) == []


def test_json_schema_matches_the_fields(task):
    schema = task.json_schema()
    assert list(schema["properties"]) == [f.name for f in task.fields]
    assert set(schema["required"]) == {f.name for f in task.fields if f.required}
    inputs = task.json_schema(Role.INPUT)
    assert set(inputs["properties"]) == set(task.field_names(Role.INPUT))


def test_samples_and_demo_contexts_pass_validation(task):
    assert len(task.sample_examples) >= 2
    for values in task.sample_examples:
        context, example = task.split_fields(values)
        if context:
            task.validate_context(context)
        cleaned = task.validate_example(example, context or None)
        assert set(cleaned) <= set(example)
    for context in task.demo_contexts:
        task.validate_context(context)
    if task.field_names(Role.CONTEXT) and any(f.required for f in task.fields_with(Role.CONTEXT)):
        assert task.demo_contexts, "a task with required context fields needs demo contexts"


def test_perturbations_keep_the_schema(task):
    registry = PLUGINS.registry
    for name in task.perturbations:
        perturbation = registry.perturbations[name]
        for i, values in enumerate(task.sample_examples):
            context, example = task.split_fields(values)
            perturbed = task.perturb(example, perturbation, random.Random(i))
            assert set(perturbed) == set(example)
            for f in task.fields:
                if f.role != Role.INPUT and f.name in example:
                    assert perturbed[f.name] == example[f.name], f"{name} changed the non-input field {f.name}"
            task.validate_example(perturbed, context or None)
            assert task.perturb(example, perturbation, random.Random(i)) == perturbed, f"{name} is not seeded"


async def test_default_models_answer_the_samples(task, inference):
    for spec in task.default_target_models:
        inputs, examples = [], []
        for values in task.sample_examples:
            context, example = task.split_fields(values)
            cleaned = task.validate_example(example, context or None)
            inputs.append(task.build_model_input(context, cleaned))
            examples.append((cleaned, context))
        answer = await inference.predict(spec, inputs)
        assert len(answer.outputs) == len(inputs)
        for output, (cleaned, context) in zip(answer.outputs, examples, strict=False):
            prediction = task.read_model_output(output)
            assert set(task.field_names(Role.TARGET)) <= set(prediction)
            assert isinstance(task.is_fooled(cleaned, prediction, context), bool)
        # Batching (and its padding) does not change what the model answers.
        single = task.read_model_output((await inference.predict(spec, inputs[:1])).outputs[0])
        batched = task.read_model_output(answer.outputs[0])
        targets = task.field_names(Role.TARGET)
        assert {t: single[t] for t in targets} == {t: batched[t] for t in targets}
