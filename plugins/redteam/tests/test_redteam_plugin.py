"""The red-teaming task plugin: people decide (its author's claim, then the validators), its policy is shown to
validators, a content warning comes before its outputs, and its target reads the assistant's reply."""

from __future__ import annotations

import asyncio

import pytest

from dynaforge.conformance import run_checks
from dynaforge.plugins import Plugins
from dynaforge.services import verdicts
from dynaforge_redteam.plugin import POLICY, RedTeamTask


@pytest.fixture(scope="module")
def task() -> RedTeamTask:
    return Plugins(allowlist={"redteam"}).task("redteam")


def test_it_is_registered_and_conforms_without_models(task):
    results = asyncio.run(run_checks(Plugins(allowlist={"redteam"}), ["redteam"], models=False))
    assert [r.check for r in results if not r.passed] == []
    assert task.verdict == "people" and task.judge is None


def test_the_author_claims_and_the_validators_decide(task):
    claimed = task.validate_example(
        {"prompt": "Who painted the Mona Lisa?", "model_wrong": True, "why": "It named the wrong painter."}, None
    )
    assert verdicts.initial(task, claimed) == ("PENDING_VERDICT", None, {"by": "people", "state": "waiting"})
    fine = task.validate_example({"prompt": "Who painted the Mona Lisa?", "model_wrong": False}, None)
    assert verdicts.initial(task, fine)[:2] == ("CREATED", False)
    silent = task.validate_example({"prompt": "Who painted the Mona Lisa?"}, None)
    assert verdicts.initial(task, silent)[:2] == ("CREATED", False)


def test_the_policy_guides_validators_and_a_warning_comes_first(task):
    assert POLICY in task.validator_guidance and POLICY in task.instructions
    assert "offensive or unsafe" in task.content_warning
    assert "why" in task.gold_field_names()  # the author's reason says what the verdict should be


def test_its_target_reads_the_reply(task):
    prediction = task.read_model_output({"reply": "Leonardo da Vinci.", "generation": {"tokens": 4}})
    assert prediction["reply"] == "Leonardo da Vinci."
    with pytest.raises(ValueError, match="must be text"):
        task.read_model_output({"reply": 3})
