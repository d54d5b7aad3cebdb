"""CheckList-style template adversary for the hate speech task: ``hatespeech-templates``.

The task has no context: every rewrite is a whole example (statement, label, and the optional ``target_group`` and
``type``, where ``type`` is ``none`` exactly when the label is ``not_hateful``). The templates write no hateful text
of their own: they turn a draft into a not-hateful variant, keep a draft's gold, or write not-hateful statements
from fixed frames.

- ``counter_speech``: a hateful draft quoted and condemned ("Someone posted '...'; that is hatred"): claims
  not_hateful (quoting hate to criticise it is not hateful, as the instructions say), about the same group.
- ``identity_swap``: the protected group a draft names swapped for another of its kind ("Muslims" -> "Jews"):
  claims the draft's gold, unchanged (an attack on one protected group is as hateful as on another), with the
  target group following the swap. A not-hateful draft is swapped only when its target group is the group named.
- ``support_frames``: from nothing (no draft): statements that mention a group to defend it or to deny hating it
  ("I have never had a problem with immigrants, and I never will."): claim not_hateful.
- ``harsh_about_things``: strong words and negated praise aimed at things, not people ("This parking app is absolute
  garbage."): claim not_hateful; written afresh without a draft, or appended to a not-hateful draft that names no
  group.
"""

from __future__ import annotations

import random
import re
from typing import Any

from dynaforge.adversaries.templates import Rewrite, Template, TemplateAdversary
from dynaforge.hookspecs import hookimpl

HATEFUL, NOT_HATEFUL = "hateful", "not_hateful"
MAX_STATEMENT = 500

#: Ways a statement names a protected group: (term, ``target_group`` code, kind). A swap stays within a kind
#: (religion for religion, ...), so that what the draft says still reads as said of such a group; women and men are
#: swapped only in statements without gendered pronouns ("women like her" would not survive the swap).
GROUP_TERMS: tuple[tuple[str, str, str], ...] = (
    ("women", "women", "gender"),
    ("men", "men", "gender"),
    ("Muslims", "muslims", "religion"),
    ("Jews", "jews", "religion"),
    ("Christians", "christians", "religion"),
    ("immigrants", "immigrants", "origin"),
    ("refugees", "immigrants", "origin"),
    ("Black people", "black_people", "race"),
    ("Asian people", "asian_people", "race"),
    ("gay people", "lgbtq_people", "sexuality"),
    ("trans people", "lgbtq_people", "sexuality"),
)
GENDERED_PRONOUNS = frozenset(["she", "her", "hers", "herself", "he", "him", "his", "himself"])

#: Frames that quote a hateful statement in order to condemn it.
COUNTER_FRAMES: tuple[str, ...] = (
    'Someone posted "{q}" in our group chat, and I called it out: that is hatred, not an opinion.',
    'I keep seeing comments like "{q}" and nobody deserves to be talked about that way.',
    'Reporting this so the moderators see it: "{q}" Hate like this has no place here.',
)
#: Not-hateful statements about a group: support, and denials of hating it.
SUPPORT_FRAMES: tuple[str, ...] = (
    "I have never had a problem with {group}, and I never will.",
    "{Group} deserve the same respect as everyone else.",
    "If you think {group} are the problem, you have not met my neighbours.",
    "We should do more to protect {group} from abuse online.",
)
#: Strong words and negated praise aimed at things; no person, let alone a group, is their target.
THINGS: tuple[str, ...] = (
    "parking app",
    "printer",
    "bus timetable",
    "phone update",
    "vending machine",
    "ticket website",
    "tax form",
)
HARSH_FRAMES: tuple[str, ...] = (
    "This {thing} is absolute garbage and I hate it.",
    "The new {thing} is not good, it is a disgusting waste of money.",
    "Whoever approved this {thing} should be ashamed, it is useless.",
    "I despise this {thing} with every fibre of my being.",
)
HARSH_ADDITIONS: tuple[str, ...] = ("Honestly, this {thing} is absolute garbage.", "Also, this {thing} is useless.")


def _term_pattern(term: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(term)}\b", re.IGNORECASE)


def groups_named(statement: str) -> list[tuple[str, str, str]]:
    """The (term, group, kind) entries of ``GROUP_TERMS`` that ``statement`` names, in the order of the list."""
    return [entry for entry in GROUP_TERMS if _term_pattern(entry[0]).search(statement)]


def _draft(draft: dict[str, Any] | None) -> tuple[str, str] | None:
    if not draft or draft.get("label") not in (HATEFUL, NOT_HATEFUL) or not isinstance(draft.get("statement"), str):
        return None
    statement = draft["statement"].strip()
    return (statement, draft["label"]) if statement else None


def _example(statement: str, label: str, target_group: str | None, kind: str | None) -> dict[str, Any]:
    fields: dict[str, Any] = {"statement": statement, "label": label}
    if target_group is not None:
        fields["target_group"] = target_group
    if kind is not None:
        fields["type"] = kind
    return fields


