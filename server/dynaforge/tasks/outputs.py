"""What the platform makes of a target model's output: the task's reading of it (``read_output``), the round's
verdict from every member of an ensemble (``judge``, ``majority``) and a judge model's verdict (``read_verdict``).
Pure functions of the task: the write path (``services.examples``), the evaluation job, the machine adversaries and
the conformance kit share them."""

from __future__ import annotations

import inspect
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from dynaforge.tasks.base import Task
from dynaforge.tasks.fields import Role

__all__ = ["MAX_RATIONALE", "judge", "majority", "read_output", "read_verdict"]

#: The longest rationale of a judge's verdict that is kept (characters).
MAX_RATIONALE = 2000


def _target_key(task: Task, prediction: dict[str, Any]) -> str:
    return json.dumps({t: prediction.get(t) for t in task.field_names(Role.TARGET)}, sort_keys=True, default=str)


def majority(task: Task, predictions: list[dict[str, Any]]) -> tuple[dict[str, Any], int]:
    """The most common target values among the members' predictions (ties go to the earliest) and their count."""
    keys = [_target_key(task, p) for p in predictions]
    winner = Counter(keys).most_common(1)[0][0]
    return dict(predictions[keys.index(winner)]), keys.count(winner)


def judge(
    task: Task, rule: str, members: list[dict[str, Any]], example: dict[str, Any], context: dict[str, Any]
) -> tuple[dict[str, Any], bool]:
    """The round's prediction and whether the annotator fooled it, from every member's prediction.

    Each member gets its own ``fooled`` flag (stored with the example). With one model the rule does not matter.
    With an ensemble, ``rule`` is one of ``tasks.ENSEMBLE_RULES``; the prediction shown is the majority's
    (``majority``), the first wrong member's when fooled (``any_wrong``), or the first right member's when not
    fooled (``all_wrong``), annotated with ``ensemble: {rule, members, fooledMembers}``.
    """
    for m in members:
        m["fooled"] = bool(task.is_fooled(example, m["prediction"], context))
    if len(members) == 1:
        return members[0]["prediction"], members[0]["fooled"]
    predictions = [m["prediction"] for m in members]
    wrong = [m for m in members if m["fooled"]]
    if rule == "any_wrong":
        fooled = bool(wrong)
        chosen = dict(wrong[0]["prediction"]) if fooled else dict(predictions[0])
    elif rule == "all_wrong":
        fooled = len(wrong) == len(members)
        right = [m for m in members if not m["fooled"]]
        chosen = majority(task, predictions)[0] if fooled else dict(right[0]["prediction"])
    else:
        chosen = majority(task, predictions)[0]
        fooled = bool(task.is_fooled(example, chosen, context))
    chosen["ensemble"] = {"rule": rule, "members": len(members), "fooledMembers": len(wrong)}
    return chosen, fooled


def read_output(task: Task, output: Any, model_input: dict[str, Any]) -> dict[str, Any]:
    """``task.read_model_output``, given the model input too when the task's method accepts it (so that, say, a
    span task can check that the model's span sits in the passage)."""
    reader: Callable[..., dict[str, Any]] = task.read_model_output
    if _takes_model_input(type(task)):
        return reader(output, model_input=model_input)
    return reader(output)


_TAKES_MODEL_INPUT: dict[type[Task], bool] = {}


def _takes_model_input(task_class: type[Task]) -> bool:
    known = _TAKES_MODEL_INPUT.get(task_class)
    if known is None:
        known = _TAKES_MODEL_INPUT[task_class] = (
            "model_input" in inspect.signature(task_class.read_model_output).parameters
        )
    return known


def read_verdict(output: Any) -> tuple[bool, str]:
    """A judge model's output as ``(fooled, rationale)``, the rationale cut to ``MAX_RATIONALE`` characters;
    ValueError saying what is wrong with anything else."""
    if not isinstance(output, dict):
        raise ValueError("the judge answered no JSON object")
    if isinstance(output.get("unusable"), str):
        raise ValueError(f"the judge's reply could not be read: {output['unusable']}")
    fooled = output.get("fooled")
    if not isinstance(fooled, bool):
        raise ValueError('the judge answered no boolean "fooled"')
    rationale = output.get("rationale")
    return fooled, (rationale if isinstance(rationale, str) else "")[:MAX_RATIONALE]
