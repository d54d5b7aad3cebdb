"""CheckList-style template adversary for the sentiment task: ``sentiment-templates``.

Each template rewrites an annotator's draft (or, for ``frames``, writes from the context alone) and states the gold
it claims in code:

- ``negation``: a one-clause positive or negative draft whose only sentiment word is a predicate adjective after
  ``is``/``was``/... gets a ``not``; the claim flips (positive -> negative, negative -> positive). Only adjectives
  whose negation reads clearly one way are negated (``not good`` is negative; ``not perfect`` is not, so it is left
  out), and a negated negative gets ``at all`` (``not bad at all``).
- ``sarcasm``: a negative complaint behind a sarcastic opener (``Oh great, ...``): claims negative.
- ``entity_swap``: a person, place or product named in the draft swapped for another of the same kind (a woman's
  name for a woman's name): claims the draft's gold, unchanged.
- ``contrast``: ``X, but Y`` where the final clause decides: an overall verdict of the opposite polarity after the
  draft claims that polarity; the draft after a concession of the opposite polarity keeps the draft's gold.
- ``frames``: from the context alone (no draft), sentence frames filled from the small lists below, each with its
  gold (``I expected to hate the film, but it was wonderful.`` is positive).

Rewrites carry the statement and label only: the draft's explanation was written for the draft.
"""

from __future__ import annotations

import random
import re
from typing import Any

from dynaforge.adversaries.templates import Rewrite, Template, TemplateAdversary
from dynaforge.hookspecs import hookimpl

POSITIVE, NEGATIVE, NEUTRAL = "positive", "negative", "neutral"
OPPOSITE = {POSITIVE: NEGATIVE, NEGATIVE: POSITIVE}

# ---------------------------------------------------------------------------------------------- word lists


def wordset(text: str) -> frozenset[str]:
    """The words of ``text`` (a list written as prose, one word after another)."""
    return frozenset(text.split())


#: Positive predicates whose plain negation reads clearly negative ("The waiter was not friendly."). Superlatives
#: and strong praise are left out on purpose: "not perfect" or "not amazing" is faint praise, not a complaint.
NEGATABLE_POSITIVE: tuple[str, ...] = (
    "good",
    "nice",
    "friendly",
    "helpful",
    "comfortable",
    "clean",
    "tasty",
    "fun",
    "enjoyable",
    "pleasant",
    "polite",
    "reliable",
    "happy",
    "worth it",
    "worth the money",
)
#: Negative predicates whose negation, with "at all", reads as praise ("The soup was not bad at all."). Strong ones
#: ("awful", "terrible") are left out: "not terrible at all" is lukewarm, not positive.
NEGATABLE_NEGATIVE: tuple[str, ...] = ("bad", "disappointing", "boring")

#: Other words that carry sentiment: a draft holding one of them besides the negated predicate is left alone, as
#: the negation would no longer decide the statement's sentiment.
SENTIMENT_WORDS: frozenset[str] = wordset(
    """
    love loved loves lovely great excellent amazing wonderful fantastic superb brilliant perfect delightful
    best beautiful awesome enjoyed enjoy like liked favourite favorite recommend impressive impressed glad
    pleased delicious charming gorgeous stunning outstanding fabulous terrific
    hate hated hates awful terrible horrible dreadful worst disgusting rude dirty cold broken miserable
    annoying annoyed angry useless poor pathetic waste disappointed disappoint sad regret ruined slow
    overpriced tedious dull mediocre nasty ugly unpleasant unhappy
    """
)

NEGATION_WORDS = wordset("not no never nothing nobody none neither nor without hardly barely scarcely cannot")
#: Words after which the draft's sentiment is not one clause's: contrast, conditions, wishes, coordination.
COMPLEX_WORDS: frozenset[str] = wordset(
    """
    but although though however yet while whereas except despite unless if would could should might wish hope
    expected and or so because until
    """
)
SARCASM_MARKERS: tuple[str, ...] = ("oh great", "just what i needed", "yeah right", "thanks a lot", "wonderful.")

