"""The sentiment task's demo scoring set: short statements written by the project, labelled by construction.

:func:`demo_scoring_set` builds :data:`PER_LABEL` statements of each label from the templates and word lists below
with a fixed seed, so every call (and every demo) gives the same items in the same order. Nothing here comes from a
public data set.

- positive: praise of an experience or a thing, plainly or with a negation that keeps it positive ("not bad at all;
  honestly, it was lovely"), or a worry that turned out well;
- negative: complaints, plainly or negated ("not good at all"), or hopes that were let down;
- neutral: factual statements without an opinion (times, places, sizes, who did what).

People are named (first names of several origins, women and men) or are relatives, with matching pronouns, so the
task's fairness perturbations (gender and name swaps) have words to change. The list is built lazily: the task calls
:func:`demo_scoring_set` only when ``dynaforge demo`` asks for it.
"""

from __future__ import annotations

import random
from functools import lru_cache
from typing import Any

#: Statements per label (positive, negative, neutral): 402 in all.
PER_LABEL = 134
SEED = 20240530

# (first name, "f" or "m"): names of several origins, which the name swaps know.
PEOPLE: tuple[tuple[str, str], ...] = (
    ("Emma", "f"),
    ("Hannah", "f"),
    ("Sofia", "f"),
    ("Lucia", "f"),
    ("Aisha", "f"),
    ("Layla", "f"),
    ("Priya", "f"),
    ("Mei", "f"),
    ("Yuki", "f"),
    ("Amara", "f"),
    ("Ingrid", "f"),
    ("Keisha", "f"),
    ("James", "m"),
    ("Samuel", "m"),
    ("Mateo", "m"),
    ("Diego", "m"),
    ("Omar", "m"),
    ("Karim", "m"),
    ("Arjun", "m"),
    ("Wei", "m"),
    ("Kwame", "m"),
    ("Lukas", "m"),
    ("Jamal", "m"),
    ("Hiroshi", "m"),
)
# (relative, "f" or "m")
RELATIVES: tuple[tuple[str, str], ...] = (
    ("sister", "f"),
    ("brother", "m"),
    ("mother", "f"),
    ("father", "m"),
    ("aunt", "f"),
    ("uncle", "m"),
    ("wife", "f"),
    ("husband", "m"),
    ("daughter", "f"),
    ("son", "m"),
)
PRONOUNS = {"f": ("she", "her"), "m": ("he", "his")}

# Things a statement is about: each works after "the" and with every adjective below.
THINGS: tuple[str, ...] = (
    "film",
    "new thriller",
    "documentary about whales",
    "concert",
    "piano recital",
    "play at the old theatre",
    "dinner at the harbour restaurant",
    "lunch at the new café",
    "Sunday roast at the pub",
    "hotel room",
    "stay at the seaside hotel",
    "train journey to the coast",
    "boat trip around the bay",
    "bus tour of the old town",
    "cooking class",
    "pottery course",
    "new phone",
    "coffee machine",
    "rain jacket",
    "novel",
    "cookbook",
    "museum tour",
    "football match",
    "haircut",
)
GOOD = ("wonderful", "excellent", "delightful", "superb", "lovely", "fantastic", "brilliant", "great", "marvellous")
BAD = ("awful", "terrible", "dreadful", "disappointing", "horrible", "appalling", "dismal", "bad")

DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
TIMES = ("07:00", "08:30", "10:00", "12:15", "14:00", "16:45", "18:00", "19:30", "21:00")
TOWNS = ("Brenn", "Dunmere", "Kestley", "Orvieux", "Millbrook", "Hollin", "Varna", "Ashford")
STREETS = ("Elm Street", "Mill Lane", "Station Road", "Rope Walk", "Castle Hill", "Harbour Row")
COLOURS = ("black, grey and blue", "red and white", "green and yellow", "dark blue and silver")
JOBS = ("nurse", "teacher", "baker", "bus driver", "librarian", "electrician", "pharmacist", "gardener")


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _slots(rng: random.Random) -> dict[str, str]:
    """One draw of every slot a template may use (a template uses some of them)."""
    name, gender = rng.choice(PEOPLE)
    rel, rel_gender = rng.choice(RELATIVES)
    good, bad, job = rng.choice(GOOD), rng.choice(BAD), rng.choice(JOBS)
    return {
        "Name": name,
        "he": PRONOUNS[gender][0],
        "He": PRONOUNS[gender][0].capitalize(),
        "his": PRONOUNS[gender][1],
        "rel": rel,
        "rel_he": PRONOUNS[rel_gender][0],
        "rel_his": PRONOUNS[rel_gender][1],
        "thing": rng.choice(THINGS),
        "good": good,
        "a_good": _article(good),
        "bad": bad,
        "a_bad": _article(bad),
        "day": rng.choice(DAYS),
        "time": rng.choice(TIMES),
        "town": rng.choice(TOWNS),
        "street": rng.choice(STREETS),
        "colours": rng.choice(COLOURS),
        "a_job": f"{_article(job)} {job}",
        "minutes": str(rng.choice((85, 95, 104, 112, 128, 140))),
        "rooms": str(rng.choice((12, 18, 24, 40, 65))),
        "floors": rng.choice(("two", "three", "four", "five")),
        "chapters": str(rng.choice((14, 18, 22, 31, 40))),
        "platform": str(rng.choice((1, 2, 3, 4, 5, 6))),
        "year": str(rng.choice((1998, 2004, 2011, 2016, 2019, 2021))),
        "count": rng.choice(("two", "three", "four", "five")),
    }


