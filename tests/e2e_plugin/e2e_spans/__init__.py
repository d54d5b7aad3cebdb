"""A throwaway Dynaforge task plugin for the end-to-end tests (tests/test_e2e.py).

The test copies this package into a temporary folder next to an ``e2e_spans-0.1.dist-info`` folder whose
``entry_points.txt`` declares it in the ``dynaforge`` group, and puts that folder on the server's PYTHONPATH: the
plugin is then discovered through entry points exactly like an installed one, without pip.

The task, ``e2e-spans``, is extractive question answering: a passage (context), a question (input) and the answer
span selected from the passage (target). Its target model answers every question with the passage's first word.
"""

from __future__ import annotations

import re
import time
from typing import Any

from dynaforge import ChoiceField, ModelSpec, Role, SpanField, Task, TextField, hookimpl  # noqa: F401

_WORD = re.compile(r"\w+")


def answer_first_word(inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The "model": for each input, the first word of its passage as a span."""
    outputs = []
    for item in inputs:
        match = _WORD.search(item.get("passage") or "")
        text, start = (match.group(), match.start()) if match else ("", 0)
        outputs.append({"answer": {"text": text, "start": start}})
    return outputs


def answer_first_word_slowly(inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same answers after 40 ms per forward pass, so that a burst keeps the model busy."""
    time.sleep(0.04)
    return answer_first_word(inputs)


class E2ESpansTask(Task):
    code = "e2e-spans"
    name = "E2E spans"
    description = "Extractive question answering, for the end-to-end tests."
    instructions = "Ask a question about the passage and select its answer in the passage."
    fields = (
        TextField(name="passage", role=Role.CONTEXT, description="The passage to ask about."),
        TextField(name="question", role=Role.INPUT, max_length=200, description="Your question."),
        SpanField(
            name="answer",
            role=Role.TARGET,
            context_field="passage",
            description="The answer, selected from the passage.",
        ),
    )
    metrics = ("accuracy",)  # the exact match of answer spans
    principal_metric = "accuracy"
    default_target_models = (
        ModelSpec(name="first-word", backend="python", config={"callable": "e2e_spans:answer_first_word"}),
    )

    def is_fooled(self, example, prediction, context):
        # Only the selected text counts: the same words at another offset are still the model's answer.
        return (example.get("answer") or {}).get("text") != (prediction.get("answer") or {}).get("text")


@hookimpl
def register_tasks(register):
    register(E2ESpansTask())
