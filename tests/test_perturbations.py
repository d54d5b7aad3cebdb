"""The robustness and fairness perturbations, their word lists, and the variants built from them.

Sentences here are written for the test. Exact outputs are pinned where a perturbation is deterministic or where a
seed makes one output meaningful; elsewhere the test checks properties over many seeds.
"""

from __future__ import annotations

import random
import re

import pytest

from dynaforge.defaults.perturbations import (
    CONTRACTIONS,
    DEFAULT_PERTURBATIONS,
    FIRST_NAMES,
    GENDERS,
    KINDS,
    NAME_GROUPS,
    contractions,
    name_origin_swap,
    name_swap,
    whitespace,
)
from dynaforge.evaluation.variants import (
    Variant,
    VariantStats,
    build_variants,
    iter_variants,
    resolve_perturbations,
    variant_seed,
)
from dynaforge.plugins import Plugins
from dynaforge.tasks.base import Perturbation
from dynaforge.tasks.fields import Role

PLUGINS = Plugins()
REGISTRY = PLUGINS.registry
NAME_OF = {name: (group, gender) for group, by in NAME_GROUPS.items() for gender, names in by.items() for name in names}


# --------------------------------------------------------------------------- kinds


def test_every_registered_perturbation_is_labelled_robustness_or_fairness():
    assert KINDS == ("robustness", "fairness")
    for name, perturbation in REGISTRY.perturbations.items():
        assert perturbation.kind in KINDS, name
        assert perturbation.description, name
    kinds = {p.name: p.kind for p in DEFAULT_PERTURBATIONS}
    assert {n for n, k in kinds.items() if k == "fairness"} == {"gender_swap", "name_swap", "name_origin_swap"}
    assert {n for n, k in kinds.items() if k == "robustness"} == {
        "typo",
        "lowercase",
        "uppercase",
        "punctuation",
        "contractions",
        "whitespace",
    }
    assert Perturbation("x", lambda t, r: t).kind == "robustness"  # the default


@pytest.mark.parametrize("code", ["nli", "qa", "sentiment", "hatespeech"])
def test_the_four_tasks_declare_the_new_perturbations(code):
    task = REGISTRY.tasks[code]
    assert {"contractions", "whitespace", "name_origin_swap"} <= set(task.perturbations)
    assert set(task.perturbations) <= set(REGISTRY.perturbations)


# --------------------------------------------------------------------------- contractions


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "I don't think it is fair, and I am sure you are right.",
            "I do not think it's fair, and I'm sure you're right.",
        ),
        (
            "In January you cannot take the night ferry on a Sunday.",
            "In January you can't take the night ferry on a Sunday.",
        ),
        ("What is the name of the river?", "What's the name of the river?"),
        ("DO NOT enter. I CAN'T.", "DON'T enter. I CANNOT."),
        ("Don't worry, they'll wait.", "Do not worry, they will wait."),
        ("i'm here and i don't care", "i am here and i do not care"),
        ("I've seen what they're doing; let's go.", "I have seen what they are doing; let us go."),
        ("It\u2019s late and I\u2019m sure it is not over.", "It\u2019s late and I am sure it\u2019s not over."),
        ("He doesn't. The man didn't go.", "He does not. The man did not go."),
    ],
)
def test_contractions_exact(text, expected):
    assert contractions(text, random.Random(0)) == expected
    assert contractions(text, random.Random(99)) == expected  # deterministic: the seed is not used


@pytest.mark.parametrize(
    "text",
    [
        "Yes, I am. I know who you are.",  # a contraction cannot end a clause
        "Don't you know? Isn't it late?",  # "Do not you know?" is wrong
        "Why didn't the man go?",
        "It's been a long day.",  # 's is "has" here: ambiguous contractions are never expanded
        "Heidi's sister left.",  # a possessive 's is untouched
        "The donut isn'tt a word, and idon't neither.",  # whole words only
        "Nothing to change here.",
    ],
)
def test_contractions_left_alone_where_a_swap_would_read_wrong(text):
    assert contractions(text, random.Random(0)) == text


def test_contractions_go_both_ways():
    for expanded, contracted, how in CONTRACTIONS:
        if how == "both":
            assert contractions(f"So {expanded} go.", random.Random(0)) == f"So {contracted} go."
            assert contractions(f"So {contracted} go.", random.Random(0)) == f"So {expanded} go."


