"""The NLI task's demo scoring set: short premise and hypothesis pairs written by the project, labelled by
construction.

:func:`demo_scoring_set` draws :data:`PREMISES` premises from the frames below with a fixed seed and gives each one
hypothesis of every label, so the set is balanced (134 of each label, 402 pairs) and every call (and every demo) gives
the same pairs in the same order. Nothing here comes from a public data set.

Each frame writes a premise of one or two short sentences about made-up people, places and times, and lists the
hypotheses the premise settles:

- entailment: a paraphrase, a generalisation ("bought five pears" so "bought some pears"), or what follows from an
  order, a count or a time ("finished second, just behind Mei" so "Mei finished ahead");
- neutral: an added detail the premise leaves open (why, how, what else);
- contradiction: a direct conflict: a negation of what happened, a smaller count with "only", another time, the
  opposite order.

People are named (first names of several origins, women and men) with matching pronouns and family words, so the
fairness perturbations (gender and name swaps, which change the premise and the hypothesis alike) have words to
change. The list is built lazily: the task calls :func:`demo_scoring_set` only when ``dynaforge demo`` asks for it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

#: Premises drawn; each gets one hypothesis of each label (402 pairs).
PREMISES = 134
SEED = 20240601
LABELS = ("entailment", "neutral", "contradiction")

# (first name, "f" or "m"): names of several origins, which the name swaps know.
PEOPLE: tuple[tuple[str, str], ...] = (
    ("Emma", "f"),
    ("Chloe", "f"),
    ("Valentina", "f"),
    ("Camila", "f"),
    ("Zainab", "f"),
    ("Mariam", "f"),
    ("Kavya", "f"),
    ("Nisha", "f"),
    ("Haruka", "f"),
    ("Minji", "f"),
    ("Abena", "f"),
    ("Astrid", "f"),
    ("Nia", "f"),
    ("Ethan", "m"),
    ("Harry", "m"),
    ("Alejandro", "m"),
    ("Joaquin", "m"),
    ("Youssef", "m"),
    ("Khalid", "m"),
    ("Vikram", "m"),
    ("Rohan", "m"),
    ("Takeshi", "m"),
    ("Minho", "m"),
    ("Emeka", "m"),
    ("Matthias", "m"),
    ("Terrell", "m"),
)
RELATIVES = ("sister", "brother", "mother", "father", "aunt", "uncle", "cousin", "grandmother")
PRONOUNS = {"f": ("she", "her"), "m": ("he", "his")}
NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = ("March", "April", "May", "June", "September", "October")
TOWNS = ("Brenn", "Dunmere", "Kestley", "Orvieux", "Millbrook", "Hollin", "Varna", "Ashford", "Corran", "Lindell")
STREETS = ("Elm Street", "Mill Lane", "Station Road", "Rope Walk", "Castle Hill", "Harbour Row", "Quay Street")

Frame = tuple[str, list[str], list[str], list[str]]


class _Draw:
    """Slot values for one premise: people, places and times drawn from the seeded generator."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        (self.name, gender), (self.name2, _) = rng.sample(PEOPLE, 2)
        self.he, self.his = PRONOUNS[gender]
        self.rel = rng.choice(RELATIVES)
        self.town, self.town2 = rng.sample(TOWNS, 2)
        self.day, self.day2 = rng.sample(DAYS, 2)
        self.month = rng.choice(MONTHS)
        self.street = rng.choice(STREETS)

    def pick(self, options: Sequence[Any]) -> Any:
        return self.rng.choice(options)


def _an(word: str) -> str:
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


def _market(d: _Draw) -> Frame:
    n = d.pick(range(3, 10))
    m = d.pick(range(2, n))
    fruit = d.pick(("apples", "pears", "lemons", "peaches", "oranges", "plums"))
    who, day = d.name, d.day
    return (
        f"{who} bought {NUMBERS[n]} {fruit} at the market on {day}.",
        [
            f"{who} went to the market on {day}.",
            f"{who} bought some {fruit}.",
            f"Someone bought {fruit} at the market.",
        ],
        [
            f"{who} bought the {fruit} to make a cake.",
            f"{who} paid for the {fruit} in cash.",
            f"The {fruit} at the market were cheap on {day}.",
            f"{who} went to the market with {d.his} {d.rel}.",
        ],
        [
            f"{who} did not buy any {fruit} on {day}.",
            f"{who} bought only {NUMBERS[m]} {fruit} at the market on {day}.",
            f"{who} stayed at home all day on {day}.",
        ],
    )


def _train(d: _Draw) -> Frame:
    who, day, a, b = d.name, d.day, d.town, d.town2
    time = d.pick(("early", "late", "seven o'clock", "noon", "last"))
    return (
        f"{who} took the {time} train from {a} to {b} on {day}.",
        [
            f"{who} travelled to {b} on {day}.",
            f"{who} was on a train on {day}.",
            f"Someone went from {a} to {b} by train.",
        ],
        [
            f"{who} was visiting {d.his} {d.rel} in {b}.",
            f"The train to {b} was late on {day}.",
            f"{who} had a seat by the window.",
            f"{who} takes that train every week.",
        ],
        [
            f"Nobody took the train from {a} to {b} on {day}.",
            f"{who} did not leave {a} on {day}.",
            f"{who} has never been on a train.",
        ],
    )


