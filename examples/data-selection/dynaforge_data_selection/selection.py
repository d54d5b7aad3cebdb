"""A baseline selection strategy, what a careful participant might do, using nothing but the pool's items as the
server lists them (text and label, in position order):

1. drop near-duplicates: items whose lower-cased words are those of an earlier item;
2. drop likely mislabels: items that the recipe, trained on every other remaining item, gives another label;
3. balance: take the remaining items label by label in turn, in pool order, until the budget is spent.

The careless strategy it is compared with takes the first items of the pool, as many as the budget allows.
"""

from __future__ import annotations

from typing import Any

from dynaforge_data_selection.data import LABELS
from dynaforge_data_selection.recipe import fit, words


def deduplicate(items: list[dict[str, Any]]) -> list[int]:
    """The positions of the items whose words no earlier item has (case and punctuation ignored)."""
    seen: set[tuple[str, ...]] = set()
    kept = []
    for position, item in enumerate(items):
        key = tuple(words(item["text"]))
        if key not in seen:
            seen.add(key)
            kept.append(position)
    return kept


def consistent(items: list[dict[str, Any]], positions: list[int], *, seed: int = 0) -> list[int]:
    """Those of ``positions`` whose label the recipe, trained on the others of ``positions``, agrees with."""
    kept = []
    for position in positions:
        others = [items[p] for p in positions if p != position]
        [guess] = fit(others, seed=seed).predict([{"text": items[position]["text"]}])
        if guess["label"] == items[position]["label"]:
            kept.append(position)
    return kept


def balanced(items: list[dict[str, Any]], positions: list[int], budget: int) -> list[int]:
    """Up to ``budget`` of ``positions``, taken one label after another in turn, each label's in pool order."""
    queues = {label: [p for p in positions if items[p]["label"] == label] for label in LABELS}
    chosen: list[int] = []
    while len(chosen) < budget and any(queues.values()):
        for label in LABELS:
            if queues[label] and len(chosen) < budget:
                chosen.append(queues[label].pop(0))
    return sorted(chosen)


def careful(items: list[dict[str, Any]], budget: int, *, seed: int = 0) -> list[int]:
    """The baseline: the positions of the items to submit, deduplicated, checked and balanced."""
    return balanced(items, consistent(items, deduplicate(items), seed=seed), budget)


def careless(items: list[dict[str, Any]], budget: int) -> list[int]:
    """The first ``budget`` positions of the pool."""
    return list(range(min(budget, len(items))))