#: Sentence openers that may be lowercased when the draft follows a comma or colon ("Oh great, the train ...").
LOWERCASE_OPENERS: frozenset[str] = wordset(
    """
    the a an my our your this that these those it its it's they their there we his her another every each some
    someone somebody everyone everybody nobody what whoever
    """
)

#: Names swapped for one another, each list with its kind; people are split by the pronouns their names usually
#: take, so that a swap keeps "she"/"he" right.
ENTITIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("woman's name", ("Anna", "Clara", "Elif", "Grace", "Ines", "Lena", "Nadia", "Priya", "Sofia", "Yuki")),
    ("man's name", ("Ben", "Carlos", "David", "Farid", "Hiro", "Jonas", "Kofi", "Mateo", "Omar", "Tom")),
    ("place", ("Paris", "Lisbon", "Oslo", "Nairobi", "Lima", "Hanoi", "Denver", "Glasgow", "Porto", "Kyoto")),
    ("product", ("Zentro", "Lumio", "Kavo", "Orbix", "Novara", "Tessel", "Quillo", "Brightwell")),
)

#: Overall verdicts that decide a statement they end ("..., but overall I would not recommend it.").
VERDICTS: dict[str, tuple[str, ...]] = {
    POSITIVE: ("but overall I would still recommend it", "but on the whole I am very happy with it"),
    NEGATIVE: ("but overall I would not recommend it", "but on the whole I regret it"),
}
#: Concessions of the given polarity that a draft of the other polarity may follow ("It looked lovely in the
#: photos, but the room was cold."): the final clause, the draft, decides.
CONCESSIONS: dict[str, tuple[str, ...]] = {
    POSITIVE: ("It looked lovely in the photos", "I really wanted to like it"),
    NEGATIVE: ("It got off to a rough start", "I had my doubts at first"),
}

#: What the frames talk about; a thing named in the context's prompt is preferred.
THINGS: tuple[str, ...] = (
    "meal",
    "film",
    "book",
    "concert",
    "hotel",
    "gadget",
    "train journey",
    "wedding",
    "album",
    "holiday",
)
POSITIVE_ADJECTIVES: tuple[str, ...] = ("wonderful", "delightful", "lovely", "fantastic", "superb")
NEGATIVE_ADJECTIVES: tuple[str, ...] = ("awful", "dreadful", "terrible", "disappointing")
WEEKDAYS: tuple[str, ...] = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")

#: (frame, claimed gold), filled with ``{thing}``, ``{pos}`` (a positive adjective), ``{neg}``, ``{day}``.
FRAMES: tuple[tuple[str, str], ...] = (
    ("I expected to hate the {thing}, but it was {pos}.", POSITIVE),
    ("I expected to love the {thing}, but it was {neg}.", NEGATIVE),
    ("Everyone warned me the {thing} would be {neg}, but it turned out to be {pos}.", POSITIVE),
    ("Everyone promised me the {thing} would be {pos}, but it turned out to be {neg}.", NEGATIVE),
    # "good" and "disappointing" as in the negation lists: "not superb" or "not terrible" would be lukewarm.
    ("I would not call the {thing} good by any stretch.", NEGATIVE),
    ("Not one thing about the {thing} was disappointing.", POSITIVE),
    ("I mentioned the {thing} to my sister on {day} evening.", NEUTRAL),
)

# --------------------------------------------------------------------------------------------------- helpers

_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
_INNER_SENTENCE_END = re.compile(r"[.!?]\s+\S")


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _one_sentence(statement: str) -> bool:
    """One sentence, not a question, no colon or semicolon joining two."""
    body = statement.strip()
    return not (_INNER_SENTENCE_END.search(body) or "?" in body or ";" in body or ":" in body)


def _has_negation(statement: str) -> bool:
    return "n't" in statement.lower() or any(w in NEGATION_WORDS for w in _words(statement))


