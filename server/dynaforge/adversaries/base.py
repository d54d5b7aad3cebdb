"""The adversary contract: models that propose examples meant to fool a round's target model.

An :class:`Adversary` is registered by a plugin's ``register_adversaries`` hook. The platform calls its
:meth:`Adversary.attack` with an :class:`AttackRequest` (the task, a context, optionally an annotator's draft, a
seeded ``random.Random``) and an :class:`Oracle`: black-box access to the round's target model(s), which answers with
each candidate's prediction, whether it fooled the target and the probability the target gave the claimed gold.
The oracle counts every candidate it is asked about against a query budget and stops the attack (it raises
:class:`AttackStopped`) when the budget, the time allowed or the caller runs out; an adversary catches that and returns
what it found so far, as every built-in one does.

The platform uses adversaries two ways:

* **assist** (``suggestEdits``): an annotator's draft goes in; candidates that flip the target come back as
  suggestions beside the form. Adversaries that need a draft (``needs_draft``) serve here.
* **generate** (``generateCandidates``): a job runs an adversary over a round's contexts (with the examples the
  target got right as drafts, for those that need one); candidates that fool the target enter the validation queue
  as examples whose source is ``MACHINE``.

Candidates are the example's own fields (input, target and optional metadata fields, as an annotator would submit
them for the context): the target fields are the gold the adversary *claims*. Validators decide whether it holds.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from dynaforge.tasks.fields import ChoiceField, Role, TextField

if TYPE_CHECKING:
    from dynaforge.tasks.base import Perturbation, Task

#: Where an example came from: written by a person alone, written by a person from a machine suggestion, or
#: proposed by a machine adversary (and judged by people like any other).
SOURCES: tuple[str, ...] = ("HUMAN", "ASSISTED", "MACHINE")


class AttackStopped(Exception):
    """The oracle refuses further queries; ``reason`` is ``budget``, ``time`` or ``cancelled``."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


class AdversaryFailed(Exception):
    """The adversary could not run at all (its service refused or answered nonsense, a resource is missing); the
    message says what to change. The platform reports it to the caller; nothing is stored."""


@dataclass(frozen=True)
class Verdict:
    """The target's answer on one candidate.

    ``prediction`` is the round's prediction (target fields, and ``probabilities``/``confidence`` when the model
    gave them); ``fooled`` is the task's own judgement against the candidate's claimed gold; ``gold_probability`` is
    what the target gave the claimed gold (None when the model gives no probabilities): lower is closer to fooling.
    """

    prediction: dict[str, Any]
    fooled: bool
    gold_probability: float | None
    members: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Candidate:
    """An example an adversary proposes: ``fields`` (what an annotator would submit for the context, gold
    included), a short ``rationale`` a person can check, the ``edits`` made to the draft (``"'good' -> 'fine'"``;
    empty when written from scratch), and the target's ``verdict`` on it (None when the oracle was not asked)."""

    fields: dict[str, Any]
    rationale: str
    edits: tuple[str, ...] = ()
    verdict: Verdict | None = None

    @property
    def fooled(self) -> bool:
        return self.verdict is not None and self.verdict.fooled


@dataclass
class AttackRequest:
    """What an adversary works from.

    ``context``: the context's fields ({} when the task has none or the draft carries them). ``draft``: the
    annotator's example fields with the gold they claim (input and target fields), or None (propose from the
    context alone). ``max_candidates``: how many fooling candidates the caller wants at most. ``fooled_before``:
    field values of examples that fooled this task's targets before (for few-shot adversaries; may be empty): only
    the asker's own and published examples, never their gold fields, since what an adversary is shown can come back
    in what it proposes.
    ``perturbations``: the task's registered perturbations by name (those ``task.perturbations`` names).
    ``settings``: the platform's settings (for adversaries configured by the operator), or None.
    """

    task: Task
    context: dict[str, Any]
    draft: dict[str, Any] | None
    rng: random.Random
    max_candidates: int = 3
    fooled_before: list[dict[str, Any]] = field(default_factory=list)
    perturbations: dict[str, Perturbation] = field(default_factory=dict)
    settings: Any = None


#: A function that asks the round's target(s) about model inputs; returns, for each, every member's prediction
#: (already read by the task) as ``{"model", "prediction", "latency_ms"}`` dicts.
Predict = Callable[[list[dict[str, Any]]], Awaitable[list[list[dict[str, Any]]]]]
#: Turns the members' predictions into the round's prediction and ``fooled`` (the platform's ``judge``).
Judge = Callable[[list[dict[str, Any]], dict[str, Any], dict[str, Any]], tuple[dict[str, Any], bool]]


