"""Template adversaries a task plugin declares (CheckList-style): hand-written rewrites whose gold is known.

A :class:`Template` turns a context and optionally a draft into rewritten examples, each with the gold it claims and
a rationale; a :class:`TemplateAdversary` groups a task's templates under one registered name, asks the target about
every valid rewrite in one batch (as many as the budget allows) and returns them with their verdicts. The templates
say what they claim: "adding a negation flips positive to negative" is the template author's claim, which validators
then check like any other.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from dynaforge.adversaries.base import Adversary, AttackRequest, AttackStopped, Candidate, Oracle
from dynaforge.errors import InvalidInput

#: A rewrite: the example's fields (gold included), a rationale, and the edits made ("" when written afresh).
Rewrite = tuple[dict[str, Any], str]


@dataclass(frozen=True)
class Template:
    """One rewrite rule. ``apply(context, draft, rng) -> [(fields, rationale), ...]``: ``draft`` is None when the
    adversary works from the context alone; a template that needs a draft returns [] without one."""

    name: str
    apply: Callable[[dict[str, Any], dict[str, Any] | None, random.Random], list[Rewrite]]
    description: str = ""


class TemplateAdversary(Adversary):
    """A task's templates, as one adversary. ``per_template``: how many rewrites each template may offer per
    attack (the rest are dropped at random, seeded)."""

    needs_draft: ClassVar[bool] = False

    def __init__(
        self,
        name: str,
        task_code: str,
        templates: tuple[Template, ...],
        *,
        description: str = "",
        per_template: int = 8,
    ):
        self.name = name  # type: ignore[misc]  # an instance attribute, as each task's template set is its own
        self.task_codes = (task_code,)  # type: ignore[misc]
        self.templates = templates
        self.description = description or (  # type: ignore[misc]
            f"Rewrites written for {task_code}: " + ", ".join(t.name for t in templates)
        )
        self.per_template = per_template

    def rewrites(self, request: AttackRequest) -> list[Candidate]:
        """Every valid rewrite the templates offer for ``request``, not yet asked about (no verdict)."""
        task, out = request.task, []
        seen: set[str] = set()
        for template in self.templates:
            offered = template.apply(dict(request.context), dict(request.draft) if request.draft else None, request.rng)
            if len(offered) > self.per_template:
                offered = request.rng.sample(offered, self.per_template)
            for fields, rationale in offered:
                try:
                    cleaned = task.validate_example(fields, request.context or None)
                except InvalidInput:
                    continue  # a template's rewrite that the task refuses is dropped, never proposed
                key = repr(sorted(cleaned.items()))
                if key in seen or (request.draft is not None and cleaned == request.draft):
                    continue
                seen.add(key)
                edits = _edits(request.draft, cleaned)
                out.append(Candidate(fields=cleaned, rationale=f"{template.name}: {rationale}", edits=edits))
        return out

    async def attack(self, request: AttackRequest, oracle: Oracle) -> list[Candidate]:
        candidates = self.rewrites(request)
        if not candidates:
            return []
        asked = candidates[: oracle.remaining]
        try:
            verdicts = await oracle.query([c.fields for c in asked])
        except AttackStopped:
            return []
        return [
            Candidate(fields=c.fields, rationale=c.rationale, edits=c.edits, verdict=v)
            for c, v in zip(asked, verdicts, strict=True)
        ]


def _edits(draft: dict[str, Any] | None, fields: dict[str, Any]) -> tuple[str, ...]:
    if draft is None:
        return ()
    return tuple(
        f"{name}: {draft.get(name)!r} -> {value!r}" for name, value in fields.items() if draft.get(name) != value
    )
