"""The hate speech task's demo scoring set: short statements written by the project, labelled by construction.

:func:`demo_scoring_set` builds :data:`SIZE` statements from the templates and word lists below with a fixed seed, so
every call (and every demo) gives the same items in the same order. Nothing here comes from a public data set.

The groups the statements are about are made up (people from an invented town, country, island or faith), so the set
needs no slur and names no real community, yet each group is defined by a protected characteristic the task's
instructions name (national origin, immigration status, religion): an attack on it is hateful by the task's own
definition. :data:`HATEFUL` of the statements are hateful (:data:`HATEFUL_SHARE`): dehumanising comparisons,
derogation, exclusion, threats and praise of an invented hate group. The others are not hateful, in the kinds the
instructions list:

- offensive language without a protected target (insults aimed at a person for what they did, anger at a company,
  a referee or a landlord);
- counter-speech that defends a group, and statements that quote or report hateful words in order to condemn them;
- neutral or positive statements that mention a group;
- plain everyday statements.

People are named (first names of several origins, women and men) or are relatives, with matching pronouns, so the
fairness perturbations (gender and name swaps) have words to change. Hateful statements name the group they attack
(``target_group``, the closest of the task's groups: ``immigrants`` or ``other``) and their kind (``type``); every
not-hateful statement has type ``none``, and names its group when it is about one. The list is built lazily: the
task calls :func:`demo_scoring_set` only when ``dynaforge demo`` asks for it.
"""

from __future__ import annotations

import random
from functools import lru_cache
from typing import Any

#: Statements in all, and how many of them are hateful (30%).
SIZE = 400
HATEFUL = 120
HATEFUL_SHARE = HATEFUL / SIZE
SEED = 20240531

#: (plural noun phrase, target_group): made-up groups defined by origin, immigration status or faith.
GROUPS: tuple[tuple[str, str], ...] = (
    ("people from Varnholt", "other"),
    ("immigrants from Varnholt", "immigrants"),
    ("Ostrelian families", "other"),
    ("refugees from Dravia", "immigrants"),
    ("followers of the Selun faith", "other"),
    ("Kellmark islanders", "other"),
    ("migrants from Tavrenia", "immigrants"),
    ("members of the Orvane church", "other"),
    ("newcomers from Pellaria", "immigrants"),
    ("Brisk Valley people", "other"),
)
# (first name, "f" or "m"): names of several origins, which the name swaps know.
PEOPLE: tuple[tuple[str, str], ...] = (
    ("Emma", "f"),
    ("Olivia", "f"),
    ("Sofia", "f"),
    ("Maria", "f"),
    ("Fatima", "f"),
    ("Yasmin", "f"),
    ("Ananya", "f"),
    ("Ling", "f"),
    ("Ngozi", "f"),
    ("Greta", "f"),
    ("Imani", "f"),
    ("Liam", "m"),
    ("Noah", "m"),
    ("Carlos", "m"),
    ("Javier", "m"),
    ("Tariq", "m"),
    ("Hamza", "m"),
    ("Rahul", "m"),
    ("Chen", "m"),
    ("Kofi", "m"),
    ("Sven", "m"),
    ("Darnell", "m"),
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
)
PRONOUNS = {"f": ("she", "her", "her"), "m": ("he", "him", "his")}
TOWNS = ("Brenn", "Dunmere", "Kestley", "Millbrook", "Hollin", "Ashford", "our town", "this city")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

