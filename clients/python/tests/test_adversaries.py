"""Machine adversaries through the client, against a real server (SQLite and PostgreSQL): suggestions to an
annotator and an example written from one (ASSISTED), an owner's generation run (MACHINE candidates), and the
counters split by source.

The sentiment task's own templates are deterministic: a negative statement of one clause gets its negation ("not
boring at all", positive), which the shipped target does not follow."""

from __future__ import annotations

from dynaforge_client import AsyncClient

DRAFT = {"statement": "The concert was boring.", "label": "negative"}
NEGATED = {"statement": "The concert was not boring at all.", "label": "positive"}


def _by_source(rows) -> dict[str, object]:
    return {row.source.value: row.stats for row in rows}


async def test_suggestions_and_assisted_examples(server, unique):
    async with AsyncClient(server.url) as annotator, AsyncClient(server.url, server.token) as operator:
        await annotator.register(f"sue{unique}", f"sue{unique}@example.org", "sue's long password")
        listed = {a.name: a for a in await annotator.adversaries("sentiment")}
        assert listed["sentiment-templates"].available and listed["perturbation-search"].available
        assert not listed["llm"].available and "DYNAFORGE_LLM_ADVERSARY_URL" in listed["llm"].unavailable_reason

        before = _by_source((await operator.task("sentiment")).stats_by_source)
        suggested = await annotator.suggest_edits("sentiment", DRAFT, adversary="sentiment-templates", limit=5)
        assert suggested.draft.fooled is False and suggested.draft.prediction.label == "negative"
        negation = next(s for s in suggested.suggestions if s.fields == NEGATED)
        assert negation.verdict.fooled and negation.verdict.prediction.label == "negative"
        assert negation.adversary == "sentiment-templates" and negation.rationale
        assert {m.label for m in negation.moves} == {"positive", "negative", "neutral"}

        written = await annotator.create_example("sentiment", negation.fields, suggestion=negation)
        assert written.fooled is True
        assert written.source.value == "ASSISTED" and written.adversary == "sentiment-templates"
        after = _by_source((await operator.task("sentiment")).stats_by_source)
        assert after["ASSISTED"].collected == before["ASSISTED"].collected + 1
        assert after["ASSISTED"].fooled == before["ASSISTED"].fooled + 1
        assert after["HUMAN"].collected == before["HUMAN"].collected
        round_split = _by_source((await operator.round("sentiment")).stats_by_source)
        assert list(round_split) == ["HUMAN", "ASSISTED", "MACHINE"]


async def test_generation_run(server, unique):
    async with AsyncClient(server.url) as annotator, AsyncClient(server.url, server.token) as operator:
        await annotator.register(f"gen{unique}", f"gen{unique}@example.org", "gen's long password")
        draft = await annotator.create_example("sentiment", {**DRAFT, "statement": f"The {unique} concert was boring."})
        assert draft.fooled is False  # a draft the target gets right: what a run attacks

        before = _by_source((await operator.task("sentiment")).stats_by_source)["MACHINE"]
        run = await operator.generate_candidates("sentiment", "sentiment-templates", 30, seed=5)
        assert run.budget == 30 and run.seed == 5 and run.adversary == "sentiment-templates"
        done = await operator.wait_for_generation(run, timeout=120, interval=0.2)
        assert done.status.value == "DONE", done.error
        assert 0 < done.queries <= 30 and done.items_done >= 1 and done.candidates >= 1
        after = _by_source((await operator.task("sentiment")).stats_by_source)["MACHINE"]
        assert after.collected == before.collected + done.candidates
        assert after.fooled == before.fooled + done.candidates  # only fooling candidates are stored

        again = await operator.cancel_generation(run)
        assert again.status.value == "DONE"  # ended already: unchanged
