"""The QA task's demo scoring set: short passages of made-up facts and questions about them, written by the project,
each answer an exact span of its passage.

:func:`demo_scoring_set` draws :data:`PASSAGES` passages from the frames below with a fixed seed, so every call (and
every demo) gives the same items in the same order. Nothing here comes from a public data set.

Each frame writes a passage of three or four short sentences (a shopkeeper's life, a bridge, a village festival, a
small animal, a ship's voyage, a club) and asks every question the passage answers, in one of a few phrasings: who,
where, when, how many, what. An answer is the shortest span that answers its question, exactly as written, with its
character offset (``passage.index(text)``); a passage in which some answer would not occur exactly once is drawn
again, so every offset is the only place the answer sits. The task has no unanswerable questions: every question is
answered by its passage.

People are named (a first name of one of several origins, women and men, and a made-up surname) and passages use
pronouns and family words, so the fairness perturbations (gender and name swaps, which change the passage and the
question alike) have words to change. The list is built lazily: the task calls :func:`demo_scoring_set` only when
``dynaforge demo`` asks for it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

#: Passages drawn; each has six or seven questions.
PASSAGES = 56
SEED = 20240602

# (first name, "f" or "m"): names of several origins, which the name swaps know.
PEOPLE: tuple[tuple[str, str], ...] = (
    ("Emma", "f"),
    ("Abigail", "f"),
    ("Lucia", "f"),
    ("Ximena", "f"),
    ("Layla", "f"),
    ("Fatima", "f"),
    ("Priya", "f"),
    ("Deepika", "f"),
    ("Akiko", "f"),
    ("Mei", "f"),
    ("Folake", "f"),
    ("Heidi", "f"),
    ("Shanice", "f"),
    ("Samuel", "m"),
    ("Liam", "m"),
    ("Diego", "m"),
    ("Javier", "m"),
    ("Karim", "m"),
    ("Omar", "m"),
    ("Sanjay", "m"),
    ("Aditya", "m"),
    ("Hiroshi", "m"),
    ("Haoran", "m"),
    ("Tunde", "m"),
    ("Piotr", "m"),
    ("Lamar", "m"),
)
SURNAMES = ("Pell", "Daubel", "Marrow", "Okoro", "Varga", "Lindqvist", "Tamura", "Reyes", "Halloran", "Brandt")
RELATIVES = (("sister", "f"), ("brother", "m"), ("niece", "f"), ("nephew", "m"), ("daughter", "f"), ("son", "m"))
PRONOUNS = {"f": ("she", "her"), "m": ("he", "his")}
NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
MONTHS = ("March", "April", "May", "June", "July", "August", "September", "October")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
TOWNS = ("Brenn", "Dunmere", "Kestley", "Orvieux", "Millbrook", "Hollin", "Varna", "Ashford", "Corran", "Lindell")

#: A passage and its questions: (question phrasings, answer text).
Frame = tuple[str, list[tuple[tuple[str, ...], str]]]


class _Draw:
    """Slot values for one passage, drawn from the seeded generator."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        (first, gender), (self.name2, gender2) = rng.sample(PEOPLE, 2)
        self.first = first
        self.full = f"{first} {rng.choice(SURNAMES)}"
        self.he, self.his = PRONOUNS[gender]
        self.rel = rng.choice([rel for rel, rel_gender in RELATIVES if rel_gender == gender2])
        self.town = rng.choice(TOWNS)
        self.year = rng.choice(range(1850, 1981))
        self.year2 = self.year + rng.choice(range(19, 41))
        self.month = rng.choice(MONTHS)
        self.day = rng.choice(DAYS)

    def pick(self, options: Sequence[Any]) -> Any:
        return self.rng.choice(options)


def _an(word: str) -> str:
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _shop(d: _Draw) -> Frame:
    job, shop = d.pick(
        (("baker", "bakery"), ("tailor", "tailor's shop"), ("watchmaker", "clock shop"), ("cook", "café"))
    )
    street = d.pick(("Mill Lane", "Rope Walk", "Castle Hill", "Harbour Row", "Quay Street"))
    years = NUMBERS[d.pick(range(6, 13))]
    full, he, his = d.full, d.he, d.his
    passage = (
        f"{full} was born in {d.town} in {d.year}. {_cap(he)} trained as a {job} and opened a {shop} on {street} "
        f"in {d.year2}. After {years} years {he} sold it to {his} {d.rel} {d.name2}, who kept its name."
    )
    return passage, [
        ((f"Where was {full} born?", f"In which town was {full} born?"), d.town),
        ((f"In what year was {full} born?", f"When was {full} born?"), str(d.year)),
        ((f"What did {full} train as?", f"What trade did {full} learn?"), job),
        ((f"On which street did {full} open the {shop}?", f"Where was {d.first}'s {shop}?"), street),
        ((f"When did {full} open the {shop}?", f"In which year did the {shop} on {street} open?"), str(d.year2)),
        ((f"Who took over the {shop}?", f"Who bought the {shop} from {full}?"), d.name2),
        ((f"How long did {full} run the {shop}?", f"How many years did {d.first} keep the {shop}?"), f"{years} years"),
    ]