def _is_sarcastic(statement: str) -> bool:
    low = statement.lower()
    return any(m in low for m in SARCASM_MARKERS)


def _names() -> frozenset[str]:
    return frozenset(n for _, names in ENTITIES for n in names)


def _lowercase_start(statement: str) -> str | None:
    """The statement made fit to follow a comma ("The train ..." -> "the train ..."), or None when its first word
    cannot be told apart from a proper noun."""
    first = statement.split()[0]
    bare = first.rstrip(",")
    if first[0].islower() or bare in ("I", "I'm", "I've", "I'd", "I'll") or bare in _names():
        return statement
    if bare.lower() in LOWERCASE_OPENERS and bare[1:] == bare[1:].lower():
        return statement[0].lower() + statement[1:]
    return None


def _strip_end(statement: str) -> str:
    return statement.strip().rstrip(".!").rstrip()


def _fields(statement: str, label: str, context: dict[str, Any], draft: dict[str, Any] | None) -> dict[str, Any]:
    fields: dict[str, Any] = {"statement": statement, "label": label}
    if draft and draft.get("prompt") and not context.get("prompt"):
        fields["prompt"] = draft["prompt"]  # the draft carries its own prompt (no stored context)
    return fields


def _polar_draft(draft: dict[str, Any] | None) -> tuple[str, str] | None:
    if not draft or draft.get("label") not in OPPOSITE or not isinstance(draft.get("statement"), str):
        return None
    statement = draft["statement"].strip()
    return (statement, draft["label"]) if statement else None


# ------------------------------------------------------------------------------------------------- templates

_PREDICATE_WORDS = wordset(" ".join(NEGATABLE_POSITIVE + NEGATABLE_NEGATIVE)) - {"it", "the", "money"}
_COPULA = r"(?:\b(?:is|was|are|were|am)|'s|'re|'m)"
_INTENSIFIER = r"(?:(?:very|really|particularly)\s+)?"


