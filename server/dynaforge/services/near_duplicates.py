"""Near-duplicate examples: a new fooling example close to an earlier one of its round is flagged to its author
before it counts.

Annotators who find a weakness tend to write it again with a word changed: each copy fools the model, and a round
full of them teaches the next model one thing many times. Where a task's owners set ``nearDuplicateThreshold``,
``createExample`` compares a fooling example's text with the round's earlier fooling examples and, when one is at
least that similar, stores nothing and answers ``NearDuplicate`` (the earlier example named only to its own author);
the author edits it, or sends it again with ``allowNearDuplicate``, and it is stored with the earlier example and
the similarity beside it, for validators and owners to see. Owners read the round's clusters
(``Round.nearDuplicates``).

**The similarity** is the Jaccard similarity of the two texts' shingles (5-character windows of the text lower-cased
with its words joined by single spaces; the task's text input fields, in order), estimated by MinHash: a bottom-k
sketch, the ``SKETCH_SIZE`` smallest 63-bit BLAKE2b hashes of the shingles (Broder's bottom-k variant: one hash
function, exact for a text with fewer distinct shingles than that). The estimate for two sketches is the share of
the union's ``SKETCH_SIZE`` smallest values that both sketches hold.

**Finding candidates** is an inverted index in the database (``example_sketches``, indexed by round and value): the
earlier examples on the same context (the same sentence about another context is another example) sharing the most
sketch values come back in one query, and the estimate is computed for the few that share the most. Only fooling
examples are sketched and checked: an example that did not fool the model counts for nothing that a copy could
inflate. Examples written before the setting was on have no sketch and are not compared.
"""

from __future__ import annotations

import hashlib
import heapq
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from dynaforge.db.models import Example, ExampleSketch, ExampleStatus, Round
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor
from dynaforge.services.platform import Platform
from dynaforge.tasks.fields import Role

SKETCH_SIZE = 64
SHINGLE = 5
_MASK = (1 << 63) - 1  # values fit a signed BIGINT
_WORDS = re.compile(r"\w+")
_CANDIDATES = 10  # the examples sharing the most values whose similarity is estimated


def shingles(text: str) -> set[str]:
    """The text's 5-character shingles, lower-cased, its words joined by single spaces (punctuation and spacing
    do not tell two texts apart); a shorter text is its own single shingle, an empty one has none."""
    joined = " ".join(_WORDS.findall(text.casefold()))
    if len(joined) <= SHINGLE:
        return {joined} if joined else set()
    return {joined[i : i + SHINGLE] for i in range(len(joined) - SHINGLE + 1)}


def sketch(texts: Iterable[str]) -> list[int]:
    """The bottom-k MinHash sketch of the texts' shingles, ascending (empty for texts without a word)."""
    found: set[str] = set()
    for text in texts:
        found |= shingles(text)
    hashes = {int.from_bytes(hashlib.blake2b(s.encode(), digest_size=8).digest(), "big") & _MASK for s in found}
    return heapq.nsmallest(SKETCH_SIZE, hashes)


def similarity(a: Iterable[int], b: Iterable[int]) -> float:
    """The Jaccard similarity that two sketches estimate: the share of the union's ``SKETCH_SIZE`` smallest values
    held by both (exact when each sketch holds all of its text's shingles)."""
    first, second = set(a), set(b)
    union = heapq.nsmallest(SKETCH_SIZE, first | second)
    if not union:
        return 0.0
    both = first & second
    return sum(1 for v in union if v in both) / len(union)


def texts_of(task: Any, fields: dict[str, Any]) -> list[str]:
    """The text of an example's input fields that a person wrote (strings, in the task's order)."""
    return [fields[name] for name in task.field_names(Role.INPUT) if isinstance(fields.get(name), str)]


@dataclass(frozen=True)
class Match:
    """The earlier example closest to a new one, and how close."""

    example_id: int
    user_id: int
    similarity: float


