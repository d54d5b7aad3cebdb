"""Perturbed copies of a scoring data set: the robustness and fairness variants of each example.

For every example and every perturbation (by default the ones its task declares), :func:`iter_variants` applies the
perturbation through :meth:`Task.perturb` (the text input fields, each on its own; or, for a perturbation whose
``scope`` is ``"example"``, the context and input fields together, a span such as a QA answer following its passage)
and yields a :class:`Variant` linked to its original by ``original_id``, with the perturbation's effect on the gold
(:data:`dynaforge.tasks.base.GOLD_EFFECTS`: kept, unknown, or dropped from the variant's fields).

- **Seeded, order-free.** Each (example, perturbation) pair gets its own ``random.Random``, seeded from a hash of
  the data set's ``seed``, the example's id and the perturbation's name (:func:`variant_seed`). A variant therefore
  depends only on those three and the example's fields: not on the order of the examples, nor on the order (or the
  set) of the perturbations listed. Perturbations are applied in the order of their names, so the output sequence
  is the same however they are listed.
- **Only real variants.** A perturbation that leaves an example unchanged (no name to swap, no contraction, a one
  word text for ``whitespace``...) produces no variant: scoring it again would only repeat the original's score.
  Neither does one whose changed input no longer passes its own field's checks (a text pushed past its
  ``max_length``, say, or a span no longer found in its changed passage); :attr:`VariantStats.skipped_invalid`
  counts those.
- **Streaming.** ``examples`` may be any iterable (a generator over keyset pages, say); :func:`iter_variants` yields
  variants as it goes and keeps nothing. :func:`build_variants` is the same, collected into a list.

An example is a mapping ``{"id": ..., "fields": {...}}``, an ``(id, fields)`` pair, or any object with ``id`` and
``fields`` attributes (a stored :class:`dynaforge.db.models.Example`). Pure Python: no torch, no database.
"""

from __future__ import annotations

import copy
import hashlib
import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from dynaforge.tasks.base import Perturbation, Task

__all__ = [
    "Variant",
    "VariantStats",
    "build_variants",
    "copy_gold",
    "iter_variants",
    "resolve_perturbations",
    "variant_seed",
]


@dataclass(frozen=True)
class Variant:
    """One perturbed copy of one example.

    ``fields`` holds all the original's fields, perturbed (without the gold fields when ``gold`` is ``dropped``);
    ``changed`` names the fields that differ from the original; ``seed`` is the seed the perturbation ran with
    (:func:`variant_seed`), enough to reproduce it; ``gold`` is the perturbation's effect on the gold (``kept``: the
    original's gold holds and the variant is scored against it; ``unknown`` or ``dropped``: scored for consistency
    with its original only).
    """

    original_id: Any
    perturbation: str
    kind: str
    fields: dict[str, Any]
    changed: tuple[str, ...]
    seed: int
    gold: str = "kept"

    @property
    def id(self) -> str:
        """A stable id of the variant: ``"<original id>~<perturbation>"``."""
        return f"{self.original_id}~{self.perturbation}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "original_id": self.original_id,
            "perturbation": self.perturbation,
            "kind": self.kind,
            "fields": self.fields,
            "changed": list(self.changed),
            "seed": self.seed,
            "gold": self.gold,
        }


@dataclass
class VariantStats:
    """Counts kept by :func:`iter_variants` when given one: examples read, variants yielded, pairs left out."""

    examples: int = 0
    variants: int = 0
    skipped_unchanged: int = 0
    skipped_invalid: int = 0
    by_perturbation: dict[str, int] = field(default_factory=dict)


def variant_seed(seed: int | str, original_id: Any, perturbation: str) -> int:
    """The seed of one (example, perturbation) pair: 64 bits of SHA-256 over the data set's seed, the example's id
    (as text: ids ``1`` and ``"1"`` are the same example) and the perturbation's name."""
    key = "\x1f".join((str(seed), str(original_id), perturbation)).encode("utf-8")
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big")


@lru_cache(maxsize=1)
def _installed_perturbations() -> dict[str, Perturbation]:
    # loads every installed plugin: only reached when a name is not a core one
    from dynaforge.plugins import Plugins

    return dict(Plugins().registry.perturbations)