def negation(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """Claims the opposite of the draft's positive or negative gold, for a one-clause draft whose only sentiment
    word is a predicate this module can negate unambiguously."""
    polar = _polar_draft(draft)
    if polar is None:
        return []
    statement, label = polar
    words = _words(statement)
    if (
        not _one_sentence(statement)
        or _has_negation(statement)
        or _is_sarcastic(statement)
        or any(w in COMPLEX_WORDS for w in words)
        or len(words) > 25
    ):
        return []
    predicates = NEGATABLE_POSITIVE if label == POSITIVE else NEGATABLE_NEGATIVE
    hits = []
    for predicate in predicates:
        pattern = re.compile(rf"({_COPULA})(\s+)({_INTENSIFIER})({re.escape(predicate)})\b", re.IGNORECASE)
        hits += [(m, predicate) for m in pattern.finditer(statement)]
    if len(hits) != 1:
        return []
    match, _ = hits[0]
    # The predicate must be the statement's only sentiment word: none may be left once it is taken out.
    rest = _words(statement[: match.start()] + " " + statement[match.end() :])
    if any(w in SENTIMENT_WORDS or w in _PREDICATE_WORDS for w in rest):
        return []
    copula, space, intensifier, word = match.groups()
    tail = " at all" if label == NEGATIVE else ""
    negated = f"{copula}{space}not {intensifier}{word}{tail}"
    rewritten = statement[: match.start()] + negated + statement[match.end() :]
    claimed = OPPOSITE[label]
    return [
        (
            _fields(rewritten, claimed, context, draft),
            f"'{match.group(0)}' -> '{negated}': the negated {label} predicate makes the statement {claimed}",
        )
    ]


def sarcasm(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """Claims negative: a negative complaint stays negative behind a sarcastic, positive-sounding opener."""
    polar = _polar_draft(draft)
    if polar is None or polar[1] != NEGATIVE:
        return []
    statement = polar[0]
    if _is_sarcastic(statement) or "?" in statement:
        return []
    lowered = _lowercase_start(statement)
    openers = [f"Wonderful. {statement}"]
    if lowered is not None:
        openers = [f"Oh great, {lowered}", f"Just what I needed: {lowered}", *openers]
    return [
        (_fields(text, NEGATIVE, context, draft), "a sarcastic opener over a negative complaint: still negative")
        for text in openers
    ]


def entity_swap(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """Claims the draft's gold: swapping a named person, place or product for another of its kind changes no
    sentiment."""
    if not draft or draft.get("label") not in (POSITIVE, NEGATIVE, NEUTRAL):
        return []
    if not isinstance(draft.get("statement"), str):
        return []
    statement, label = draft["statement"].strip(), draft["label"]
    out: list[Rewrite] = []
    for kind, names in ENTITIES:
        for name in names:
            pattern = re.compile(rf"\b{re.escape(name)}\b")
            if not pattern.search(statement):
                continue
            others = [n for n in names if n != name and not re.search(rf"\b{re.escape(n)}\b", statement)]
            for other in rng.sample(others, min(2, len(others))):
                swapped = pattern.sub(other, statement)
                out.append((_fields(swapped, label, context, draft), f"{kind} '{name}' -> '{other}': gold unchanged"))
    return out


def contrast(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """``X, but Y``: the final clause decides. An opposite verdict after the draft claims the opposite label; the
    draft after an opposite concession keeps the draft's label."""
    polar = _polar_draft(draft)
    if polar is None:
        return []
    statement, label = polar
    words = _words(statement)
    if not _one_sentence(statement) or _is_sarcastic(statement) or any(w in COMPLEX_WORDS for w in words):
        return []
    other = OPPOSITE[label]
    out: list[Rewrite] = [
        (
            _fields(f"{_strip_end(statement)}, {verdict}.", other, context, draft),
            f"a {other} overall verdict after the {label} draft decides: {other}",
        )
        for verdict in VERDICTS[other]
    ]
    lowered = _lowercase_start(statement)
    if lowered is not None:
        out += [
            (
                _fields(f"{concession}, but {lowered}", label, context, draft),
                f"a {other} concession before the {label} draft, which decides: {label}",
            )
            for concession in CONCESSIONS[other]
        ]
    return out


def frames(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """From the context alone: each frame filled from the lists, claiming the frame's gold."""
    if draft is not None:
        return []
    prompt = str(context.get("prompt") or "").lower()
    named = [t for t in THINGS if re.search(rf"\b{re.escape(t)}\b", prompt)]
    out: list[Rewrite] = []
    for frame, gold in FRAMES:
        thing = named[0] if named else rng.choice(THINGS)
        text = frame.format(
            thing=thing,
            pos=rng.choice(POSITIVE_ADJECTIVES),
            neg=rng.choice(NEGATIVE_ADJECTIVES),
            day=rng.choice(WEEKDAYS),
        )
        out.append((_fields(text, gold, context, None), f"a {gold} frame"))
    return out


TEMPLATES: tuple[Template, ...] = (
    Template("negation", negation, "Negate the draft's only sentiment predicate: the label flips."),
    Template("sarcasm", sarcasm, "A sarcastic opener over a negative complaint: still negative."),
    Template("entity_swap", entity_swap, "Swap a named person, place or product: the label is unchanged."),
    Template("contrast", contrast, "X, but Y: the final clause decides the label."),
    Template("frames", frames, "Sentence frames with known labels, from the context alone."),
)


def adversary() -> TemplateAdversary:
    return TemplateAdversary(
        "sentiment-templates",
        "sentiment",
        TEMPLATES,
        description="CheckList-style sentiment rewrites with known gold: negation, sarcasm, entity swaps, contrast "
        "clauses, and sentence frames written from the prompt alone.",
    )


@hookimpl
def register_adversaries(register):
    register(adversary())
