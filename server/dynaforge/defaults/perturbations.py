"""Default text perturbations usable by any text task: seeded typos and casing changes."""

from __future__ import annotations

import random

from dynaforge.hookspecs import hookimpl
from dynaforge.tasks.base import Perturbation


def typo(text: str, rng: random.Random) -> str:
    """Swap two adjacent letters inside one word of four or more letters (a common keyboard slip)."""
    words = text.split(" ")

    def swappable(word: str) -> list[int]:
        # positions of two adjacent, different letters (swapping equal ones would change nothing)
        return [j for j in range(len(word) - 1) if word[j].isalpha() and word[j + 1].isalpha() and word[j] != word[j + 1]]

    candidates = [i for i, w in enumerate(words) if sum(ch.isalpha() for ch in w) >= 4 and swappable(w)]
    if not candidates:
        return text
    i = rng.choice(candidates)
    word = words[i]
    j = rng.choice(swappable(word))
    words[i] = word[:j] + word[j + 1] + word[j] + word[j + 2 :]
    return " ".join(words)


def lowercase(text: str, rng: random.Random) -> str:
    """Everything in lower case."""
    return text.lower()


def uppercase(text: str, rng: random.Random) -> str:
    """Everything in upper case."""
    return text.upper()


@hookimpl(trylast=True)
def register_perturbations(register):
    register(Perturbation("typo", typo, "robustness", "Swap two adjacent letters in one word."))
    register(Perturbation("lowercase", lowercase, "robustness", "Lower-case the whole text."))
    register(Perturbation("uppercase", uppercase, "robustness", "Upper-case the whole text."))