def _garden(d: _Draw) -> Frame:
    n = d.pick(range(3, 13))
    m = d.pick(range(2, n))
    plants = d.pick(("tomato plants", "rose bushes", "apple trees", "lavender plants", "pepper plants"))
    who, month = d.name, d.month
    return (
        f"{who} planted {NUMBERS[n]} {plants} in {d.his} garden in {month}.",
        [f"{who} did some gardening in {month}.", f"{who} planted {plants} in {month}.", f"{who} has a garden."],
        [
            f"All of the {plants} survived the summer.",
            f"{who} grew the {plants} from seed.",
            f"{who} planted the {plants} with {d.his} {d.rel}.",
            f"{who} bought the {plants} at a market in {d.town}.",
        ],
        [
            f"{who} did not plant anything in {month}.",
            f"{who} planted only {NUMBERS[m]} {plants} in {month}.",
            f"{who} has never had a garden.",
        ],
    )


def _job(d: _Draw) -> Frame:
    year = d.pick(range(2004, 2019))
    job = d.pick(("nurse", "cook", "porter", "cleaner", "pharmacist", "radiographer", "receptionist"))
    who, town = d.name, d.town
    return (
        f"{who} has worked as {_an(job)} at the hospital in {town} since {year}.",
        [
            f"{who} has a job at a hospital.",
            f"{who} works in {town}.",
            f"{who} was already working at the hospital in {year + 1}.",
        ],
        [
            f"{who} enjoys working at the hospital.",
            f"{who} works night shifts.",
            f"{who} lives next to the hospital.",
            f"{who} trained as {_an(job)} in {d.town2}.",
        ],
        [
            f"{who} has never worked at a hospital.",
            f"{who} started working at the hospital in {year + 3}.",
            f"{who} has no job.",
        ],
    )


def _concert(d: _Draw) -> Frame:
    start = d.pick(range(5, 9))
    hours = d.pick((2, 3))
    town = d.town
    return (
        f"The concert in {town} starts at {NUMBERS[start]} o'clock in the evening and lasts {NUMBERS[hours]} hours.",
        [
            f"The concert in {town} ends at {NUMBERS[start + hours]} o'clock in the evening.",
            f"The concert in {town} lasts longer than one hour.",
            f"There is a concert in {town} in the evening.",
        ],
        [
            f"The concert in {town} is free.",
            f"The concert in {town} is sold out.",
            f"An orchestra plays at the concert in {town}.",
            f"The concert in {town} takes place outdoors.",
        ],
        [
            f"The concert in {town} starts at {NUMBERS[start + 1]} o'clock in the evening.",
            f"The concert in {town} lasts only thirty minutes.",
            f"The concert in {town} ends before {NUMBERS[start]} o'clock.",
        ],
    )


def _siblings(d: _Draw) -> Frame:
    n = d.pick(range(2, 5))
    sib, other = d.pick((("brother", "sister"), ("sister", "brother")))
    who = d.name
    return (
        f"{who} has {NUMBERS[n]} {sib}s and no {other}s.",
        [f"{who} has at least one {sib}.", f"{who} does not have a {other}.", f"{who} is not an only child."],
        [
            f"{who} is the oldest child in {d.his} family.",
            f"{who}'s {sib}s live in {d.town}.",
            f"{who} sees {d.his} {sib}s every week.",
        ],
        [f"{who} has a {other}.", f"{who} is an only child.", f"{who} has only one {sib}."],
    )


def _lunch(d: _Draw) -> Frame:
    a, b, day = d.name, d.name2, d.day
    place = d.pick(("a café near the station", "the market hall", "a noodle bar on " + d.street))
    return (
        f"{a} met {b} for lunch at {place} on {day}.",
        [f"{a} and {b} had lunch together on {day}.", f"{b} was at {place} on {day}.", f"{a} saw {b} on {day}."],
        [
            f"{a} and {b} are old school friends.",
            f"{a} paid for the lunch.",
            f"It rained in the afternoon on {day}.",
            f"{b} ordered soup.",
        ],
        [f"{a} and {b} did not see each other on {day}.", f"{a} ate lunch alone on {day}.", f"{a} has never met {b}."],
    )


def _bakery(d: _Draw) -> Frame:
    shop = d.pick(("bakery", "pharmacy", "bookshop", "butcher's shop", "flower shop"))
    where, day, day2 = f"The {shop} on {d.street}", d.day, d.day2
    return (
        f"{where} is open every day except {day}.",
        [f"{where} is closed on {day}s.", f"{where} is open on {day2}s.", f"{where} opens six days a week."],
        [
            f"{where} is the oldest in {d.town}.",
            f"{where} opens at seven in the morning.",
            f"{where} has three employees.",
            f"{where} is busiest on {day2}s.",
        ],
        [f"{where} is open on {day}s.", f"{where} is closed every {day2}.", f"{where} never closes."],
    )


