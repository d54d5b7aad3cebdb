"""CheckList-style template adversary for the NLI task: ``nli-templates``.

The premise is the context field and is never changed (a draft that carries its own premise, for an example
without a stored context, keeps it too): every template writes a hypothesis and claims its label. The templates
are conservative: they only act on sentences simple enough that the label follows from the edit, and give nothing
otherwise.

From the premise alone (no draft):

- ``premise_sentence``: a sentence of the premise copied, or with an intersective modifier dropped ("the old
  railway station" -> "the railway station") where no negation or quantifier could reverse the inference: claims
  entailment.
- ``premise_negation``: such a sentence with its one verb negated ("was built" -> "was not built"): claims
  contradiction.
- ``premise_detail``: such a sentence (a simple past event) with a detail the premise does not mention ("... after
  a long discussion"): claims neutral.

From a draft:

- ``negate_hypothesis``: the hypothesis's one verb negated, or its one negation removed: entailment and
  contradiction swap, neutral stays neutral.
- ``unsupported_detail``: an entailed simple past event with a detail the premise does not mention: claims neutral.
- ``swap_number``: in an entailed hypothesis, a number (or the agent of "written by", "founded by", ...) that the
  premise states swapped for one it does not: claims contradiction.

Rewrites carry the hypothesis and label only: the draft's reason was written for the draft.
"""

from __future__ import annotations

import random
import re
from typing import Any

from dynaforge.adversaries.templates import Rewrite, Template, TemplateAdversary
from dynaforge.hookspecs import hookimpl

ENTAILMENT, NEUTRAL, CONTRADICTION = "entailment", "neutral", "contradiction"
#: What negating a hypothesis does to its label: true becomes false and false true; open stays open.
NEGATED = {ENTAILMENT: CONTRADICTION, CONTRADICTION: ENTAILMENT, NEUTRAL: NEUTRAL}
MIN_HYPOTHESIS, MAX_HYPOTHESIS = 5, 300


def wordset(text: str) -> frozenset[str]:
    """The words of ``text`` (a list written as prose)."""
    return frozenset(text.split())


# ---------------------------------------------------------------------------------------------- word lists

#: Words that make a sentence's inferences depend on scope (negation, quantifiers, frequency, modality, reported
#: speech, clauses joined or embedded): a sentence holding one is not negated, trimmed or extended.
SCOPE_WORDS = wordset(
    """
    not no never none nobody nothing neither nor without cannot hardly barely scarcely rarely seldom
    all every each some any most many few fewer several both either only just also too even still already yet again
    always usually often sometimes mostly almost nearly about around roughly least more less than
    and or but because if unless although though while whereas when whenever since which who whom whose where
    until before after so that whether
    may might could would should must probably possibly perhaps likely seems seemed appears appeared
    said says say told tells thinks thought believes believed claims claimed reported hopes hoped wants wanted
    """
)
#: Pronouns that point outside a sentence: a premise sentence holding one is not self-contained.
ANAPHORS = wordset("it its they them their theirs this these those he him she hers")
#: Indefinite subjects, under which "A man is not asleep" does not deny "A man is asleep".
INDEFINITES = wordset("a an some someone somebody something one any anyone anybody anything")
#: Irregular past participles, which may follow "has"/"have"/"had" as auxiliaries ("has been", "had won").
PARTICIPLES = wordset(
    "been seen taken given written eaten driven broken chosen spoken fallen forgotten hidden risen stolen shown known "
    "grown thrown done gone made built won lost sent kept left found held told sold paid met run begun sung brought "
    "bought caught taught thought fought"
)
NEGATIONS = wordset("not no never none nobody nothing neither nor without cannot")

#: Intersective modifiers: "a small boat" is a boat, so dropping one keeps a sentence true (outside negation and
#: quantifiers). Non-intersective ones ("former", "fake", "alleged") and colour words for people are left out.
DROPPABLE_MODIFIERS = wordset(
    "old new small large big little young tall narrow wide busy quiet heavy wooden stone red blue green yellow "
    "famous local"
)
DETERMINERS = wordset("a an the his her its their our my your this that")