def _case_pattern(word: str) -> str:
    letters = [c for c in word if c.isalpha()]
    if len(letters) > 1 and all(c.isupper() for c in letters):
        return "upper"
    return "capital" if letters[0].isupper() else "lower"


@pytest.mark.parametrize("form", ["lower", "capital", "upper"])
def test_contractions_keep_the_case_pattern(form):
    for expanded, contracted, how in CONTRACTIONS:
        for source in ([expanded] if how != "expand" else []) + ([contracted] if how != "contract" else []):
            if form == "upper":
                phrase = source.upper()
            elif form == "capital":
                phrase = source[:1].upper() + source[1:]
            else:
                phrase = source.lower()
            out = contractions(f"{phrase} go", random.Random(0))
            assert out != f"{phrase} go", phrase
            changed = out[: -len(" go")]
            assert out.endswith(" go")
            assert _case_pattern(changed) == _case_pattern(phrase), (phrase, out)


def test_contractions_list_is_small_and_unambiguous():
    assert 20 <= len(CONTRACTIONS) <= 60
    expanded = [e.lower() for e, _, how in CONTRACTIONS if how != "expand"]
    contracted = [c.lower() for _, c, how in CONTRACTIONS if how != "contract"]
    assert len(expanded) == len(set(expanded)) and len(contracted) == len(set(contracted))
    assert all(how in ("both", "contract", "expand") for _, _, how in CONTRACTIONS)
    assert not any(c.endswith("'d") for _, c, _ in CONTRACTIONS)  # had or would: left out


# --------------------------------------------------------------------------- whitespace

SENTENCE = "We left at nine, walked along the river for an hour and then took the last bus home."


def test_whitespace_exact_for_a_seed():
    assert whitespace(SENTENCE, random.Random(1)) == (
        "We left at\tnine, walked  along the river for an hour and then took the last bus home."
    )


@pytest.mark.parametrize("seed", range(40))
def test_whitespace_changes_only_whitespace_between_words(seed):
    text = "  " + SENTENCE + " \t"
    out = whitespace(text, random.Random(seed))
    assert out != text
    assert re.sub(r"\s", "", out) == re.sub(r"\s", "", text)  # every other character kept, in order
    assert out[:2] == "  " and out.endswith(SENTENCE[-5:] + " \t")  # leading and trailing whitespace untouched
    # each word is intact, or two neighbours ran together: never a character inside a word changed or moved
    words, joined = text.split(), out.split()
    i = 0
    for token in joined:
        merged = words[i]
        i += 1
        while merged != token:
            assert token.startswith(merged)
            merged += words[i]
            i += 1
    assert i == len(words)
    assert whitespace(text, random.Random(seed)) == out


def test_whitespace_leaves_single_words_alone_and_varies_with_the_seed():
    assert whitespace("Hello!", random.Random(0)) == "Hello!"
    assert whitespace("  padded  ", random.Random(0)) == "  padded  "
    assert whitespace("", random.Random(0)) == ""
    assert len({whitespace(SENTENCE, random.Random(s)) for s in range(30)}) > 10


# --------------------------------------------------------------------------- names


def test_name_groups_are_small_balanced_and_distinct():
    assert len(NAME_GROUPS) >= 6
    seen = []
    for group, by_gender in NAME_GROUPS.items():
        assert set(by_gender) == set(GENDERS), group
        for names in by_gender.values():
            assert 4 <= len(names) <= 12
            for name in names:
                assert re.fullmatch(r"[A-Z][a-z]+", name), name
            seen.extend(n.lower() for n in names)
    assert len(seen) == len(set(seen)), "a name belongs to one group and one gender"
    assert {g: set(n) for g, n in FIRST_NAMES.items()} == {
        gender: {n for by in NAME_GROUPS.values() for n in by[gender]} for gender in GENDERS
    }
    # no name is also a contraction word or a gendered word that another perturbation changes
    words = {w.lower() for e, c, _ in CONTRACTIONS for w in re.findall(r"[A-Za-z]+", e + " " + c)}
    assert not words & set(seen)


def test_name_origin_swap_exact_for_a_seed():
    text = "Emma met Omar and James at Keisha's cafe; Emma paid."
    assert name_origin_swap(text, random.Random(5)) == "Agnieszka met Carlos and Wei at Adaeze's cafe; Agnieszka paid."