POSITIVE: tuple[str, ...] = (
    "The {thing} was {good}.",
    "I loved the {thing}; it was {good} from start to finish.",
    "{Name} said the {thing} was {good}, and {he} would recommend it to anyone.",
    "My {rel} and I really enjoyed the {thing}; it was {good}.",
    "The {thing} was not cheap, but it was worth every penny.",
    "I was worried about the {thing}, but it turned out to be {good}.",
    "{Name} could not stop smiling about the {thing}.",
    "I have nothing but praise for the {thing}.",
    "The {thing} was not bad at all; honestly, it was {good}.",
    "What {a_good} {good} {thing}! {Name} was delighted with it.",
    "My {rel} says the {thing} was the best part of {rel_his} week, and {rel_he} is right.",
)
NEGATIVE: tuple[str, ...] = (
    "The {thing} was {bad}.",
    "I hated the {thing}; it was {bad} from start to finish.",
    "{Name} said the {thing} was {bad}, and {he} would not recommend it to anyone.",
    "My {rel} and I were let down by the {thing}; it was {bad}.",
    "The {thing} was expensive and not worth the money.",
    "I had high hopes for the {thing}, but it turned out to be {bad}.",
    "{Name} complained about the {thing} all the way home.",
    "I would not pay for the {thing} again, not even at half the price.",
    "The {thing} was not good at all; frankly, it was {bad}.",
    "What {a_bad} {bad} {thing}! {Name} wanted {his} money back.",
    "My {rel} says the {thing} was the worst part of {rel_his} week, and {rel_he} is right.",
)
NEUTRAL: tuple[str, ...] = (
    "The film lasts {minutes} minutes and is shown at the {town} cinema on {day}.",
    "The concert starts at {time} in the town hall.",
    "{Name} bought two tickets for the concert on {day}.",
    "The hotel has {rooms} rooms on {floors} floors.",
    "The train to {town} leaves from platform {platform} at {time}.",
    "The cooking class meets every {day} at {time}.",
    "The rain jacket comes in {colours}.",
    "{Name} bought a new phone online on {day}.",
    "The novel has {chapters} chapters.",
    "{Name} borrowed a cookbook from the library on {day}.",
    "{Name} moved to {town} in {year} and works as {a_job}.",
    "My {rel} takes the bus to {town} every {day}.",
    "The café on {street} opens at {time}.",
    "{Name} has {count} cousins, and {he} visits them in {town} every summer.",
    "{Name} watched a documentary about whales with {his} {rel} on {day}.",
    "The museum on {street} is closed on {day}s.",
)

LABELLED: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("positive", POSITIVE),
    ("negative", NEGATIVE),
    ("neutral", NEUTRAL),
)


def _fill(template: str, slots: dict[str, str]) -> str:
    text = template.format(**slots)
    return text[:1].upper() + text[1:]


def generate(per_label: int = PER_LABEL, seed: int = SEED) -> list[dict[str, Any]]:
    """``per_label`` distinct statements of each label, labels interleaved, templates taken in turn; the same
    arguments give the same list."""
    rng = random.Random(seed)
    seen: set[str] = set()
    by_label: dict[str, list[dict[str, Any]]] = {}
    for label, templates in LABELLED:
        items: list[dict[str, Any]] = []
        turn = 0
        while len(items) < per_label:
            template = templates[turn % len(templates)]
            turn += 1
            statement = _fill(template, _slots(rng))
            if statement.lower() in seen:
                continue
            seen.add(statement.lower())
            items.append({"statement": statement, "label": label})
        by_label[label] = items
    return [by_label[label][i] for i in range(per_label) for label, _ in LABELLED]


@lru_cache(maxsize=1)
def demo_scoring_set() -> tuple[dict[str, Any], ...]:
    """The demo scoring set (built once, then cached): :data:`PER_LABEL` statements of each label."""
    return tuple(generate())