def _bridge(d: _Draw) -> Frame:
    name = d.pick(("Ferry Lane", "Kingsmead", "Old Mill", "Harrow", "Saltings"))
    river = d.pick(("River Orle", "River Tamsin", "River Brede", "River Caul"))
    before = d.pick(("a rope ferry", "a narrow wooden bridge", "a stone ford"))
    length = d.pick(range(120, 900, 15))
    lanes = NUMBERS[d.pick((2, 3, 4, 6))]
    building = d.pick(("the railway station", "the covered market", "the town hall"))
    passage = (
        f"The {name} Bridge over the {river} was built in {d.year} to replace {before}. It is {length} metres long "
        f"and carries {lanes} lanes of traffic. Its designer, the engineer {d.full}, also planned {building} in "
        f"{d.town}."
    )
    bridge = f"the {name} Bridge"
    return passage, [
        ((f"When was {bridge} built?", f"In which year was {bridge} completed?"), str(d.year)),
        ((f"What did {bridge} replace?", f"What was used to cross the {river} before {bridge}?"), before),
        ((f"How long is {bridge}?", f"What is the length of {bridge}?"), f"{length} metres"),
        ((f"Which river does {bridge} cross?", f"What does {bridge} span?"), river),
        ((f"How many lanes of traffic does {bridge} carry?", f"How many traffic lanes are on {bridge}?"), lanes),
        ((f"Who designed {bridge}?", f"Which engineer was behind {bridge}?"), d.full),
        ((f"What else did {d.full} plan?", f"Which other building in {d.town} did {d.first} plan?"), building),
    ]


def _festival(d: _Draw) -> Frame:
    village = d.pick(("Upper Wick", "Sallow Green", "Fenny Cross", "Ashby Moor", "Little Tarn"))
    food = d.pick(("cheese", "apple", "onion", "honey", "mushroom"))
    days = NUMBERS[d.pick(range(2, 8))]
    contest = d.pick(("rowing race", "pie-baking contest", "tug of war", "singing contest"))
    prize = d.pick(("silver spoon", "wooden cup", "basket of plums", "year of free bread"))
    job = d.pick(("farmer", "teacher", "innkeeper", "doctor"))
    passage = (
        f"Every {d.month}, the village of {village} holds {_an(food)} festival that lasts {days} days. It was started "
        f"in {d.year} by {d.full}, a local {job}. The main event is a {contest}, and the winner receives a {prize}."
    )
    return passage, [
        (
            (
                f"In which month is the festival in {village} held?",
                f"When in the year does {village} hold its festival?",
            ),
            d.month,
        ),
        (
            (f"How long does the {food} festival last?", f"For how many days does the festival in {village} go on?"),
            f"{days} days",
        ),
        ((f"Who started the festival in {village}?", f"Who founded the {food} festival?"), d.full),
        (
            (f"When was the {food} festival first held?", f"In what year did the festival in {village} begin?"),
            str(d.year),
        ),
        ((f"What was the job of the {food} festival's founder?", f"What did {d.first} do for a living?"), job),
        (
            (f"What is the main event of the festival in {village}?", f"Which event is the highlight in {village}?"),
            contest,
        ),
        ((f"What does the winner of the {contest} receive?", f"What prize is given at the {food} festival?"), prize),
    ]


def _animal(d: _Draw) -> Frame:
    kind = d.pick(("Orvane", "pale", "striped", "golden-eyed", "lesser"))
    animal = d.pick(("tree frog", "finch", "shrew", "gecko", "bat"))
    island = d.pick(("Kellmark", "Saltholm", "Drayle", "Ennis Mor"))
    height = d.pick(range(300, 2000, 50))
    weight = d.pick(range(6, 90))
    food = d.pick(("fig seeds", "small snails", "moths", "beetles", "moss"))
    passage = (
        f"The {kind} {animal} lives only on the island of {island}, in forests above {height} metres. Adults weigh "
        f"about {weight} grams and feed mainly on {food}. The species was first described in {d.year} by the "
        f"biologist {d.full}."
    )
    species = f"the {kind} {animal}"
    return passage, [
        ((f"On which island does {species} live?", f"Where is {species} found?"), island),
        (
            (f"How much does an adult {kind} {animal} weigh?", f"What is the weight of an adult {kind} {animal}?"),
            f"{weight} grams",
        ),
        ((f"What does {species} mainly eat?", f"What is the main food of {species}?"), food),
        ((f"Who first described {species}?", f"Which biologist described {species}?"), d.full),
        ((f"When was {species} first described?", f"In what year was {species} described?"), str(d.year)),
        (
            (f"Above what altitude does {species} live?", f"How high up are the forests {species} lives in?"),
            f"{height} metres",
        ),
    ]


