"""Near-duplicate examples: MinHash sketches checked against exact Jaccard similarity and datasketch's MinHash, and
the flag an author meets before a near-copy counts; services and GraphQL, on SQLite and PostgreSQL."""

from __future__ import annotations

import random

import pytest
from datasketch import MinHash
from sqlalchemy import func, select
from support import make_user, register_user

from dynaforge.api.node import parse_id
from dynaforge.db.models import Context, Example, ExampleSketch
from dynaforge.errors import InvalidInput, NearDuplicate
from dynaforge.services import examples, tasks
from dynaforge.services import near_duplicates as near
from dynaforge.services.actor import Actor

WORDS = (
    "river",
    "stone",
    "lantern",
    "quiet",
    "market",
    "bright",
    "window",
    "garden",
    "letter",
    "morning",
    "candle",
    "bridge",
    "autumn",
    "harbor",
    "meadow",
    "silver",
    "thunder",
    "orchard",
    "velvet",
    "pepper",
    "compass",
    "island",
    "mirror",
    "basket",
    "feather",
    "canyon",
)


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _jaccard(a: str, b: str) -> float:
    first, second = near.shingles(a), near.shingles(b)
    return len(first & second) / len(first | second)


def test_shingles_ignore_case_spacing_and_punctuation():
    assert near.shingles("Good,  GOOD day!") == near.shingles("good good day")
    assert near.shingles("ok") == {"ok"} and near.shingles("...") == set()
    assert near.sketch(["...", ""]) == []


def test_short_texts_are_compared_exactly():
    # Under SKETCH_SIZE distinct shingles the sketch holds them all: the estimate is the Jaccard similarity itself.
    a, b = "the film was a quiet delight", "the film was a quiet disaster"
    assert len(near.shingles(a) | near.shingles(b)) < near.SKETCH_SIZE
    assert near.similarity(near.sketch([a]), near.sketch([b])) == pytest.approx(_jaccard(a, b))
    assert near.similarity(near.sketch([a]), near.sketch([a.upper() + "!"])) == 1.0


def test_long_texts_agree_with_exact_jaccard_and_datasketch():
    rng = random.Random(7)
    errors_ours, errors_theirs = [], []
    for _ in range(40):
        base = _text(rng, 60)
        words = base.split()
        for i in rng.sample(range(len(words)), rng.randint(1, 30)):  # from a few words changed to half of them
            words[i] = rng.choice(WORDS)
        other = " ".join(words)
        exact = _jaccard(base, other)
        ours = near.similarity(near.sketch([base]), near.sketch([other]))
        theirs = []
        for text in (base, other):
            m = MinHash(num_perm=256, seed=1)
            m.update_batch([s.encode() for s in near.shingles(text)])
            theirs.append(m)
        errors_ours.append(abs(ours - exact))
        errors_theirs.append(abs(theirs[0].jaccard(theirs[1]) - exact))
    # A sketch of 64 values estimates within a few hundredths on average (the standard error is at most 0.0625);
    # datasketch's 256 permutations do a little better. Both are estimates of the same figure.
    assert sum(errors_ours) / len(errors_ours) < 0.05 and max(errors_ours) < 0.2
    assert sum(errors_theirs) / len(errors_theirs) < 0.05


# --------------------------------------------------------------------------- the flag, on a task


def _fooling(text: str) -> dict:
    """The toy model says 'good' when the text has the word: labelled 'bad', such a text fools it."""
    assert "good" in text
    return {"text": text, "label": "bad"}


@pytest.fixture
async def people(platform):
    actors = {n: await make_user(platform, f"user_{n}") for n in ("author", "other", "owner")}
    await tasks.grant_ownership(platform, Actor.system(), "toy", actors["owner"].user_id)
    await tasks.update_settings(platform, actors["owner"], "toy", {"near_duplicate_threshold": 0.7})
    return actors


FIRST = "a good walk by the river in the warm morning light"
COPY = "A good walk by the river, in the warm morning light!"
CLOSE = "a good walk by the river in the warm evening light"


async def test_a_near_copy_is_flagged_before_it_counts(platform, people):
    first = (await examples.submit(platform, people["author"], task_code="toy", fields=_fooling(FIRST))).example
    async with platform.db.session() as s:
        assert await s.scalar(select(func.count()).select_from(ExampleSketch)) == len(near.sketch([FIRST]))
        before = await s.scalar(select(func.count()).select_from(Example))

    with pytest.raises(NearDuplicate) as caught:
        await examples.submit(platform, people["author"], task_code="toy", fields=_fooling(COPY))
    assert caught.value.similarity == 1.0 and caught.value.example_id == first.id  # your own: named
    assert f"your example {first.id}" in caught.value.message
    with pytest.raises(NearDuplicate) as caught:
        await examples.submit(platform, people["other"], task_code="toy", fields=_fooling(CLOSE))
    assert 0.7 <= caught.value.similarity < 1.0 and caught.value.example_id is None  # someone else's: not named
    async with platform.db.session() as s:
        assert await s.scalar(select(func.count()).select_from(Example)) == before  # nothing stored

    # Sent again, allowing it: stored, with the earlier example and the similarity beside it.
    allowed = await examples.submit(
        platform, people["other"], task_code="toy", fields=_fooling(CLOSE), allow_near_duplicate=True
    )
    assert allowed.example.near_duplicate_of == first.id and allowed.example.near_duplicate_similarity >= 0.7
    # An unrelated text, and a near-copy that does not fool the model, are not flagged.
    await examples.submit(platform, people["author"], task_code="toy", fields=_fooling("good soup on a cold day"))
    plain = await examples.submit(platform, people["author"], task_code="toy", fields={"text": FIRST, "label": "good"})
    assert plain.example.fooled is False and plain.example.near_duplicate_of is None

    round_ = await tasks.get_round(platform, first.task_id)
    found = await near.owner_clusters(platform, people["owner"], round_)
    assert [(c.example_ids, round(c.similarity, 4)) for c in found] == [
        ([first.id, allowed.example.id], round(allowed.example.near_duplicate_similarity, 4))
    ]
    assert await near.owner_clusters(platform, people["other"], round_) is None


