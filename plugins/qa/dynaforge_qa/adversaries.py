"""CheckList-style template adversary for the qa task: ``qa-templates``.

The passage is the task's context field, so a rewrite cannot add to it when the example has a stored context: the
templates rewrite the question instead and claim the draft's answer, the same span (text and start offset, which
stay true because the passage is untouched). When a draft carries its own passage (an example without a stored
context), a distractor sentence may be appended after the passage's end, which leaves every offset before it true.

From a draft (each claims the draft's answer span, unchanged):

- ``according_to``: the question behind a frame that points at the passage ("According to the passage, who ...?").
- ``wh_synonym``: the wh-phrase swapped for one that asks the same ("Which year" <-> "What year", "Who" -> "Which
  person", "When" -> "In what year" when the answer is a year).
- ``wh_fronting``: "Who was X?" -> "X was who?" (an echo question asking the same).
- ``distractor_clause``: a clause naming another entity of the answer's kind from the passage ("Although the
  passage also mentions 1861, when ...?"), which changes nothing the question asks.
- ``distractor_sentence`` (only when the draft carries its passage): the answer's sentence copied after the passage
  with the answer and an entity the question names both replaced by invented ones, so that it resembles the
  question's evidence but answers a question about someone or something else.

From the passage alone:

- ``passage_questions``: questions built on sentences of a few fixed shapes ("The X was founded in 1612." -> "In
  what year was the X founded?"), the answer's span found exactly at its offset.
"""

from __future__ import annotations

import random
import re
from typing import Any

from dynaforge.adversaries.templates import Rewrite, Template, TemplateAdversary
from dynaforge.hookspecs import hookimpl

MIN_QUESTION, MAX_QUESTION = 5, 200
MAX_PASSAGE = 6000


def wordset(text: str) -> frozenset[str]:
    """The words of ``text`` (a list written as prose)."""
    return frozenset(text.split())


# ---------------------------------------------------------------------------------------------- word lists

#: Words a question may open with that are lowercased when a frame comes before it.
QUESTION_OPENERS = wordset(
    "what who whom whose when where which why how in on at for from by to during after before since under with of "
    "is are was were did do does can could name"
)
AUXILIARIES = wordset("is are was were did do does has have had can could will would should")
FRAMES: tuple[str, ...] = ("According to the passage, {q}", "Based on the passage, {q}")
DISTRACTOR_FRAMES: tuple[str, ...] = (
    "Although the passage also mentions {d}, {q}",
    "The passage mentions {d}, but {q}",
)
#: Capitalised words that open sentences or name no entity; they are not offered as distractors.
NOT_NAMES = wordset(
    "The A An It Its In On At After Before By For From To During When While Although Unlike Today Since Because "
    "Work Traffic Volunteers Adults Critics Members Apprentices This These Those There Their His Her He She They"
)
#: Invented replacements for the distractor sentence: names for people and places, both unlikely in a passage.
INVENTED_FIRST: tuple[str, ...] = ("Orla", "Tamsin", "Bertil", "Ysolde", "Casimir", "Edda", "Florin", "Greer")
INVENTED_WORDS: tuple[str, ...] = ("Ardley", "Brenmoor", "Calloway", "Dunridge", "Elstow", "Fenwarden", "Garrowby")

#: Participles whose "by" names the one agent, with the verb's past tense for a "Who ...?" question.
AGENT_VERBS: dict[str, str] = {
    "written": "wrote",
    "composed": "composed",
    "designed": "designed",
    "directed": "directed",
    "conducted": "conducted",
    "invented": "invented",
    "described": "described",
    "discovered": "discovered",
}
#: Participles a year question may ask about ("In what year was the hall built?").
YEAR_VERBS = wordset("built founded formed opened established completed written published born closed")

# --------------------------------------------------------------------------------------------------- helpers