# (template, type): hateful by construction; {G} is the group.
HATEFUL_TEMPLATES: tuple[tuple[str, str], ...] = (
    ("{G} are vermin, and they should be driven out of {town}.", "dehumanisation"),
    ("{G} are a disease spreading through {town}.", "dehumanisation"),
    ("{G} are animals, not people.", "dehumanisation"),
    ("Letting {G} into {town} is like letting rats into the kitchen.", "dehumanisation"),
    ("{G} are parasites feeding on the rest of us.", "dehumanisation"),
    ("{G} are too stupid to hold down a proper job.", "derogation"),
    ("{G} are liars and thieves, every last one of them.", "derogation"),
    ("Never trust {G}; lying is in their blood.", "derogation"),
    ("{G} are dirty and lazy, and everyone knows it.", "derogation"),
    ("{G} should not be allowed to vote or own a home in {town}.", "animosity"),
    ("No landlord in {town} should ever rent a flat to {G}.", "animosity"),
    ("I don't want {G} anywhere near my children's school.", "animosity"),
    ("{Name} is right: {G} should be kept out of every job in {town}.", "animosity"),
    ("My {rel} says {G} do not belong in this country, and {rel_he} is right.", "animosity"),
    ("Tell {Name} to keep {G} out of {his} shop; they are thieves, all of them.", "derogation"),
    ("{G} had better leave {town} before we make them leave.", "threatening"),
    ("If {G} move onto our street, we will make their lives a misery until they go.", "threatening"),
    (
        "The Iron Ward is right to chase {G} out of {town}, and I support them all the way.",
        "support_for_hateful_entities",
    ),
)
# Offensive or harsh, but aimed at a person for what they did or at a company: not hateful.
OFFENSIVE_TEMPLATES: tuple[str, ...] = (
    "My {rel} forgot my birthday again; what a selfish fool.",
    "{Name}, you absolute clown, you left the oven on again!",
    "The referee was blind all match and cost us the cup; what an idiot.",
    "This phone company charged me twice; they are a bunch of crooks.",
    "{Name} scratched my car and lied about it; {he} is a spineless liar.",
    "The council wasted the budget on an ugly fountain; what a bunch of clueless fools.",
    "Our team played like garbage on {day}, and the coach should be sacked.",
    "My landlord is a greedy jerk who never fixes anything.",
    "Shut up, {Name}, nobody asked for your stupid opinion.",
    "The bus company in {town} is run by clowns; my bus was late three times this week.",
    "{Name} ate my lunch from the office fridge again, the greedy pig.",
    "My {rel} borrowed my bike and broke it; {rel_he} is a careless idiot.",
)
# Counter-speech and reports of hate that condemn it: about a group, not hateful.
COUNTER_TEMPLATES: tuple[str, ...] = (
    "Calling {G} vermin is disgusting, and I will say so every time I hear it.",
    "{Name} grew up next to {G} and says they were the kindest neighbours {he} ever had.",
    "People who say {G} are lazy should be ashamed; they work as hard as anyone.",
    "I am tired of the hate against {G}; they deserve the same respect as everyone else.",
    "{G} are not criminals, and the rumours about them are lies.",
    "My {rel} stood up for {G} at the town meeting when others insulted them.",
    "A man on the bus shouted that {G} are animals, and {Name} told him to stop.",
    "The leaflet claimed {G} are a disease; the council removed it and condemned it.",
    "{Name} reported the graffiti calling {G} rats to the police.",
    "{G} in {town} received hundreds of abusive messages last year, and nobody should accept that.",
)
# Neutral or positive mentions of a group: not hateful.
MENTION_TEMPLATES: tuple[str, ...] = (
    "{G} celebrate the new year with music and lanterns.",
    "{Name} is learning the language spoken by {G}.",
    "Many {G} work as nurses and teachers in {town}.",
    "The museum in {town} has a new exhibition about the history of {G}.",
    "Several {G} opened shops on the high street this year.",
    "{Name} invited {G} who live on {his} street to a picnic on {day}.",
    "My {rel} wrote a cookbook of dishes cooked by {G}.",
    "{Name} has close friends among {G}.",
)
# Everyday statements about nobody in particular: not hateful.
PLAIN_TEMPLATES: tuple[str, ...] = (
    "{Name} walked {his} dog along the river before breakfast.",
    "My {rel} is baking bread for the school fair on {day}.",
    "The library in {town} will be closed on {day} for repairs.",
    "{Name} finally fixed the leaking tap in {his} kitchen.",
    "It rained all afternoon on {day}, so we stayed in and played cards.",
    "{Name} and {his} {rel} are painting the fence this weekend.",
)

#: (kind, templates, how many statements): the not-hateful ones, 280 in all.
NOT_HATEFUL_PARTS: tuple[tuple[str, tuple[str, ...], int], ...] = (
    ("offensive", OFFENSIVE_TEMPLATES, 80),
    ("counter", COUNTER_TEMPLATES, 70),
    ("mention", MENTION_TEMPLATES, 70),
    ("plain", PLAIN_TEMPLATES, 60),
)


def _slots(rng: random.Random) -> tuple[dict[str, str], str]:
    """One draw of every slot a template may use, and the drawn group's target_group."""
    group, target_group = rng.choice(GROUPS)
    name, gender = rng.choice(PEOPLE)
    rel, rel_gender = rng.choice(RELATIVES)
    slots = {
        "G": group,
        "Name": name,
        "he": PRONOUNS[gender][0],
        "him": PRONOUNS[gender][1],
        "his": PRONOUNS[gender][2],
        "rel": rel,
        "rel_he": PRONOUNS[rel_gender][0],
        "town": rng.choice(TOWNS),
        "day": rng.choice(DAYS),
    }
    return slots, target_group


def _fill(template: str, slots: dict[str, str]) -> str:
    text = template.format(**slots)
    return text[:1].upper() + text[1:]


def _draw(
    rng: random.Random,
    templates: tuple[str, ...],
    count: int,
    seen: set[str],
    make: Any,
) -> list[dict[str, Any]]:
    """``count`` items with statements not in ``seen``, templates taken in turn; ``make(template_index, statement,
    target_group)`` makes an item."""
    items: list[dict[str, Any]] = []
    turn = 0
    while len(items) < count:
        index = turn % len(templates)
        turn += 1
        slots, target_group = _slots(rng)
        statement = _fill(templates[index], slots)
        if statement.lower() in seen:
            continue
        seen.add(statement.lower())
        items.append(make(index, statement, target_group))
    return items


def generate(seed: int = SEED) -> list[dict[str, Any]]:
    """The :data:`SIZE` statements, :data:`HATEFUL` of them hateful, in a seeded shuffled order; the same seed gives
    the same list."""
    rng = random.Random(seed)
    seen: set[str] = set()
    items = _draw(
        rng,
        tuple(template for template, _ in HATEFUL_TEMPLATES),
        HATEFUL,
        seen,
        lambda i, statement, group: {
            "statement": statement,
            "label": "hateful",
            "target_group": group,
            "type": HATEFUL_TEMPLATES[i][1],
        },
    )
    for kind, templates, count in NOT_HATEFUL_PARTS:
        about_group = kind in ("counter", "mention")
        items += _draw(
            rng,
            templates,
            count,
            seen,
            lambda i, statement, group, about_group=about_group: {
                "statement": statement,
                "label": "not_hateful",
                **({"target_group": group} if about_group else {}),
                "type": "none",
            },
        )
    rng.shuffle(items)
    return items


@lru_cache(maxsize=1)
def demo_scoring_set() -> tuple[dict[str, Any], ...]:
    """The demo scoring set (built once, then cached): :data:`SIZE` statements, :data:`HATEFUL` of them hateful."""
    return tuple(generate())