def resolve_perturbations(
    task: Task, perturbations: Iterable[str | Perturbation] | None = None, registry: Any = None
) -> list[Perturbation]:
    """The :class:`Perturbation` objects to apply, deduplicated and sorted by name.

    ``perturbations`` lists names or objects (``None``: the task's own ``perturbations``). Names are looked up in
    ``registry`` (a :class:`dynaforge.plugins.Registry` or a mapping of name to perturbation); without one, in the
    core defaults, then in every installed plugin. An unknown name raises ``KeyError``.
    """
    wanted = list(task.perturbations if perturbations is None else perturbations)
    if registry is not None:
        known: Mapping[str, Perturbation] = getattr(registry, "perturbations", registry)
    else:
        from dynaforge.defaults.perturbations import DEFAULT_PERTURBATIONS

        known = {p.name: p for p in DEFAULT_PERTURBATIONS}
        if any(not isinstance(p, Perturbation) and p not in known for p in wanted):
            known = {**_installed_perturbations(), **known}
    resolved: dict[str, Perturbation] = {}
    for item in wanted:
        if isinstance(item, Perturbation):
            resolved[item.name] = item
        elif item in known:
            resolved[item] = known[item]
        else:
            raise KeyError(f"perturbation {item!r} is not registered")
    return [resolved[name] for name in sorted(resolved)]


def copy_gold(dataset: Any, registry: Any) -> str:
    """What a stored perturbed copy's gold is (:data:`dynaforge.tasks.base.GOLD_EFFECTS`): what its row says
    (``perturbation_gold``, where the table keeps it), else its registered perturbation's ``gold``, else ``kept``
    (an owner's own copy, a perturbation no plugin registers any more). Only a ``kept`` copy is scored against its
    gold; the others count for consistency with their original only. An original (no ``parent_id``) is ``kept``."""
    if getattr(dataset, "parent_id", None) is None:
        return "kept"
    stored = getattr(dataset, "perturbation_gold", None)
    if stored:
        return str(stored)
    registered = getattr(registry, "perturbations", registry).get(getattr(dataset, "perturbation", None) or "")
    return registered.gold if registered is not None else "kept"


def _id_and_fields(example: Any) -> tuple[Any, dict[str, Any]]:
    if isinstance(example, Mapping):
        if "id" not in example or "fields" not in example:
            raise TypeError("an example mapping needs the keys 'id' and 'fields'")
        return example["id"], example["fields"]
    if isinstance(example, tuple) and len(example) == 2:
        return example[0], example[1]
    if hasattr(example, "id") and hasattr(example, "fields"):
        return example.id, example.fields
    raise TypeError(f"cannot read an id and fields from {type(example).__name__}")


def _still_valid(task: Task, fields: dict[str, Any], changed: tuple[str, ...]) -> bool:
    """Whether the changed fields, and the spans into them, pass their own fields' checks."""
    checked = [
        f
        for f in task.fields
        if f.name in fields and (f.name in changed or getattr(f, "context_field", None) in changed)
    ]
    return all(not f.check(fields[f.name], task=task, values=fields) for f in checked)


def iter_variants(
    task: Task,
    examples: Iterable[Any],
    *,
    seed: int | str,
    perturbations: Iterable[str | Perturbation] | None = None,
    registry: Any = None,
    stats: VariantStats | None = None,
) -> Iterator[Variant]:
    """Yield the variants of ``examples``, example by example, perturbations in the order of their names.

    See the module's docstring for what is yielded and what is left out; ``stats``, when given, is filled in as
    the examples are read.
    """
    resolved = resolve_perturbations(task, perturbations, registry)
    for example in examples:
        original_id, fields = _id_and_fields(example)
        if stats is not None:
            stats.examples += 1
        for perturbation in resolved:
            pair_seed = variant_seed(seed, original_id, perturbation.name)
            perturbed = task.perturb(fields, perturbation, random.Random(pair_seed))
            changed = tuple(name for name in perturbed if perturbed[name] != fields.get(name))
            if not changed:
                if stats is not None:
                    stats.skipped_unchanged += 1
                continue
            if not _still_valid(task, perturbed, changed):
                if stats is not None:
                    stats.skipped_invalid += 1
                continue
            if stats is not None:
                stats.variants += 1
                stats.by_perturbation[perturbation.name] = stats.by_perturbation.get(perturbation.name, 0) + 1
            yield Variant(
                original_id=original_id,
                perturbation=perturbation.name,
                kind=perturbation.kind,
                fields=copy.deepcopy(perturbed),
                changed=changed,
                seed=pair_seed,
                gold=perturbation.gold,
            )


def build_variants(
    task: Task,
    examples: Iterable[Any],
    *,
    seed: int | str,
    perturbations: Iterable[str | Perturbation] | None = None,
    registry: Any = None,
    stats: VariantStats | None = None,
) -> list[Variant]:
    """:func:`iter_variants`, collected into a list."""
    return list(iter_variants(task, examples, seed=seed, perturbations=perturbations, registry=registry, stats=stats))