ABBREVIATIONS = wordset("Dr. Mr. Mrs. Ms. St. Prof. Jr. Sr. p.m. a.m. e.g. i.e. etc. vs. No. Mt.")
_BOUNDARY = re.compile(r"[.!?](?=\s+[\"'A-Z0-9])")
_YEAR = re.compile(r"(?<![\w,.])(1[0-9]{3}|20[0-9]{2})(?![\w,])")  # not "1840s", not "1,840"
_NUMBER = re.compile(r"(?<![\w,.])\d{1,3}(?:,\d{3})+(?![\w,])|(?<![\w,.])\d+(?![\w,]|\.\d)")
_NAME = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*\b")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of ``text``, not splitting after abbreviations or initials."""
    spans, start = [], 0
    for m in _BOUNDARY.finditer(text):
        words = text[start : m.end()].split()
        if words and (words[-1] in ABBREVIATIONS or re.fullmatch(r"[A-Z]\.", words[-1])):
            continue
        spans.append((start, m.end()))
        start = m.end()
    spans.append((start, len(text)))
    out = []
    for s, e in spans:  # trim the whitespace around each sentence, keeping true offsets
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            out.append((s, e))
    return out


def lower_opening(question: str) -> str | None:
    """The question made fit to follow a frame ("Who ..." -> "who ..."), or None when its first word may be a
    name."""
    first = question.split()[0]
    if first.lower() not in QUESTION_OPENERS:
        return None
    return question[0].lower() + question[1:]


def _kind(answer: str) -> str | None:
    if _YEAR.search(answer):
        return "year"
    if re.search(r"\d", answer):
        return "number"
    words = [w for w in answer.split() if w not in ("of", "the", "de", "des", "von", "van")]
    if words and all(w[0].isupper() for w in words) and words[0] not in NOT_NAMES:
        return "name"
    return None


def entities(passage: str, kind: str) -> list[str]:
    """The passage's entities of a kind, in order of first mention, without repeats."""
    if kind == "year":
        found = [m.group(0) for m in _YEAR.finditer(passage)]
    elif kind == "number":
        found = [m.group(0) for m in _NUMBER.finditer(passage) if not _YEAR.fullmatch(m.group(0))]
    else:
        found = []
        for m in _NAME.finditer(passage):
            words = m.group(0).split()
            while words and words[0] in NOT_NAMES:
                words = words[1:]
            if words:
                found.append(" ".join(words))
    return list(dict.fromkeys(found))


def _draft(draft: dict[str, Any] | None) -> tuple[str, dict[str, Any]] | None:
    if not draft or not isinstance(draft.get("question"), str) or not isinstance(draft.get("answer"), dict):
        return None
    answer = draft["answer"]
    if not isinstance(answer.get("text"), str) or not isinstance(answer.get("start"), int):
        return None
    question = draft["question"].strip()
    return (question, {"text": answer["text"], "start": answer["start"]}) if question else None


def _passage(context: dict[str, Any], draft: dict[str, Any] | None) -> tuple[str, bool] | None:
    """The passage, and whether the draft carries it (no stored context)."""
    if isinstance(context.get("passage"), str):
        return context["passage"], False
    if draft and isinstance(draft.get("passage"), str):
        return draft["passage"], True
    return None


def _fields(question: str, answer: dict[str, Any], passage: str, carried: bool) -> dict[str, Any]:
    fields: dict[str, Any] = {"question": question, "answer": dict(answer)}
    if carried:
        fields["passage"] = passage
    return fields


def _fits(question: str) -> bool:
    return MIN_QUESTION <= len(question) <= MAX_QUESTION


# ------------------------------------------------------------------------------------------------- templates