@pytest.mark.parametrize("seed", range(30))
def test_name_origin_swap_keeps_gender_and_changes_group(seed):
    text = "Emma met Omar and James at Keisha's cafe; Emma paid, and PRIYA waved."
    out = name_origin_swap(text, random.Random(seed))
    before, after = re.findall(r"[A-Za-z']+|[^A-Za-z']+", text), re.findall(r"[A-Za-z']+|[^A-Za-z']+", out)
    assert len(before) == len(after)
    mapping = {}
    for a, b in zip(before, after, strict=False):
        a_name, b_name = a.split("'")[0], b.split("'")[0]
        if a_name.capitalize() in NAME_OF:
            new = b_name.capitalize()
            assert new in NAME_OF
            (g1, s1), (g2, s2) = NAME_OF[a_name.capitalize()], NAME_OF[new]
            assert s1 == s2 and g1 != g2, (a, b)
            assert (a_name.isupper(), a_name[:1].isupper()) == (b_name.isupper(), b_name[:1].isupper())
            assert mapping.setdefault(a_name.lower(), new) == new  # the same name, the same replacement
        else:
            assert a == b
    assert len(set(mapping.values())) == len(mapping)  # different people stay different


def test_names_swapped_only_at_word_boundaries():
    text = "Emmanuel, emma, Emma2, Jamesy and Omar_1 stay; Emma goes."
    for swap in (name_swap, name_origin_swap):
        out = swap(text, random.Random(0))
        assert out.startswith("Emmanuel, emma, Emma2, Jamesy and Omar_1 stay; ")
        assert not out.endswith("Emma goes.")
        assert swap("No names at all here.", random.Random(0)) == "No names at all here."


@pytest.mark.parametrize("seed", range(20))
def test_name_swap_changes_gender_and_keeps_group(seed):
    out = name_swap("Sofia told Kwame that Mei would come.", random.Random(seed))
    new = re.findall(r"[A-Z][a-z]+", out)
    for old, name in zip(("Sofia", "Kwame", "Mei"), new, strict=False):
        assert NAME_OF[name][0] == NAME_OF[old][0] and NAME_OF[name][1] != NAME_OF[old][1]


# --------------------------------------------------------------------------- variants

NLI = REGISTRY.tasks["nli"]
QA = REGISTRY.tasks["qa"]
EXAMPLES = [
    {
        "id": 1,
        "fields": {
            "premise": "Emma's shop is closed on Sundays.",
            "hypothesis": "Emma does not open the shop on a Sunday.",
            "label": "entailment",
        },
    },
    {
        "id": 2,
        "fields": {
            "premise": "The ferry leaves at noon.",
            "hypothesis": "The ferry leaves at noon",
            "label": "entailment",
        },
    },
    {"id": 3, "fields": {"premise": "It rained.", "hypothesis": "Dry.", "label": "contradiction"}},
]


def _key(variants):
    return [(v.original_id, v.perturbation, v.kind, v.fields, v.changed, v.seed) for v in variants]


def test_variants_are_deterministic_and_linked_to_their_originals():
    variants = build_variants(NLI, EXAMPLES, seed=7, registry=REGISTRY)
    assert _key(variants) == _key(build_variants(NLI, EXAMPLES, seed=7, registry=REGISTRY))
    assert _key(variants) != _key(build_variants(NLI, EXAMPLES, seed=8, registry=REGISTRY))
    originals = {e["id"]: e["fields"] for e in EXAMPLES}
    for v in variants:
        assert isinstance(v, Variant)
        assert v.perturbation in NLI.perturbations
        assert v.kind == REGISTRY.perturbations[v.perturbation].kind
        original = originals[v.original_id]
        assert set(v.fields) == set(original)
        # robustness perturbations edit the input alone; the fairness swaps the premise and the hypothesis alike
        scope = NLI.field_names(Role.INPUT) + (NLI.field_names(Role.CONTEXT) if v.kind == "fairness" else [])
        assert v.changed and set(v.changed) <= set(scope)
        assert v.gold == "kept"
        assert all(v.fields[n] != original[n] for n in v.changed)
        assert all(v.fields[n] == original[n] for n in original if n not in v.changed)
        assert v.seed == variant_seed(7, v.original_id, v.perturbation)
        assert v.id == f"{v.original_id}~{v.perturbation}"
        NLI.validate_example(v.fields, None)
    by_pair = {(v.original_id, v.perturbation): v for v in variants}
    assert by_pair[(1, "contractions")].fields["hypothesis"] == "Emma doesn't open the shop on a Sunday."
    assert by_pair[(1, "name_origin_swap")].kind == "fairness"
    assert by_pair[(1, "whitespace")].kind == "robustness"