#: Details a premise rarely settles, as appended to a sentence, each with words whose presence in the premise means
#: it may settle it. Times and places are left out: "on a rainy morning" is false of an event that lasted years.
DETAILS: tuple[tuple[str, frozenset[str]], ...] = (
    (" after a long discussion", wordset("discussion discussed discuss debate debated argued argument talks meeting")),
    (
        ", to the surprise of many",
        wordset("surprise surprised surprising surprisingly expected unexpected unexpectedly predicted shock shocked"),
    ),
)

NUMBER_WORDS: dict[str, int] = {
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
}
#: Words that turn a number into a bound or an estimate ("about 400", "more than 600"): swapping it may keep the
#: statement true, so such hypotheses are left alone.
HEDGES = wordset(
    "about around roughly approximately nearly almost over under least more less fewer between up some per"
)
#: Participles whose "by" names the one agent ("written by X"): another name there is false.
#: ("founded", "painted", "led" are left out: co-founders, house painters and co-leaders are common).
SINGLE_AGENT = wordset("written composed directed conducted invented described")
FIRST_NAMES: tuple[str, ...] = ("Anna", "Clara", "Elif", "Hiro", "Jonas", "Kofi", "Lena", "Mateo", "Priya", "Tomas")
SURNAMES: tuple[str, ...] = ("Alvarez", "Brandt", "Castell", "Dumont", "Eriksen", "Farrow", "Halden", "Novak")

# --------------------------------------------------------------------------------------------------- helpers

ABBREVIATIONS = wordset("Dr. Mr. Mrs. Ms. St. Prof. Jr. Sr. p.m. a.m. e.g. i.e. etc. vs. No. Mt.")
_BOUNDARY = re.compile(r"[.!?](?=\s+[\"'A-Z0-9])")
_TOKEN = re.compile(r"[A-Za-z]+(?:'[a-z]+)?|\d+")


def sentences(text: str) -> list[str]:
    """The sentences of ``text``, not splitting after abbreviations ("Dr.", "p.m.") or initials."""
    out, start = [], 0
    for m in _BOUNDARY.finditer(text):
        last = text[start : m.end()].split()[-1] if text[start : m.end()].split() else ""
        if last in ABBREVIATIONS or re.fullmatch(r"[A-Z]\.", last):
            continue
        out.append(text[start : m.end()].strip())
        start = m.end()
    tail = text[start:].strip()
    return [s for s in [*out, tail] if s]


def _words(text: str) -> list[str]:
    return [w.lower() for w in _TOKEN.findall(text)]


def _has_number(text: str) -> bool:
    return bool(re.search(r"\d", text)) or any(w in NUMBER_WORDS or w == "one" for w in _words(text))