def _voyage(d: _Draw) -> Frame:
    ship, renamed = d.rng.sample(("Marigold", "North Star", "Kittiwake", "Heron", "Good Hope", "Bramble"), 2)
    port, port2 = d.rng.sample(("Port Ellis", "Saltmouth", "Carrow Haven", "Westby", "Glenquay"), 2)
    cargo = d.pick(("timber", "slate", "grain", "wool", "salt fish"))
    days = NUMBERS[d.pick(range(3, 13))]
    date = f"{d.pick(range(2, 29))} {d.month}"
    passage = (
        f"The cargo ship {ship} left {port} on {date} {d.year} with a load of {cargo}. Captain {d.full} steered the "
        f"ship through a storm and reached {port2} {days} days later. The {ship} was later sold to a company in "
        f"{d.town} and renamed {renamed}."
    )
    return passage, [
        ((f"Where did the {ship} set sail from?", f"Which port did the {ship} leave?"), port),
        ((f"What was the {ship} carrying?", f"What cargo did the {ship} have on board?"), cargo),
        ((f"Who was the captain of the {ship}?", f"Who steered the {ship} through the storm?"), d.full),
        (
            (f"How long did the {ship} take to reach {port2}?", f"How many days did the voyage to {port2} last?"),
            f"{days} days",
        ),
        ((f"Which port did the {ship} reach after the storm?", f"Where did the {ship} arrive?"), port2),
        ((f"What was the {ship} renamed?", f"What new name was the {ship} given?"), renamed),
        ((f"On what date did the {ship} leave {port}?", f"When did the {ship} set sail?"), f"{date} {d.year}"),
    ]


def _club(d: _Draw) -> Frame:
    club = f"{d.town} {d.pick(('Chess Club', 'Rowing Club', 'Photography Society', 'Walking Club'))}"
    pub = d.pick(("Red Lion", "Golden Hind", "Three Keys", "Old Anchor"))
    members = d.pick(range(14, 90))
    age = NUMBERS[d.pick(range(9, 13))]
    times = NUMBERS[d.pick(range(2, 8))]
    passage = (
        f"The {club} was founded in {d.year} and meets every {d.day} in the back room of the {pub}. It has {members} "
        f"members, the youngest of whom is {age} years old. Its president, {d.full}, has won the regional "
        f"championship {times} times."
    )
    return passage, [
        ((f"When was the {club} founded?", f"In which year did the {club} start?"), str(d.year)),
        ((f"On which day does the {club} meet?", f"When does the {club} hold its meetings?"), d.day),
        ((f"In which pub does the {club} meet?", f"Where do the members of the {club} gather?"), pub),
        ((f"How many members does the {club} have?", f"How large is the {club}'s membership?"), str(members)),
        (
            (f"How old is the youngest member of the {club}?", "What is the age of the club's youngest member?"),
            f"{age} years old",
        ),
        ((f"Who is the president of the {club}?", f"Who leads the {club}?"), d.full),
        (
            (
                f"How many times has {d.full} won the regional championship?",
                "How often has the club's president won the regional title?",
            ),
            f"{times} times",
        ),
    ]


FRAMES: tuple[Callable[[_Draw], Frame], ...] = (_shop, _bridge, _festival, _animal, _voyage, _club)


def generate(passages: int = PASSAGES, seed: int = SEED) -> list[dict[str, Any]]:
    """``passages`` distinct passages, frames taken in turn, each with all of its questions (one phrasing of each);
    a passage in which an answer would not occur exactly once is drawn again. The same arguments give the same
    list."""
    rng = random.Random(seed)
    seen: set[str] = set()
    items: list[dict[str, Any]] = []
    turn = 0
    while len(seen) < passages:
        frame = FRAMES[turn % len(FRAMES)]
        turn += 1
        passage, questions = frame(_Draw(rng))
        if passage in seen or any(passage.count(answer) != 1 for _, answer in questions):
            continue
        seen.add(passage)
        for phrasings, answer in questions:
            items.append(
                {
                    "passage": passage,
                    "question": rng.choice(phrasings),
                    "answer": {"text": answer, "start": passage.index(answer)},
                }
            )
    return items


@lru_cache(maxsize=1)
def demo_scoring_set() -> tuple[dict[str, Any], ...]:
    """The demo scoring set (built once, then cached): :data:`PASSAGES` passages with all of their questions."""
    return tuple(generate())