def test_unchanged_examples_produce_no_variant():
    stats = VariantStats()
    variants = build_variants(NLI, EXAMPLES, seed=7, registry=REGISTRY, stats=stats)
    pairs = {(v.original_id, v.perturbation) for v in variants}
    assert (2, "punctuation") in pairs  # the hypothesis had no full stop
    assert (2, "name_swap") not in pairs and (2, "gender_swap") not in pairs and (2, "contractions") not in pairs
    assert (3, "whitespace") not in pairs and (3, "typo") not in pairs  # one short word
    assert (1, "name_swap") in pairs and (1, "name_origin_swap") in pairs
    assert stats.examples == 3 and stats.variants == len(variants)
    assert stats.variants + stats.skipped_unchanged + stats.skipped_invalid == 3 * len(NLI.perturbations)


def test_variants_do_not_depend_on_the_order_of_perturbations_or_examples():
    names = list(NLI.perturbations)
    forward = build_variants(NLI, EXAMPLES, seed="eval-1", perturbations=names, registry=REGISTRY)
    backward = build_variants(NLI, EXAMPLES, seed="eval-1", perturbations=names[::-1] + names[:2], registry=REGISTRY)
    assert _key(forward) == _key(backward)
    subset = build_variants(NLI, EXAMPLES, seed="eval-1", perturbations=["whitespace", "typo"], registry=REGISTRY)
    assert _key(subset) == _key([v for v in forward if v.perturbation in ("whitespace", "typo")])
    shuffled = build_variants(NLI, EXAMPLES[::-1], seed="eval-1", perturbations=names, registry=REGISTRY)
    assert sorted(_key(shuffled), key=repr) == sorted(_key(forward), key=repr)
    assert [v.perturbation for v in forward if v.original_id == 1] == sorted(
        v.perturbation for v in forward if v.original_id == 1
    )


def test_variants_stream_from_any_iterable_and_accept_every_example_shape():
    def endless():
        i = 0
        while True:
            i += 1
            yield (i, {"premise": "A.", "hypothesis": f"Omar is not here {i} times", "label": "neutral"})

    stream = iter_variants(NLI, endless(), seed=1, perturbations=["name_origin_swap"], registry=REGISTRY)
    first = next(stream)
    assert first.original_id == 1 and "Omar" not in first.fields["hypothesis"]

    class Row:
        id = 1
        fields = EXAMPLES[0]["fields"]

    from_row = build_variants(NLI, [Row()], seed=3, registry=REGISTRY)
    from_dict = build_variants(NLI, EXAMPLES[:1], seed=3, registry=REGISTRY)
    from_pair = build_variants(NLI, [(1, EXAMPLES[0]["fields"])], seed=3, registry=REGISTRY)
    assert _key(from_row) == _key(from_dict) == _key(from_pair)
    # names resolve against the core defaults without a registry
    assert _key(build_variants(NLI, EXAMPLES[:1], seed=3)) == _key(from_dict)
    with pytest.raises(TypeError):
        build_variants(NLI, [{"fields": {}}], seed=3)
    with pytest.raises(KeyError):
        resolve_perturbations(NLI, ["no-such-perturbation"], REGISTRY)


def test_variants_skip_what_breaks_the_field_and_keep_qa_spans_true():
    grow = Perturbation("grow", lambda text, rng: text + " more" * 1000, "robustness", "Too long.")
    stats = VariantStats()
    assert build_variants(NLI, EXAMPLES, seed=0, perturbations=[grow], stats=stats) == []
    assert stats.skipped_invalid == 3
    for values in QA.sample_examples:
        for v in build_variants(QA, [("s", values)], seed=11, registry=REGISTRY):
            assert v.changed == ("question",)
            assert v.fields["passage"] == values["passage"] and v.fields["answer"] == values["answer"]
            context, example = QA.split_fields(v.fields)
            QA.validate_example(example, context)