def _mentions(premise: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", premise, re.IGNORECASE) is not None


def _self_contained(sentence: str) -> bool:
    """A premise sentence fit to stand alone as a hypothesis: a statement, of a hypothesis's length, whose
    pronouns do not point at other sentences."""
    words = _words(sentence)
    return (
        MIN_HYPOTHESIS <= len(sentence) <= MAX_HYPOTHESIS
        and sentence.endswith(".")
        and not any(c in sentence for c in '?;:"()')
        and bool(words)
        and not any(w in ANAPHORS for w in words)
    )


def _simple(sentence: str) -> bool:
    """One clause, no word whose scope could turn an edit's inference around, no number."""
    words = _words(sentence)
    return not any(w in SCOPE_WORDS for w in words) and "n't" not in sentence.lower() and not _has_number(sentence)


_AUX = re.compile(r"\b(is|are|was|were|will|can|has|have|had)\b")
_NEGATED_AUX = re.compile(
    r"\b(?:(is|are|was|were|will|has|have|had) not|(cannot)|(can't)|(won't)|(is|are|was|were|has|have|had)n't)\b"
)


def negate(sentence: str) -> tuple[str, str] | None:
    """``sentence`` with its one auxiliary negated, or its one negation removed, and the edit made; None when the
    sentence is not simple enough for the negation to deny exactly what it says."""
    if "?" in sentence or ";" in sentence or ":" in sentence or not (MIN_HYPOTHESIS <= len(sentence) <= 300):
        return None
    words = _words(sentence)
    negations = [w for w in words if w in NEGATIONS] + re.findall(r"n't\b", sentence)
    rest = [w for w in words if w not in ("not", "cannot") and not w.endswith("n't")]
    if any(w in SCOPE_WORDS for w in rest) or _has_number(sentence):
        return None
    auxiliaries = list(_AUX.finditer(sentence))
    if not negations:
        if len(auxiliaries) != 1:
            return None
        aux = auxiliaries[0]
        subject = sentence[: aux.start()]
        if not subject.strip() or any(w in INDEFINITES for w in _words(subject)):
            return None
        following = sentence[aux.end() :].split()
        if aux.group(1) in ("has", "have", "had") and not (
            following and (following[0] in PARTICIPLES or re.fullmatch(r"[a-z]{2,}ed", following[0]))
        ):
            return None  # "had" as the main verb ("had twelve members") would need "did not have"
        negated = "cannot" if aux.group(1) == "can" else f"{aux.group(1)} not"
        return sentence[: aux.start()] + negated + sentence[aux.end() :], f"'{aux.group(0)}' -> '{negated}'"
    removals = list(_NEGATED_AUX.finditer(sentence))
    if len(negations) != 1 or len(removals) != 1:
        return None
    m = removals[0]
    subject = sentence[: m.start()]
    if not subject.strip() or any(w in INDEFINITES for w in _words(subject)):
        return None
    kept = m.group(1) or m.group(5) or ("can" if m.group(2) or m.group(3) else "will")
    if len(_AUX.findall(sentence[: m.start()] + kept + sentence[m.end() :])) != 1:
        return None
    return sentence[: m.start()] + kept + sentence[m.end() :], f"'{m.group(0)}' -> '{kept}'"


def drop_modifiers(sentence: str, premise: str) -> list[tuple[str, str]]:
    """``sentence`` with one intersective modifier dropped, for each such modifier after a determiner and before a
    noun the premise names only once (so that "the railway station" still picks out the same station)."""
    if any(w in SCOPE_WORDS for w in _words(sentence)) or "n't" in sentence.lower():
        return []
    out = []
    tokens = list(re.finditer(r"[A-Za-z]+", sentence))
    for first, second, third in zip(tokens, tokens[1:], tokens[2:], strict=False):
        if sentence[first.end() : second.start()] != " " or sentence[second.end() : third.start()] != " ":
            continue
        determiner, modifier, noun = first.group(), second.group(), third.group()
        if determiner.lower() not in DETERMINERS or modifier not in DROPPABLE_MODIFIERS or not noun.islower():
            continue
        if noun in DROPPABLE_MODIFIERS or noun in SCOPE_WORDS or noun in ("of", "to", "as", "enough", "in", "on"):
            continue
        if len(re.findall(rf"\b{noun}\b", premise, re.IGNORECASE)) != 1:
            continue
        if determiner.lower() in ("a", "an"):  # "an old boat" -> "a boat"
            article = "an" if noun[0] in "aeiou" else "a"
            determiner = article.capitalize() if determiner[0].isupper() else article
        trimmed = sentence[: first.start()] + determiner + " " + sentence[third.start() :]
        out.append((trimmed, f"dropped '{modifier}'"))
    return out


def _past_event(sentence: str) -> bool:
    """A simple past event ("Marta planted ... in April."): a regular past verb, no auxiliary or copula, no word
    whose scope a detail could fall under (numbers are fine: the detail does not touch them)."""
    words = _words(sentence)
    return (
        not any(w in SCOPE_WORDS for w in words)
        and "n't" not in sentence.lower()
        and not _AUX.search(sentence)
        and not any(w in ("be", "been", "being", "am", "do", "does", "did") for w in words)
        and any(len(w) > 4 and w.endswith("ed") for w in words[1:])
    )


def add_details(sentence: str, premise: str) -> list[tuple[str, str]]:
    """A simple past event with a detail the premise says nothing about."""
    if not _past_event(sentence):
        return []
    premise_words = set(_words(premise)) | set(premise.lower().split())
    out = []
    for detail, settled_by in DETAILS:
        if premise_words & settled_by:
            continue
        extended = f"{sentence.rstrip().rstrip('.')}{detail}."
        if len(extended) <= MAX_HYPOTHESIS:
            out.append((extended, f"added '{detail.lstrip(', ')}', which the premise does not mention"))
    return out


def _numbers(hypothesis: str) -> list[tuple[re.Match[str], int, bool]]:
    """The numbers written in ``hypothesis``: (match, value, written as a word)."""
    found = []
    for m in re.finditer(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(?![\w,]|\.\d)", hypothesis):
        found.append((m, int(m.group(1).replace(",", "")), False))
    for m in re.finditer(r"(?<![\w-])([A-Za-z]+)(?![\w-])", hypothesis):
        if m.group(1).lower() in NUMBER_WORDS:
            found.append((m, NUMBER_WORDS[m.group(1).lower()], True))
    return sorted(found, key=lambda f: f[0].start())


def _other_number(value: int, text: str, as_word: bool, premise: str, rng: random.Random) -> str | None:
    """A number near ``value`` that the premise does not mention, written like ``text``."""
    if as_word:
        near = sorted((abs(v - value), v, w) for w, v in NUMBER_WORDS.items() if abs(v - value) >= 2)
        options = [w for _, v, w in near[:6] if not _mentions(premise, w) and not _mentions(premise, str(v))][:3]
        if not options:
            return None
        word = rng.choice(options)
        return word.capitalize() if text[0].isupper() else word
    is_year = len(text) == 4 and "," not in text and 1000 <= value <= 2100
    shifts = (-7, -3, 3, 5, 11) if is_year else (2, 3, 5, -2)
    candidates = [value + s for s in shifts if value + s >= 0 and value + s != value]
    formatted = [f"{v:,}" if "," in text else str(v) for v in candidates]
    options = [f for f in formatted if not _mentions(premise, f) and not _mentions(premise, f.replace(",", ""))]
    return rng.choice(options) if options else None


# ------------------------------------------------------------------------------------------------- templates


def _premise(context: dict[str, Any], draft: dict[str, Any] | None) -> tuple[str, bool] | None:
    """The premise, and whether the draft carries it (no stored context)."""
    if isinstance(context.get("premise"), str) and context["premise"].strip():
        return context["premise"], False
    if draft and isinstance(draft.get("premise"), str) and draft["premise"].strip():
        return draft["premise"], True
    return None


def _fields(hypothesis: str, label: str, premise: str, carried: bool) -> dict[str, Any]:
    fields: dict[str, Any] = {"hypothesis": hypothesis, "label": label}
    if carried:
        fields["premise"] = premise
    return fields


def _draft(draft: dict[str, Any] | None) -> tuple[str, str] | None:
    if not draft or draft.get("label") not in NEGATED or not isinstance(draft.get("hypothesis"), str):
        return None
    hypothesis = draft["hypothesis"].strip()
    return (hypothesis, draft["label"]) if hypothesis else None


def _premise_sentences(context: dict[str, Any], draft: dict[str, Any] | None) -> tuple[str, list[str]] | None:
    if draft is not None:
        return None
    found = _premise(context, None)
    if found is None:
        return None
    return found[0], [s for s in sentences(found[0]) if _self_contained(s)]


def premise_sentence(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """Claims entailment: a sentence of the premise, copied or with an intersective modifier dropped."""
    found = _premise_sentences(context, draft)
    if found is None:
        return []
    premise, eligible = found
    out: list[Rewrite] = []
    for sentence in eligible:
        out.append((_fields(sentence, ENTAILMENT, premise, False), "a sentence of the premise, copied"))
        for trimmed, edit in drop_modifiers(sentence, premise):
            out.append((_fields(trimmed, ENTAILMENT, premise, False), f"a sentence of the premise, {edit}"))
    return out


def premise_negation(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """Claims contradiction: a simple sentence of the premise with its one verb negated."""
    found = _premise_sentences(context, draft)
    if found is None:
        return []
    premise, eligible = found
    out: list[Rewrite] = []
    for sentence in eligible:
        negated = negate(sentence)
        if negated is not None:
            rationale = f"{negated[1]}: the premise's claim negated"
            out.append((_fields(negated[0], CONTRADICTION, premise, False), rationale))
    return out


def premise_detail(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """Claims neutral: a simple past event of the premise with a detail the premise does not mention."""
    found = _premise_sentences(context, draft)
    if found is None:
        return []
    premise, eligible = found
    return [
        (_fields(extended, NEUTRAL, premise, False), f"a sentence of the premise, {edit}")
        for sentence in eligible
        for extended, edit in add_details(sentence, premise)
    ]


def negate_hypothesis(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """Claims the negated label: entailment <-> contradiction, neutral stays neutral."""
    hyp = _draft(draft)
    found = _premise(context, draft)
    if hyp is None or found is None:
        return []
    negated = negate(hyp[0])
    if negated is None:
        return []
    claimed = NEGATED[hyp[1]]
    return [(_fields(negated[0], claimed, *found), f"{negated[1]}: the hypothesis negated, {hyp[1]} -> {claimed}")]


def unsupported_detail(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """Claims neutral: an entailed simple past event with a detail the premise does not mention."""
    hyp = _draft(draft)
    found = _premise(context, draft)
    if hyp is None or found is None or hyp[1] != ENTAILMENT:
        return []
    return [
        (_fields(extended, NEUTRAL, *found), f"{edit}: entailment -> neutral")
        for extended, edit in add_details(hyp[0], found[0])
    ]


def swap_number(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """Claims contradiction: in an entailed hypothesis, a number the premise states (exactly, not as a bound), or
    the one agent of "written by" and the like, swapped for one the premise does not mention."""
    hyp = _draft(draft)
    found = _premise(context, draft)
    if hyp is None or found is None or hyp[1] != ENTAILMENT:
        return []
    hypothesis, premise = hyp[0], found[0]
    words = _words(hypothesis)
    if "n't" in hypothesis.lower() or any(w in NEGATIONS for w in words):
        return []
    out: list[Rewrite] = []
    if not any(w in HEDGES for w in words) and not re.search(r"\d\s*[-–]\s*\d|\bto\s+\d", hypothesis):
        for m, value, as_word in _numbers(hypothesis):
            text = m.group(0)
            if not _mentions(premise, text):
                continue
            other = _other_number(value, text, as_word, premise, rng)
            if other is not None:
                swapped = hypothesis[: m.start()] + other + hypothesis[m.end() :]
                out.append(
                    (
                        _fields(swapped, CONTRADICTION, *found),
                        f"'{text}' -> '{other}', a number the premise contradicts",
                    )
                )
    for m in re.finditer(r"\b([a-z]+) by ([A-Z][a-z]+(?: [A-Z][a-z]+)?)\b", hypothesis):
        participle, name = m.groups()
        if participle not in SINGLE_AGENT or not _mentions(premise, name):
            continue
        pool = [f"{f} {s}" for f in FIRST_NAMES for s in SURNAMES] if " " in name else list(FIRST_NAMES)
        pool = [n for n in pool if not any(_mentions(premise, part) for part in n.split())]
        if pool:
            other = rng.choice(pool)
            swapped = hypothesis[: m.start(2)] + other + hypothesis[m.end(2) :]
            out.append(
                (_fields(swapped, CONTRADICTION, *found), f"'{name}' -> '{other}': {participle} by someone else")
            )
    return out


TEMPLATES: tuple[Template, ...] = (
    Template(
        "premise_sentence", premise_sentence, "A premise sentence, copied or with a modifier dropped: entailment."
    ),
    Template("premise_negation", premise_negation, "A premise sentence with its verb negated: contradiction."),
    Template("premise_detail", premise_detail, "A premise event with a detail it does not mention: neutral."),
    Template("negate_hypothesis", negate_hypothesis, "The hypothesis negated: entailment <-> contradiction."),
    Template("unsupported_detail", unsupported_detail, "An entailed event with an unsupported detail: neutral."),
    Template("swap_number", swap_number, "An entailed number or agent swapped for another: contradiction."),
)


def adversary() -> TemplateAdversary:
    return TemplateAdversary(
        "nli-templates",
        "nli",
        TEMPLATES,
        description="CheckList-style hypotheses with known labels, the premise unchanged: premise sentences copied, "
        "trimmed, negated or extended from the premise alone; a draft's hypothesis negated, extended with an "
        "unsupported detail, or with a number swapped.",
    )


@hookimpl
def register_adversaries(register):
    register(adversary())