async def test_contexts_retraction_and_the_setting(platform, people):
    async with platform.db.session() as s:
        contexts = [c.id for c in await s.scalars(select(Context).order_by(Context.id))][:2]
    on_first = await examples.submit(
        platform, people["author"], task_code="toy", fields=_fooling(FIRST), context_id=contexts[0]
    )
    # The same text on another context is another example; on the same context it is a copy.
    await examples.submit(platform, people["author"], task_code="toy", fields=_fooling(FIRST), context_id=contexts[1])
    with pytest.raises(NearDuplicate):
        await examples.submit(
            platform, people["author"], task_code="toy", fields=_fooling(COPY), context_id=contexts[0]
        )
    # A retracted example is no longer compared.
    await examples.retract(platform, people["author"], on_first.example.id)
    again = await examples.submit(
        platform, people["author"], task_code="toy", fields=_fooling(COPY), context_id=contexts[0]
    )
    assert again.example.near_duplicate_of is None

    # Off (0): no check, no sketch.
    await tasks.update_settings(platform, people["owner"], "toy", {"near_duplicate_threshold": 0})
    view = await tasks.get_task(platform, Actor.anonymous(), "toy")
    assert view.settings.near_duplicate_threshold is None
    async with platform.db.session() as s:
        sketched = await s.scalar(select(func.count()).select_from(ExampleSketch))
    await examples.submit(platform, people["author"], task_code="toy", fields=_fooling(COPY), context_id=contexts[0])
    async with platform.db.session() as s:
        assert await s.scalar(select(func.count()).select_from(ExampleSketch)) == sketched

    for bad in (0.3, 1.5, float("nan")):
        with pytest.raises(InvalidInput) as caught:
            await tasks.update_settings(platform, people["owner"], "toy", {"near_duplicate_threshold": bad})
        assert [(e.field, e.rule) for e in caught.value.field_errors] == [("nearDuplicateThreshold", "range")]


CREATE = """mutation ($f: JSON!, $allow: Boolean! = false) {
  createExample(input: {taskCode: "toy", fields: $f, allowNearDuplicate: $allow}) {
    __typename
    ... on ExampleCreated { example { id nearDuplicate { similarity example { id } } } }
    ... on NearDuplicate { message similarity threshold yourExample { id } } } }"""
CLUSTERS = """{ task(code: "toy") { currentRound { nearDuplicates { similarity examples { id } } } } }"""


async def test_graphql_contract(gql, platform):
    author, _ = await register_user(gql, "writer")
    other, _ = await register_user(gql, "copier")
    owner, owner_id = await register_user(gql, "boss")
    await tasks.grant_ownership(platform, Actor.system(), "toy", parse_id(owner_id, "id", "User"))
    settings = await gql(
        'mutation { updateTaskSettings(input: {taskCode: "toy", nearDuplicateThreshold: 0.7}) { __typename '
        "... on TaskSettingsUpdated { task { settings { nearDuplicateThreshold } } } } }",
        token=owner,
    )
    assert settings["updateTaskSettings"]["task"]["settings"] == {"nearDuplicateThreshold": 0.7}

    first = (await gql(CREATE, {"f": _fooling(FIRST)}, token=author))["createExample"]
    assert first["__typename"] == "ExampleCreated" and first["example"]["nearDuplicate"] is None
    own = (await gql(CREATE, {"f": _fooling(COPY)}, token=author))["createExample"]
    assert own["__typename"] == "NearDuplicate" and own["similarity"] == 1.0 and own["threshold"] == 0.7
    assert own["yourExample"] == {"id": first["example"]["id"]}
    theirs = (await gql(CREATE, {"f": _fooling(CLOSE)}, token=other))["createExample"]
    assert theirs["__typename"] == "NearDuplicate" and theirs["yourExample"] is None
    allowed = (await gql(CREATE, {"f": _fooling(CLOSE), "allow": True}, token=other))["createExample"]
    mark = allowed["example"]["nearDuplicate"]
    assert mark["similarity"] == theirs["similarity"] and mark["example"] is None  # the copier may not read it

    seen = (await gql(CLUSTERS, token=owner))["task"]["currentRound"]["nearDuplicates"]
    assert seen == [
        {
            "similarity": theirs["similarity"],
            "examples": [{"id": first["example"]["id"]}, {"id": allowed["example"]["id"]}],
        }
    ]
    assert (await gql(CLUSTERS, token=author))["task"]["currentRound"]["nearDuplicates"] is None