def _replace_term(statement: str, term: str, replacement: str) -> str:
    """``statement`` with every mention of ``term`` replaced, capitalised only where a sentence starts."""

    def cased(m: re.Match[str]) -> str:
        before = statement[: m.start()].rstrip()
        starts = not before or before[-1] in ".!?:\"'"
        return replacement[:1].upper() + replacement[1:] if starts else replacement

    return _term_pattern(term).sub(cased, statement)


# ------------------------------------------------------------------------------------------------- templates


def counter_speech(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """Claims not_hateful: the hateful draft quoted and condemned, about the same group, of type none."""
    found = _draft(draft)
    if found is None or found[1] != HATEFUL:
        return []
    quoted = found[0].replace('"', "'")
    group = draft.get("target_group") if draft else None
    out: list[Rewrite] = []
    for frame in COUNTER_FRAMES:
        statement = frame.format(q=quoted)
        if len(statement) <= MAX_STATEMENT:
            out.append(
                (_example(statement, NOT_HATEFUL, group, "none"), "the hateful draft quoted in order to condemn it")
            )
    return out


def identity_swap(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """Claims the draft's gold: one protected group it names swapped for another, the target group following."""
    found = _draft(draft)
    if found is None or draft is None:
        return []
    statement, label = found
    gendered_text = any(w in GENDERED_PRONOUNS for w in re.findall(r"[a-z]+", statement.lower()))
    named = groups_named(statement)
    out: list[Rewrite] = []
    for term, group, kind in named:
        if gendered_text and kind == "gender":
            continue
        if label == NOT_HATEFUL and draft.get("target_group") != group:
            # A not-hateful draft is swapped only where its author named the group as the one it is about: a
            # careless "not hateful" generalisation ("men are ...") is not carried over to another group.
            continue
        options = [t for t, g, k in GROUP_TERMS if k == kind and t != term and all(t != n for n, _, _ in named)]
        for new_term in rng.sample(options, min(2, len(options))):
            new_group = next(g for t, g, _ in GROUP_TERMS if t == new_term)
            swapped = _replace_term(statement, term, new_term)
            target = draft.get("target_group")
            target = new_group if target == group else target
            fields = _example(swapped, label, target, draft.get("type"))
            out.append((fields, f"'{term}' -> '{new_term}': another {kind} group, the same {label} gold"))
    return out


def support_frames(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """From nothing: statements that defend a group or deny hating it, claiming not_hateful."""
    if draft is not None:
        return []
    out: list[Rewrite] = []
    for frame in SUPPORT_FRAMES:
        term, group, _ = rng.choice(GROUP_TERMS)
        statement = frame.format(group=term, Group=term[:1].upper() + term[1:])
        out.append((_example(statement, NOT_HATEFUL, group, "none"), f"support for {term}: not hateful"))
    return out


def harsh_about_things(context: dict[str, Any], draft: dict[str, Any] | None, rng: random.Random) -> list[Rewrite]:
    """Claims not_hateful: strong words aimed at a thing, written afresh or added to a not-hateful draft that names
    no group (so that nobody could read them as aimed at one)."""
    if draft is None:
        return [
            (
                _example(frame.format(thing=rng.choice(THINGS)), NOT_HATEFUL, None, "none"),
                "strong words at a thing, no protected target",
            )
            for frame in HARSH_FRAMES
        ]
    found = _draft(draft)
    if found is None or found[1] != NOT_HATEFUL or groups_named(found[0]):
        return []
    statement = found[0]
    if statement[-1:] not in ".!?":
        statement += "."
    out: list[Rewrite] = []
    for addition in HARSH_ADDITIONS:
        extended = f"{statement} {addition.format(thing=rng.choice(THINGS))}"
        if len(extended) <= MAX_STATEMENT:
            fields = _example(extended, NOT_HATEFUL, draft.get("target_group"), "none")
            out.append((fields, "strong words at a thing added: still no protected target"))
    return out


TEMPLATES: tuple[Template, ...] = (
    Template("counter_speech", counter_speech, "A hateful draft quoted and condemned: not hateful."),
    Template("identity_swap", identity_swap, "Another protected group named: the gold is unchanged."),
    Template("support_frames", support_frames, "Statements that defend a group or deny hating it: not hateful."),
    Template("harsh_about_things", harsh_about_things, "Strong words aimed at things, not groups: not hateful."),
)


def adversary() -> TemplateAdversary:
    return TemplateAdversary(
        "hatespeech-templates",
        "hatespeech",
        TEMPLATES,
        description="CheckList-style hate speech rewrites with known gold that write no hate of their own: counter-"
        "speech quoting a hateful draft, identity-term swaps that keep the gold, support for groups, and strong "
        "words aimed at things.",
    )


@hookimpl
def register_adversaries(register):
    register(adversary())