def according_to(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """Claims the draft's answer: the same question behind a frame that points at the passage."""
    found, where = _draft(draft), _passage(context, draft)
    if found is None or where is None:
        return []
    question, answer = found
    lowered = lower_opening(question)
    if lowered is None or question.lower().startswith(("according to", "based on")):
        return []
    framed = [frame.format(q=lowered) for frame in FRAMES]
    return [(_fields(q, answer, *where), "the same question, framed") for q in framed if _fits(q)]


#: "What year did ...", "In which year was ...": the word after the wh-word is a noun when a preposition comes
#: before or an auxiliary after it ("What stands ..." is left alone).
_WHICH_WHAT = re.compile(r"^((?:In|At|On|During|By|For|From|To) )?(Which|What|which|what) ([a-z]+)\b(?: ([a-z]+))?")


def wh_synonym(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """Claims the draft's answer: the wh-phrase swapped for one that asks the same thing."""
    found, where = _draft(draft), _passage(context, draft)
    if found is None or where is None:
        return []
    question, answer = found
    rewritten = None
    m = _WHICH_WHAT.match(question)
    if m and m.group(3) not in AUXILIARIES and (m.group(1) or m.group(4) in AUXILIARIES):
        wh = m.group(2)
        other = {"Which": "What", "What": "Which", "which": "what", "what": "which"}[wh]
        rewritten = question[: m.start(2)] + other + question[m.end(2) :]
        edit = f"'{wh} {m.group(3)}' -> '{other} {m.group(3)}'"
    elif re.match(r"^Who [a-z]", question):
        rewritten, edit = "Which person" + question[3:], "'Who' -> 'Which person'"
    elif re.match(r"^When (did|was|were|is|are|does|do) ", question) and re.fullmatch(r"\d{4}", answer["text"]):
        rewritten, edit = "In what year" + question[4:], "'When' -> 'In what year' (the answer is a year)"
    if rewritten is None or not _fits(rewritten):
        return []
    return [(_fields(rewritten, answer, *where), f"{edit}: the same question")]


_FRONTABLE = re.compile(r"^(Who|What) (is|was|are|were) ((?:the|a|an|its|his|her|their) [^?]+)\?$")


def wh_fronting(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """Claims the draft's answer: "Who was X?" asked as the echo question "X was who?"."""
    found, where = _draft(draft), _passage(context, draft)
    if found is None or where is None:
        return []
    question, answer = found
    m = _FRONTABLE.match(question)
    if m is None or re.search(r"\b(who|what|which|when|where|why|how)\b", m.group(3), re.IGNORECASE):
        return []
    subject = m.group(3)
    echoed = f"{subject[0].upper()}{subject[1:]} {m.group(2)} {m.group(1).lower()}?"
    return [(_fields(echoed, answer, *where), "the wh-word moved to the end: the same question")]


def distractor_clause(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """Claims the draft's answer: a clause naming another entity of the answer's kind, which the question does not
    ask about."""
    found, where = _draft(draft), _passage(context, draft)
    if found is None or where is None:
        return []
    question, answer = found
    lowered, kind = lower_opening(question), _kind(answer["text"])
    if lowered is None or kind is None:
        return []
    others = [
        e
        for e in entities(where[0], kind)
        if e not in answer["text"] and answer["text"] not in e and e.lower() not in question.lower()
    ]
    out: list[Rewrite] = []
    for frame, other in zip(DISTRACTOR_FRAMES, rng.sample(others, min(2, len(others))), strict=False):
        rewritten = frame.format(d=other, q=lowered)
        if _fits(rewritten):
            out.append((_fields(rewritten, answer, *where), f"a distracting mention of '{other}'"))
    return out


def _invented(original: str, kind: str, passage: str, rng: random.Random) -> str | None:
    """An invented stand-in for ``original`` of the same kind, which the passage does not hold."""
    if kind in ("year", "number"):
        m = _YEAR.search(original) if kind == "year" else _NUMBER.search(original)
        if m is None:
            return None
        value = int(m.group(0).replace(",", ""))
        options = [value + s for s in ((-9, -4, 6, 13) if kind == "year" else (3, 7, 11))]
        written = [f"{v:,}" if "," in m.group(0) else str(v) for v in options]
        written = [w for w in written if w not in passage]
        return original[: m.start()] + rng.choice(written) + original[m.end() :] if written else None
    words = original.split()
    if len(words) > 3:
        return None
    pool = [w for w in INVENTED_WORDS if w not in passage]
    firsts = [w for w in INVENTED_FIRST if w not in passage]
    if len(pool) < len(words) or not firsts:
        return None
    picked = rng.sample(pool, len(words))
    if len(words) >= 2:
        picked[0] = rng.choice(firsts)
    return " ".join(picked)


def distractor_sentence(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """Claims the draft's answer, for a draft that carries its passage: the answer's sentence copied after the
    passage with the answer and an entity the question names both invented anew, so that it resembles the evidence
    but is about something else; the answer's offset is before it and stays true."""
    found, where = _draft(draft), _passage(context, draft)
    if found is None or where is None or not where[1]:
        return []
    (question, answer), passage = found, where[0]
    start, text = answer["start"], answer["text"]
    kind = _kind(text)
    if kind is None or passage[start : start + len(text)] != text:
        return []
    span = next(((s, e) for s, e in sentence_spans(passage) if s <= start and start + len(text) <= e), None)
    if span is None:
        return []
    sentence = passage[span[0] : span[1]]
    local = start - span[0]
    # Entities of the sentence, outside the answer, that the question names too: the distractor renames them.
    anchors = []
    for m in list(_NAME.finditer(sentence)) + list(_NUMBER.finditer(sentence)):
        overlaps = m.start() < local + len(text) and local < m.end()
        words = m.group(0).split()
        while words and words[0] in NOT_NAMES:
            words = words[1:]
        name = " ".join(words)
        if not overlaps and name and re.search(rf"\b{re.escape(name)}\b", question):
            anchors.append((m.end() - len(name), name))
    if not anchors:
        return []
    edits = [(local, text, _invented(text, kind, passage, rng))]
    for position, anchor in anchors:
        edits.append((position, anchor, _invented(anchor, _kind(anchor) or "name", passage, rng)))
    if any(new is None for _, _, new in edits):
        return []
    distractor = sentence
    for position, old, new in sorted(edits, reverse=True):
        distractor = distractor[:position] + str(new) + distractor[position + len(old) :]
    joined = passage + ("" if passage[-1:].isspace() else " ") + distractor
    if len(joined) > MAX_PASSAGE or text in distractor:
        return []
    fields = {"passage": joined, "question": question, "answer": dict(answer)}
    renamed = ", ".join(f"'{old}' -> '{new}'" for _, old, new in edits)
    return [(fields, f"a distractor sentence appended after the passage ({renamed})")]


_YEAR_SENTENCE = re.compile(r"^(The [^,;:()]+?) (was|were) ([a-z]+) in (1[0-9]{3}|20[0-9]{2})\b")
_AGENT_SENTENCE = re.compile(r"^(The [^,;:()]+?) (was|were) ([a-z]+) by ([A-Z][a-z]+(?: [A-Z][a-z]+){0,2})\b")
_COUNT_SENTENCE = re.compile(r"^(The [^,;:()]+?) (has|had) (\d{1,3}(?:,\d{3})+|\d+) ([a-z]+s)\b")


def passage_questions(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """From the passage alone: questions on sentences of fixed shapes, each claiming the span it was built on."""
    if draft is not None:
        return []
    where = _passage(context, None)
    if where is None:
        return []
    passage = where[0]
    out: list[Rewrite] = []
    for s, e in sentence_spans(passage):
        sentence = passage[s:e]
        subject = None
        if (m := _YEAR_SENTENCE.match(sentence)) and m.group(3) in YEAR_VERBS:
            subject, group = m.group(1), 4
            question = f"In what year {m.group(2)} {subject[0].lower()}{subject[1:]} {m.group(3)}?"
        elif (m := _AGENT_SENTENCE.match(sentence)) and m.group(3) in AGENT_VERBS:
            subject, group = m.group(1), 4
            question = f"Who {AGENT_VERBS[m.group(3)]} {subject[0].lower()}{subject[1:]}?"
        elif m := _COUNT_SENTENCE.match(sentence):
            subject, group = m.group(1), 3
            verb = "does" if m.group(2) == "has" else "did"
            question = f"How many {m.group(4)} {verb} {subject[0].lower()}{subject[1:]} have?"
        if subject is None or m is None or not _fits(question):
            continue
        answer = {"text": m.group(group), "start": s + m.start(group)}
        out.append((_fields(question, answer, passage, False), f"a question on the sentence '{sentence[:60]}'"))
    return out


TEMPLATES: tuple[Template, ...] = (
    Template("according_to", according_to, "The question behind 'According to the passage': same answer."),
    Template("wh_synonym", wh_synonym, "A wh-phrase that asks the same ('Which year' for 'What year'): same answer."),
    Template("wh_fronting", wh_fronting, "'Who was X?' as 'X was who?': same answer."),
    Template("distractor_clause", distractor_clause, "A clause naming another entity of the answer's kind."),
    Template("distractor_sentence", distractor_sentence, "A misleading sentence after a passage the draft carries."),
    Template("passage_questions", passage_questions, "Questions on fixed sentence shapes, from the passage alone."),
)


def adversary() -> TemplateAdversary:
    return TemplateAdversary(
        "qa-templates",
        "qa",
        TEMPLATES,
        description="CheckList-style question rewrites that keep the answer span: framed, wh-phrase swapped or "
        "moved, with a distracting mention; a distractor sentence after a passage the draft carries; questions on "
        "fixed sentence shapes from the passage alone.",
    )


@hookimpl
def register_adversaries(register):
    register(adversary())