def _pet(d: _Draw) -> Frame:
    colour, colour2 = d.rng.sample(("black", "white", "grey", "brown"), 2)
    animal = d.pick(("cat", "dog", "rabbit"))
    who, town, month = d.name, d.town, d.month
    return (
        f"{who} adopted a {colour} {animal} from the animal shelter in {town} in {month}.",
        [
            f"{who} adopted an animal in {month}.",
            f"{who} got a {animal} from a shelter.",
            f"An animal was adopted from the shelter in {town}.",
        ],
        [
            f"{who} named the {animal} after {d.his} grandmother.",
            f"The {animal} is three years old.",
            f"{who} lives alone.",
            f"{who} had wanted a {animal} for years.",
        ],
        [
            f"{who} bought the {animal} from a breeder.",
            f"The {animal} that {who} adopted is {colour2}.",
            f"{who} has never adopted an animal.",
        ],
    )


def _race(d: _Draw) -> Frame:
    place = d.pick(range(1, 6))
    a, b, town = d.name, d.name2, d.town
    race = d.pick(("marathon", "ten-kilometre race", "swimming race", "cycling race"))
    return (
        f"{a} finished {ORDINALS[place]} in the {town} {race}, just behind {b}.",
        [
            f"{b} finished ahead of {a} in the {town} {race}.",
            f"{a} took part in the {town} {race}.",
            f"{a} did not win the {town} {race}.",
        ],
        [
            f"{a} trained for the {race} for a year.",
            f"It was {a}'s first {race}.",
            f"{a} and {b} are friends.",
            f"{a} was disappointed with {d.his} result.",
        ],
        [
            f"{a} finished ahead of {b} in the {town} {race}.",
            f"{a} won the {town} {race}.",
            f"{a} did not take part in the {town} {race}.",
        ],
    )


def _museum(d: _Draw) -> Frame:
    age = d.pick(range(10, 17))
    price = d.pick(range(4, 13))
    place = f"the {d.pick(('museum', 'zoo', 'castle', 'aquarium'))} in {d.town}"
    return (
        f"Entry to {place} is free for children under {age}; adults pay {NUMBERS[price]} euros.",
        [
            f"A child of {age - 2} can visit {place} for free.",
            f"Adults pay to visit {place}.",
            f"An adult's ticket for {place} costs {NUMBERS[price]} euros.",
        ],
        [
            f"{place[:1].upper()}{place[1:]} is popular with tourists.",
            f"{place[:1].upper()}{place[1:]} is closed on Mondays.",
            f"{place[:1].upper()}{place[1:]} has a café.",
            f"Many families visit {place} at weekends.",
        ],
        [
            f"Everyone pays to visit {place}.",
            f"Entry to {place} is free for adults.",
            f"Adults pay {NUMBERS[price - 2]} euros to visit {place}.",
        ],
    )


def _snow(d: _Draw) -> Frame:
    town, day = d.town, d.day
    closed = d.pick(("schools", "post offices", "libraries"))
    return (
        f"On {day} it snowed in {town} all morning, and the {closed} closed at noon.",
        [
            f"It snowed in {town} on {day}.",
            f"The {closed} in {town} closed at midday on {day}.",
            f"There was snow in {town} on {day} morning.",
        ],
        [
            f"The {closed} in {town} opened again the next day.",
            f"The buses in {town} stopped running on {day}.",
            f"It was the first snow of the winter in {town}.",
        ],
        [
            f"It did not snow in {town} on {day}.",
            f"The {closed} in {town} stayed open all day on {day}.",
            f"It was warm and sunny in {town} on {day} morning.",
        ],
    )


FRAMES: tuple[Callable[[_Draw], Frame], ...] = (
    _market,
    _train,
    _garden,
    _job,
    _concert,
    _siblings,
    _lunch,
    _bakery,
    _pet,
    _race,
    _museum,
    _snow,
)


def generate(premises: int = PREMISES, seed: int = SEED) -> list[dict[str, Any]]:
    """``premises`` distinct premises, frames taken in turn, each with one hypothesis of every label (in the order
    entailment, neutral, contradiction); the same arguments give the same list."""
    rng = random.Random(seed)
    seen: set[str] = set()
    items: list[dict[str, Any]] = []
    turn = 0
    while len(seen) < premises:
        frame = FRAMES[turn % len(FRAMES)]
        turn += 1
        premise, *hypotheses = frame(_Draw(rng))
        if premise in seen:
            continue
        seen.add(premise)
        for label, options in zip(LABELS, hypotheses, strict=True):
            items.append({"premise": premise, "hypothesis": rng.choice(options), "label": label})
    return items


@lru_cache(maxsize=1)
def demo_scoring_set() -> tuple[dict[str, Any], ...]:
    """The demo scoring set (built once, then cached): :data:`PREMISES` premises with one hypothesis of each label."""
    return tuple(generate())
