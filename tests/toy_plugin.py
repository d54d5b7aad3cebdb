"""A test-only plugin: a tiny classification task with a deterministic model, and a slow model for timeouts."""

from __future__ import annotations

import time

from dynaforge import ChoiceField, ModelSpec, Role, Task, TextField, hookimpl


def keyword_model(inputs):
    """Predicts 'good' when the text contains the word 'good', else 'bad'."""
    return [
        {"label": "good" if "good" in item["text"].lower().split() else "bad", "probabilities": {}} for item in inputs
    ]


def slow_model(inputs):
    time.sleep(2.0)
    return keyword_model(inputs)


def broken_model(inputs):
    return [{"label": "not-a-label"} for _ in inputs]


class ToyTask(Task):
    code = "toy"
    name = "Toy"
    instructions = "Write a text and say whether it is good or bad."
    labels = ("good", "bad")
    fields = (
        TextField(name="topic", role=Role.CONTEXT, required=False, max_length=200),
        TextField(name="text", role=Role.INPUT, max_length=100),
        ChoiceField(name="label", role=Role.TARGET),
        TextField(name="note", role=Role.METADATA, required=False, max_length=50),
    )
    default_target_models = (ModelSpec("keyword", "python", {"callable": "toy_plugin:keyword_model"}),)
    demo_contexts = ({"topic": "weather"}, {"topic": "food"}, {"topic": "films"})


class ToyPlugin:
    __name__ = "toy_plugin"

    @hookimpl
    def register_tasks(self, register):
        register(ToyTask())


PLUGIN = ToyPlugin()  # for an entry point (``toy = toy_plugin:PLUGIN``) in tests that start processes