class Oracle:
    """Black-box, budgeted access to a round's target model(s) for one attack on one context.

    ``await oracle.query([fields, ...])`` returns a :class:`Verdict` per candidate, in order, from one batched call.
    Each candidate not asked before costs one query; a repeated candidate is answered from memory for free. A call
    that needs more queries than remain, or comes after the deadline or a cancellation, raises
    :class:`AttackStopped` without asking the model. ``remaining`` is what is left.
    """

    def __init__(
        self,
        task: Task,
        context: dict[str, Any],
        predict: Predict,
        judge: Judge,
        *,
        max_queries: int,
        time_limit_s: float,
        cancelled: Callable[[], bool] | None = None,
    ):
        self.task = task
        self.context = dict(context)
        self._predict = predict
        self._judge = judge
        self.max_queries = max_queries
        self.deadline = time.monotonic() + time_limit_s
        self.time_limit_s = time_limit_s
        self._cancelled = cancelled or (lambda: False)
        self.queries = 0
        self.calls = 0
        self._seen: dict[str, Verdict] = {}

    def restart_clock(self, time_limit_s: float) -> None:
        """Give the attack ``time_limit_s`` from now (after a first query that included loading the model, say)."""
        self.time_limit_s = time_limit_s
        self.deadline = time.monotonic() + time_limit_s

    @property
    def remaining(self) -> int:
        return max(0, self.max_queries - self.queries)

    def check(self) -> None:
        """Raise :class:`AttackStopped` when the attack must stop (out of time, or cancelled)."""
        if self._cancelled():
            raise AttackStopped("cancelled", "the attack was cancelled")
        if time.monotonic() >= self.deadline:
            raise AttackStopped("time", f"the attack ran past its {self.time_limit_s:g} s")

    async def query(self, candidates: Sequence[dict[str, Any]]) -> list[Verdict]:
        self.check()
        keys = [_key(c) for c in candidates]
        new = list(dict.fromkeys(k for k in keys if k not in self._seen))
        if len(new) > self.remaining:
            raise AttackStopped(
                "budget", f"{len(new)} more queries asked for, {self.remaining} left of {self.max_queries}"
            )
        if new:
            by_key = {k: c for k, c in zip(keys, candidates, strict=True)}
            # a candidate may carry context fields of its own (an example written without a stored context):
            # the task sees them as context, as it does an annotator's
            split = {k: self.task.split_fields({**self.context, **by_key[k]}) for k in new}
            inputs = [self.task.build_model_input(*split[k]) for k in new]
            self.queries += len(new)
            self.calls += 1
            try:
                answers = await asyncio.wait_for(self._predict(inputs), max(0.001, self.deadline - time.monotonic()))
            except TimeoutError as exc:
                message = f"the target did not answer within the attack's {self.time_limit_s:g} s"
                raise AttackStopped("time", message) from exc
            for k, members in zip(new, answers, strict=True):
                context, own = split[k]
                prediction, fooled = self._judge(members, own, context)
                self._seen[k] = Verdict(
                    prediction=prediction,
                    fooled=bool(fooled),
                    gold_probability=gold_probability(self.task, prediction, by_key[k]),
                    members=tuple(members),
                )
        return [self._seen[k] for k in keys]

    async def query_one(self, candidate: dict[str, Any]) -> Verdict:
        return (await self.query([candidate]))[0]


def _key(fields: dict[str, Any]) -> str:
    return json.dumps(fields, sort_keys=True, default=str)


def gold_probability(task: Task, prediction: dict[str, Any], claimed: dict[str, Any]) -> float | None:
    """The probability the target gave the claimed gold: for a task with one choice target, ``probabilities[gold]``
    when the model gave probabilities; otherwise its ``confidence`` when it predicted the gold and ``1 - confidence``
    when it did not; None when the model gave neither."""
    targets = task.fields_with(Role.TARGET)
    probabilities = prediction.get("probabilities")
    if len(targets) == 1 and isinstance(targets[0], ChoiceField) and isinstance(probabilities, dict) and probabilities:
        value = probabilities.get(claimed.get(targets[0].name))
        return float(value) if isinstance(value, (int, float)) else 0.0
    confidence = prediction.get("confidence")
    if isinstance(confidence, (int, float)):
        right = all(claimed.get(t.name) == prediction.get(t.name) for t in targets)
        return float(confidence) if right else 1.0 - float(confidence)
    return None


class Adversary:
    """Base class of every adversary. Subclass it, set ``name`` and ``description``, implement :meth:`attack`.

    ``name`` is unique across plugins (lowercase letters, digits, ``-`` and ``_``); it is what ``generateCandidates``
    and ``suggestEdits`` name and what every example it helped with records. ``needs_draft``: the adversary edits a
    draft and proposes nothing from a context alone. ``task_codes``: the tasks it is written for (empty: any task
    :meth:`unsuitable` does not refuse). ``assists``: it may serve ``suggestEdits`` (fast enough for a person
    waiting); ``generates``: it may serve ``generateCandidates``.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    needs_draft: ClassVar[bool] = True
    task_codes: ClassVar[tuple[str, ...]] = ()
    assists: ClassVar[bool] = True
    generates: ClassVar[bool] = True

    def unsuitable(self, task: Task, settings: Any = None) -> str | None:
        """Why this adversary cannot work on ``task`` (with these platform settings), or None when it can."""
        if self.task_codes and task.code not in self.task_codes:
            return f"{self.name} is written for {', '.join(self.task_codes)}"
        return None

    async def attack(self, request: AttackRequest, oracle: Oracle) -> list[Candidate]:
        """Candidates for ``request``, each with the oracle's verdict; the platform keeps the ones that fooled the
        target (at most ``request.max_candidates``). Must not raise :class:`AttackStopped`: return what was found."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<Adversary {self.name}>"


def text_input_fields(task: Task) -> list[str]:
    """The task's input fields that hold free text (what edit-based adversaries change)."""
    return [f.name for f in task.fields_with(Role.INPUT) if isinstance(f, TextField)]


def claimed_gold(task: Task, fields: dict[str, Any]) -> dict[str, Any]:
    """The target field values of ``fields`` (the gold an example claims)."""
    return {name: fields[name] for name in task.field_names(Role.TARGET) if name in fields}


def fooling(candidates: Sequence[Candidate], limit: int) -> list[Candidate]:
    """The candidates that fooled the target, lowest gold probability first, at most ``limit``, without repeats."""
    seen: set[str] = set()
    kept = []
    ordered = sorted(
        (c for c in candidates if c.fooled),
        key=lambda c: c.verdict.gold_probability if c.verdict and c.verdict.gold_probability is not None else 0.0,
    )
    for c in ordered:
        k = _key(c.fields)
        if k not in seen:
            seen.add(k)
            kept.append(c)
    return kept[:limit]
