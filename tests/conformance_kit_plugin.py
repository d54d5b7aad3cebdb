"""Tasks for the conformance kit's own tests (test_conformance_kit.py): one that passes every check, one that fails
each check in a known way. A plugin module, as ``dynaforge check --plugin conformance_kit_plugin`` loads it."""

from __future__ import annotations

import random
import time

from dynaforge import ChoiceField, DataSelection, ModelSpec, Perturbation, Role, Task, TextField, hookimpl

INSTRUCTIONS = (
    "Write a short review and say whether it is good or bad. The model reads only the words: a review that praises "
    "without the word 'good' fools it."
)


def keyword_model(inputs):
    """Says 'good' when the text holds the word 'good', else 'bad'."""
    return [{"label": "good" if "good" in item["text"].lower().split() else "bad"} for item in inputs]


class KeywordModel:
    def predict(self, inputs):
        return keyword_model(inputs)


def fit_keywords(examples, *, seed):
    """A data selection recipe that learns nothing: the keyword model, whatever the selection."""
    assert examples and all("label" in e for e in examples), "the selected items come whole, gold included"
    return KeywordModel()


def probable_keyword_model(inputs):
    """The keyword model, with the probabilities of its two labels."""
    return [{**o, "probabilities": {"good": 0.8, "bad": 0.2} if o["label"] == "good" else {"good": 0.3, "bad": 0.7}}
            for o in keyword_model(inputs)]  # fmt: skip


def slow_keyword_model(inputs):
    """The keyword model, 0.15 s late: slower than a server that waits 0.05 s for a prediction."""
    time.sleep(0.15)
    return keyword_model(inputs)


def batch_sensitive_model(inputs):
    """Answers 'good' to everything in a batch and 'bad' alone: what a padding bug looks like."""
    return [{"label": "good" if len(inputs) > 1 else "bad"} for _ in inputs]


def shout(text, rng):
    """An input perturbation: upper case."""
    return text.upper()


def unseeded_padding(text, rng):
    """A perturbation that breaks the rules: it ignores its seed, and makes texts too long for the task."""
    return f"{text} {random.random()} {random.random()}"


FIELDS = (
    TextField(name="text", role=Role.INPUT, max_length=60),
    ChoiceField(name="label", role=Role.TARGET),
)


class ConformingTask(Task):
    code = "kit-good"
    name = "Kit: conforming"
    description = "Short reviews labelled good or bad."
    instructions = INSTRUCTIONS
    labels = ("good", "bad")
    fields = FIELDS
    perturbations = ("kit-shout",)
    default_target_models = (ModelSpec("keyword", "python", {"callable": "conformance_kit_plugin:keyword_model"}),)
    sample_examples = (
        {"text": "a good film", "label": "good"},
        {"text": "a fine film", "label": "good"},
        {"text": "a dull film", "label": "bad"},
    )


class SelectingTask(ConformingTask):
    code = "kit-select"
    name = "Kit: data selections"
    submission_kinds = ("selection",)
    data_selection = DataSelection(budget=2, trainer="conformance_kit_plugin:fit_keywords")


class BrokenTask(Task):
    code = "kit-broken"
    name = "Kit: broken"
    description = "Fails every check it can."
    instructions = "Too short."
    labels = ("good", "bad")
    fields = FIELDS
    perturbations = ("kit-pad",)
    default_target_models = (
        ModelSpec("padding-bug", "python", {"callable": "conformance_kit_plugin:batch_sensitive_model"}),
    )
    sample_examples = (
        {"text": "a good film", "label": "good"},
        {"text": "a dull film", "label": "meh"},  # not one of the labels
        {"text": "far too long " * 10, "label": "bad"},  # over max_length
    )

    def perturb(self, example, perturbation, rng):
        """Breaks the rules too: it turns every gold label to 'bad'."""
        return {**super().perturb(example, perturbation, rng), "label": "bad"}

    def json_schema(self, *roles):
        schema = super().json_schema(*roles)
        return {**schema, "properties": dict(reversed(schema["properties"].items()))} if not roles else schema


class Plugin:
    __name__ = "conformance_kit_plugin"

    @hookimpl
    def register_perturbations(self, register):
        register(Perturbation(name="kit-shout", apply=shout, description="upper case"))
        register(Perturbation(name="kit-pad", apply=unseeded_padding, description="breaks the rules"))

    @hookimpl
    def register_tasks(self, register):
        register(ConformingTask())
        register(SelectingTask())
        register(BrokenTask())


PLUGIN = Plugin()


@hookimpl
def register_perturbations(register):
    PLUGIN.register_perturbations(register)


@hookimpl
def register_tasks(register):
    PLUGIN.register_tasks(register)