async def closest(p: Platform, round_id: int, context_id: int | None, values: list[int]) -> Match | None:
    """The round's sketched example on the same context (or, without one, on none; retracted and rejected ones
    aside) most similar to ``values``; None when none shares a value."""
    if not values:
        return None
    async with p.db.session() as s:
        return await _closest(s, round_id, context_id, values)


async def _closest(s: AsyncSession, round_id: int, context_id: int | None, values: list[int]) -> Match | None:
    shared = func.count().label("shared")
    candidates = (
        await s.execute(
            select(col(ExampleSketch.example_id), shared)
            .where(
                col(ExampleSketch.round_id) == round_id,
                col(ExampleSketch.context_id).is_not_distinct_from(context_id),
                col(ExampleSketch.value).in_(values),
            )
            .group_by(col(ExampleSketch.example_id))
            .order_by(shared.desc(), col(ExampleSketch.example_id))
            .limit(_CANDIDATES)
        )
    ).all()
    if not candidates:
        return None
    ids = [row[0] for row in candidates]
    sketches: dict[int, list[int]] = {i: [] for i in ids}
    for example_id, value in await s.execute(
        select(col(ExampleSketch.example_id), col(ExampleSketch.value)).where(col(ExampleSketch.example_id).in_(ids))
    ):
        sketches[example_id].append(value)
    alive = {
        example_id: user_id
        for example_id, user_id in await s.execute(
            select(col(Example.id), col(Example.user_id)).where(
                col(Example.id).in_(ids),
                col(Example.status).not_in([ExampleStatus.RETRACTED, ExampleStatus.REJECTED]),
            )
        )
    }
    scored = [Match(i, alive[i], similarity(values, sketches[i])) for i in ids if i in alive]
    return max(scored, key=lambda m: (m.similarity, -m.example_id), default=None)


_INSERT_SKETCH = insert(ExampleSketch)


def store_sketch(s: Connection, example_id: int, round_id: int, context_id: int | None, values: list[int]) -> None:
    """Write an example's sketch, in the transaction that inserts it."""
    if values:
        rows = [{"example_id": example_id, "round_id": round_id, "context_id": context_id, "value": v} for v in values]
        s.execute(_INSERT_SKETCH, rows)


@dataclass(frozen=True)
class Cluster:
    """Examples of a round linked by their near-duplicate marks (each sent although close to another)."""

    example_ids: list[int]
    similarity: float  # the highest similarity among the links


async def owner_clusters(p: Platform, actor: Actor, round_: Round) -> list[Cluster] | None:
    """:func:`clusters` for the task's owners and admins; None for anyone else."""
    if not await task_service.owns_task(p, actor, round_.task_id):
        return None
    return await clusters(p, round_.id)


async def clusters(p: Platform, round_id: int) -> list[Cluster]:
    """The round's near-duplicate clusters, largest first: examples joined by their ``near_duplicate_of`` links
    (an example deleted since drops out)."""
    async with p.db.session() as s:
        links = (
            await s.execute(
                select(col(Example.id), col(Example.near_duplicate_of), col(Example.near_duplicate_similarity)).where(
                    col(Example.round_id) == round_id, col(Example.near_duplicate_of).is_not(None)
                )
            )
        ).all()
        targets = {t for _, t, _ in links}
        present = (
            set(await s.scalars(select(col(Example.id)).where(col(Example.id).in_(targets)))) if targets else set()
        )
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    best: dict[int, float] = {}
    for example_id, target, _ in links:
        find(example_id)
        if target in present:
            parent[find(example_id)] = find(target)
    for example_id, _, value in links:
        root = find(example_id)
        best[root] = max(best.get(root, 0.0), value or 0.0)
    groups: dict[int, list[int]] = {}
    for member in parent:
        groups.setdefault(find(member), []).append(member)
    found = [Cluster(sorted(members), best.get(root, 0.0)) for root, members in groups.items() if len(members) > 1]
    return sorted(found, key=lambda c: (-len(c.example_ids), c.example_ids[0]))
