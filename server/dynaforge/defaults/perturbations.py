"""Default text perturbations usable by any English text task.

Robustness: seeded typos, casing and punctuation changes. Fairness: swapping gendered words and first names, with
word lists written by the project. Each keeps the text's shape (no field becomes empty or grows unboundedly), so a
perturbed example still fits its task's schema.
"""

from __future__ import annotations

import random
import re

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


def punctuation(text: str, rng: random.Random) -> str:
    """Drop the sentence's final punctuation, or add a full stop when it has none."""
    stripped = text.rstrip()
    if not stripped:
        return text
    if stripped[-1] in ".!?;:":
        return stripped.rstrip(".!?;:").rstrip() or text
    return stripped + "."


# Pairs swapped both ways. "her" is ambiguous (him / his); "his" maps to "her" and "her" to "his".
_GENDER_PAIRS = (
    ("he", "she"), ("his", "her"), ("him", "her"), ("himself", "herself"), ("man", "woman"), ("men", "women"),
    ("boy", "girl"), ("boys", "girls"), ("father", "mother"), ("fathers", "mothers"), ("son", "daughter"),
    ("sons", "daughters"), ("brother", "sister"), ("brothers", "sisters"), ("husband", "wife"),
    ("husbands", "wives"), ("king", "queen"), ("kings", "queens"), ("uncle", "aunt"), ("uncles", "aunts"),
    ("nephew", "niece"), ("mr", "mrs"), ("gentleman", "lady"), ("gentlemen", "ladies"), ("dad", "mom"),
    ("grandfather", "grandmother"), ("boyfriend", "girlfriend"), ("actor", "actress"), ("waiter", "waitress"),
    ("male", "female"), ("males", "females"), ("guy", "gal"), ("sir", "madam"),
)
_GENDER_SWAP: dict[str, str] = {}
for _a, _b in _GENDER_PAIRS:
    _GENDER_SWAP.setdefault(_a, _b)
    _GENDER_SWAP.setdefault(_b, _a)

# First names grouped so that a swap changes the perceived gender and the perceived origin; invented for the
# project as common given names, not taken from any data set.
FIRST_NAMES: dict[str, tuple[str, ...]] = {
    "female": ("Emma", "Olivia", "Sofia", "Aisha", "Mei", "Priya", "Fatima", "Lucia", "Chloe", "Amara", "Yuki",
               "Hannah", "Maria", "Zainab", "Ingrid", "Keisha"),
    "male": ("James", "Liam", "Mateo", "Omar", "Wei", "Arjun", "Kwame", "Diego", "Lukas", "Hiroshi", "Noah",
             "Jamal", "Ivan", "Tariq", "Samuel", "Chen"),
}
_NAME_GENDER = {name.lower(): gender for gender, names in FIRST_NAMES.items() for name in names}
_WORD_RE = re.compile(r"[A-Za-z]+")


def _match_case(original: str, replacement: str) -> str:
    if original.isupper() and len(original) > 1:
        return replacement.upper()
    if original[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def gender_swap(text: str, rng: random.Random) -> str:
    """Swap gendered words (he/she, father/mother, ...) everywhere in the text, keeping their case."""

    def swap(match: re.Match) -> str:
        word = match.group(0)
        other = _GENDER_SWAP.get(word.lower())
        return _match_case(word, other) if other else word

    return _WORD_RE.sub(swap, text)


def name_swap(text: str, rng: random.Random) -> str:
    """Replace each known first name by a seeded pick of the other gender's list (the same name each time)."""
    chosen: dict[str, str] = {}

    def swap(match: re.Match) -> str:
        word = match.group(0)
        gender = _NAME_GENDER.get(word.lower())
        if gender is None or not word[:1].isupper():
            return word
        if word.lower() not in chosen:
            other = "male" if gender == "female" else "female"
            chosen[word.lower()] = rng.choice(FIRST_NAMES[other])
        return _match_case(word, chosen[word.lower()])

    return _WORD_RE.sub(swap, text)


@hookimpl(trylast=True)
def register_perturbations(register):
    register(Perturbation("typo", typo, "robustness", "Swap two adjacent letters in one word."))
    register(Perturbation("lowercase", lowercase, "robustness", "Lower-case the whole text."))
    register(Perturbation("uppercase", uppercase, "robustness", "Upper-case the whole text."))
    register(Perturbation("punctuation", punctuation, "robustness", "Drop or add the final punctuation mark."))
    register(Perturbation("gender_swap", gender_swap, "fairness", "Swap gendered words (he/she, son/daughter...)."))
    register(Perturbation("name_swap", name_swap, "fairness", "Swap first names for names of another gender."))
