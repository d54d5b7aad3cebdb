"""The task's data, written for this package and made from templates, deterministic, so the shipped files can be
rebuilt and checked: ``python -m dynaforge_data_selection.data build`` writes them, ``... data check`` fails when
they differ from a fresh build.

Each text is a headline-like sentence, a subject phrase and a predicate phrase of one topic. Three sets ship as
package data, each a JSONL file that ``dynaforge datasets import --format jsonl`` reads:

- ``seed.jsonl``: a few clean items per label, what the default target model is trained on;
- ``pool.jsonl``: what participants select from (an owner imports it as a STANDARD set). Most items are clean and
  the labels are unevenly represented; some are deliberate noise: texts of one topic labelled with another
  (``mislabelled``) and ten copies each of three headlines that differ only in case and final marks
  (``duplicate``). A careful selection leaves the noise out and balances the labels; a careless one does not;
- ``test.jsonl``: the held-out test set (an owner imports it as a SCORING set), balanced and clean, of headlines
  that appear in neither of the other sets.

:func:`pool_items` says which pool item is noise and of what kind; the files carry the fields only.
"""

from __future__ import annotations

import itertools
import json
import random
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LABELS = ("sports", "science", "food", "travel")
DATA_DIR = Path(__file__).parent / "data"
SEED_FILE = DATA_DIR / "seed.jsonl"
POOL_FILE = DATA_DIR / "pool.jsonl"
TEST_FILE = DATA_DIR / "test.jsonl"
FORMAT = "dynaforge.example/1"

# (subject phrases, predicate phrases) per label; any subject goes with any predicate of its label
TEMPLATES: dict[str, tuple[list[str], list[str]]] = {
    "sports": (
        ["The home team", "A veteran striker", "The national squad", "Our local club", "The young sprinter",
         "The tennis champion", "The rugby side", "A rookie goalkeeper", "The cycling team", "The boxing star"],
        ["wins the cup final after extra time", "scores twice in the derby", "breaks the league record for goals",
         "signs a new contract with the coach", "loses the semi final on penalties",
         "takes gold at the championship", "returns from injury for the match",
         "beats the favourites in the tournament", "trains hard before the season opener",
         "celebrates a late winner at the stadium"],
    ),
    "science": (
        ["A team of physicists", "The space agency", "Marine biologists", "A university laboratory",
         "Climate researchers", "The new telescope", "Chemists in the lab", "A young astronomer", "Geologists",
         "The research probe"],
        ["discovers a distant planet orbiting two stars", "measures a record low temperature in the ice",
         "publishes a study on deep sea bacteria", "detects faint signals from an early galaxy",
         "maps the genes of a rare frog", "tests a new battery made from salt", "observes a comet near the sun",
         "finds fossils of an ancient fish", "confirms the theory with a careful experiment",
         "launches a satellite to study the oceans"],
    ),
    "food": (
        ["A family bakery", "The new noodle bar", "A celebrated chef", "The village cheese maker",
         "Our favourite cafe", "A street food stall", "The pastry school", "A vegan kitchen", "The old pizzeria",
         "Home cooks"],
        ["shares a recipe for spicy lentil soup", "bakes bread with ancient grain flour",
         "serves the best dumplings in town", "wins a prize for its chocolate cake",
         "opens a kitchen garden for fresh herbs", "cooks a slow roasted tomato sauce",
         "adds a seasonal menu of mushroom dishes", "teaches how to ferment cabbage at home",
         "brews coffee from single farm beans", "plates a dessert of honey and figs"],
    ),
    "travel": (
        ["Budget travellers", "The night train", "A coastal town", "The island ferry", "Backpackers",
         "The mountain lodge", "A new airline route", "The old harbour city", "Hikers", "The heritage hotel"],
        ["welcomes visitors for the summer festival", "offers cheap flights to the northern lakes",
         "reopens its scenic route through the valley", "books out every room for the holidays",
         "guides tourists along the ancient walls", "adds a sleeper carriage to the coast",
         "recommends a week exploring quiet beaches", "sells passes for the museum trail",
         "tops the list of places to visit this spring", "lowers fares for the winter season"],
    ),
}  # fmt: skip

SEED_PER_LABEL = 3
TEST_PER_LABEL = 15
#: Clean pool items per label: uneven on purpose, so that taking items as they come favours sports.
POOL_CLEAN = {"sports": 50, "science": 40, "food": 30, "travel": 20}
#: Pool items whose label is the next one in LABELS after their topic's (sports texts labelled science, ...).
POOL_MISLABELLED_PER_LABEL = 8
#: How a near-duplicate differs from its headline: only in case and final marks.
DUPLICATE_VARIANTS = [
    "{}.", "{}!", "{}...", "{}?!", "{}!!", "{upper}!", "{upper}.", "{lower}", "{lower}!", "{title}.",
]  # fmt: skip
#: The headlines the pool repeats, with their (correct) labels; ten copies each.
DUPLICATED = ["sports", "sports", "food"]


@dataclass(frozen=True)
class PoolItem:
    """A pool item's fields and what it is: ``clean``, ``mislabelled`` or ``duplicate``."""

    fields: dict[str, str]
    kind: str


def headlines(label: str, seed: int = 0) -> list[str]:
    """Every headline of a label (subject times predicate), in a fixed shuffled order."""
    subjects, predicates = TEMPLATES[label]
    out = [f"{s} {p}" for s, p in itertools.product(subjects, predicates)]
    random.Random(f"{seed}:{label}").shuffle(out)
    return out


def _split(seed: int = 0) -> dict[str, dict[str, list[str]]]:
    """Each label's headlines cut into disjoint runs: test, seed, clean pool, mislabelled pool, duplicated."""
    parts: dict[str, dict[str, list[str]]] = {}
    for label in LABELS:
        rest = headlines(label, seed)
        sizes = {
            "test": TEST_PER_LABEL,
            "seed": SEED_PER_LABEL,
            "clean": POOL_CLEAN[label],
            "mislabelled": POOL_MISLABELLED_PER_LABEL,
            "duplicated": DUPLICATED.count(label),
        }
        parts[label] = {}
        for part, size in sizes.items():
            parts[label][part], rest = rest[:size], rest[size:]
    return parts


def _row(text: str, label: str) -> dict[str, str]:
    return {"text": text + ("" if text[-1] in ".!?)" else "."), "label": label}


def seed_set(seed: int = 0) -> list[dict[str, str]]:
    """The default target's training set: :data:`SEED_PER_LABEL` clean items per label, labels interleaved."""
    parts = _split(seed)
    return [_row(parts[label]["seed"][i], label) for i in range(SEED_PER_LABEL) for label in LABELS]


def test_set(seed: int = 0) -> list[dict[str, str]]:
    """The held-out test set: :data:`TEST_PER_LABEL` clean items per label, shuffled."""
    parts = _split(seed)
    rows = [_row(text, label) for label in LABELS for text in parts[label]["test"]]
    random.Random(f"{seed}:test").shuffle(rows)
    return rows


def pool_items(seed: int = 0) -> list[PoolItem]:
    """The pool, shuffled, each item with its kind (the order of the pool file, and of the imported data set)."""
    parts = _split(seed)
    items = [PoolItem(_row(text, label), "clean") for label in LABELS for text in parts[label]["clean"]]
    for index, label in enumerate(LABELS):
        wrong = LABELS[(index + 1) % len(LABELS)]
        items += [PoolItem(_row(text, wrong), "mislabelled") for text in parts[label]["mislabelled"]]
    taken = {label: 0 for label in LABELS}
    for label in DUPLICATED:
        text = parts[label]["duplicated"][taken[label]]
        taken[label] += 1
        cases = {"upper": text.upper(), "lower": text.lower(), "title": text.title()}
        items += [
            PoolItem({"text": variant.format(text, **cases), "label": label}, "duplicate")
            for variant in DUPLICATE_VARIANTS
        ]
    random.Random(f"{seed}:pool").shuffle(items)
    return items


def pool(seed: int = 0) -> list[dict[str, str]]:
    """The pool's field values, in order."""
    return [item.fields for item in pool_items(seed)]


def jsonl_text(rows: Iterable[dict[str, Any]]) -> str:
    """Rows of field values as ``dynaforge datasets import --format jsonl`` reads them: accepted examples."""
    return "".join(
        json.dumps({"format": FORMAT, "status": "ACCEPTED", "fields": row}, sort_keys=True) + "\n" for row in rows
    )


def write_jsonl(path: str | Path, rows: Iterable[dict[str, Any]]) -> Path:
    """Write rows of field values to ``path`` for ``dynaforge datasets import --format jsonl``; returns the path."""
    path = Path(path)
    path.write_text(jsonl_text(rows), encoding="utf-8")
    return path


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """The field values of each line of a file :func:`write_jsonl` wrote."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["fields"] for line in lines if line.strip()]


def build() -> dict[Path, str]:
    """Each shipped file's text, made afresh."""
    return {SEED_FILE: jsonl_text(seed_set()), POOL_FILE: jsonl_text(pool()), TEST_FILE: jsonl_text(test_set())}


def stale() -> list[Path]:
    """The shipped files that are missing or differ from a fresh build."""
    return [path for path, text in build().items() if not path.exists() or path.read_text(encoding="utf-8") != text]


def main(argv: list[str]) -> int:
    command = argv[0] if argv else ""
    if command == "build":
        DATA_DIR.mkdir(exist_ok=True)
        for path, text in build().items():
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
        return 0
    if command == "check":
        for path in stale():
            print(f"{path} is stale: run python -m dynaforge_data_selection.data build", file=sys.stderr)
        return 1 if stale() else 0
    print("usage: python -m dynaforge_data_selection.data build|check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
