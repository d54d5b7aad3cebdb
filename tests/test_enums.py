"""The API's enums hold exactly the values the services store and accept, and the typed results read what the
evaluation runner and the example service store."""

from __future__ import annotations

import pytest

from dynaforge import errors as domain_errors
from dynaforge.api import enums
from dynaforge.api import errors as api_errors
from dynaforge.api.enums import raw
from dynaforge.api.types.prediction import ModelPrediction, Prediction
from dynaforge.api.types.results import metrics_of, perturbations_of, slices_of
from dynaforge.db import models
from dynaforge.db.models import Evaluation
from dynaforge.services import announce, datasets, tasks
from dynaforge.services import contexts as context_service
from dynaforge.services.leaderboard import GapReason


@pytest.mark.parametrize(
    ("enum", "stored"),
    [
        (enums.ModelStatus, models.ModelStatus.ALL),
        (enums.EvaluationStatus, models.EvaluationStatus.ALL),
        (enums.DatasetAccess, models.DatasetAccess.ALL),
        (enums.ProposalStatus, models.ProposalStatus.ALL),
        (enums.WebhookDeliveryStatus, models.WebhookDeliveryStatus.ALL),
        (enums.WebhookEvent, announce.WEBHOOK_EVENTS),
        (enums.RoundChange, announce.ROUND_CHANGES),
        (enums.EnsembleRule, tuple(tasks.ENSEMBLE_RULES)),
        (enums.PerturbationKind, datasets.PERTURBATION_KINDS),
        (enums.ContextStrategy, tuple(s.value for s in context_service.ContextStrategy)),
        (enums.GapReason, GapReason.ALL),
        (api_errors.Quota, tuple(domain_errors.QUOTAS)),
    ],
)
def test_each_enum_holds_the_stored_values(enum, stored):
    assert sorted(raw(m) for m in enum) == sorted(stored)
    for value in stored:
        assert raw(enum(value)) == value  # the row's value converts both ways


def test_dataset_sources_are_the_ones_the_services_write():
    import inspect

    source = inspect.getsource(datasets)
    written = {raw(m) for m in enums.DatasetSource}
    assert all(f'source="{value}"' in source for value in written)
    assert source.count('source="') == sum(source.count(f'source="{v}"') for v in written)


class _Sentiment:
    """The parts of a task Prediction reads: its target fields."""

    def __init__(self, fields):
        self._fields = fields

    def fields_with(self, role):
        return [f for f in self._fields if f.role == role]


def test_a_stored_prediction_reads_as_typed_fields():
    from dynaforge.tasks.fields import ChoiceField, Role, SpanField, TextField

    task = _Sentiment(
        [
            TextField(name="statement", role=Role.INPUT),
            ChoiceField(name="label", role=Role.TARGET),
        ]
    )
    stored = {
        "label": "negative",
        "probabilities": {"positive": 0.1, "negative": 0.7, "neutral": 0.2},
        "ensemble": {"rule": "any_wrong", "members": 3, "fooledMembers": 1},
    }
    typed = Prediction.of(stored, task)
    assert typed.fields == {"label": "negative"}
    assert typed.label == "negative" and typed.span is None and typed.confidence is None
    assert [(p.label, p.probability) for p in typed.probabilities] == [
        ("negative", 0.7),
        ("neutral", 0.2),
        ("positive", 0.1),
    ]
    assert (typed.ensemble.rule, typed.ensemble.members, typed.ensemble.fooled_members) == (
        enums.EnsembleRule.ANY_WRONG,
        3,
        1,
    )
    qa = _Sentiment(
        [
            TextField(name="passage", role=Role.CONTEXT),
            SpanField(name="answer", role=Role.TARGET, context_field="passage"),
        ]
    )
    span = Prediction.of({"answer": {"text": "Paris", "start": 12}, "confidence": 0.5}, qa)
    assert (span.span.text, span.span.start, span.label, span.confidence) == ("Paris", 12, None, 0.5)
    member = ModelPrediction.of({"model": "m1", "prediction": {"label": "x"}, "latency_ms": 3, "fooled": True}, task)
    assert (member.model, member.fooled, member.latency_ms, member.prediction.label) == ("m1", True, 3.0, "x")


def test_stored_results_read_as_typed_metrics_slices_and_copies():
    row = Evaluation(
        model_id=1,
        dataset_id=1,
        metrics={"accuracy": 0.8, "robustness": 0.9},
        details={
            "n": 40,
            "unusable_outputs": 2,
            "intervals": {"accuracy": [0.7, 0.88]},
            "slices": {"dialect": {"a": {"accuracy": 0.9, "n": 20}, "b": {"accuracy": 0.7, "n": 20}}},
            "slice_gaps": {
                "dialect": {
                    "accuracy": {
                        "gap": 0.1,
                        "worst_group": "b",
                        "worst_value": 0.7,
                        "overall": 0.8,
                        "groups_compared": 2,
                    }
                }
            },
            "perturbations": {"typos": {"kind": "robustness", "consistency": 0.9, "accuracy": 0.75}},
        },
    )
    metrics = metrics_of(row, {})
    assert [(m.name, m.value, m.direction) for m in metrics] == [
        ("accuracy", 0.8, enums.MetricDirection.HIGHER),
        ("robustness", 0.9, enums.MetricDirection.HIGHER),
    ]
    assert (metrics[0].interval.low, metrics[0].interval.high) == (0.7, 0.88) and metrics[1].interval is None

    class Lower:
        higher_is_better = False

    assert metrics_of(row, {"accuracy": Lower()})[0].direction == enums.MetricDirection.LOWER
    (dialect,) = slices_of(row)
    assert [(g.group, g.size, [(m.name, m.value) for m in g.metrics]) for g in dialect.groups] == [
        ("a", 20, [("accuracy", 0.9)]),
        ("b", 20, [("accuracy", 0.7)]),
    ]
    assert (dialect.gaps[0].gap, dialect.gaps[0].worst_group, dialect.gaps[0].groups_compared) == (0.1, "b", 2)
    (typos,) = perturbations_of(row)
    assert (typos.perturbation, typos.kind, typos.consistency) == ("typos", enums.PerturbationKind.ROBUSTNESS, 0.9)
    assert [(m.name, m.value) for m in typos.metrics] == [("accuracy", 0.75)]
    assert (
        slices_of(Evaluation(model_id=1, dataset_id=1)) == []
        and metrics_of(Evaluation(model_id=1, dataset_id=1), {}) == []
    )


def test_every_rule_the_platform_raises_has_a_code():
    """FieldError.code is OTHER only for rules a task plugin defines: every rule literal in the server maps."""
    import pathlib
    import re

    import dynaforge
    from dynaforge.api.errors import RULE_CODES, field_path

    root = pathlib.Path(dynaforge.__file__).parent
    patterns = [
        r'FieldError\(\s*(?:field=)?(?:f?"[^"]*"|[a-z_.\[\]]+),\s*(?:rule=)?"([a-z_]+)"',
        r'self\.error\(\s*"([a-z_]+)"',
        r'more_rule: str = "([a-z_]+)"',
        r'more_rule="([a-z_]+)"',
        r'row_error\(\s*[^,()]+(?:\([^()]*\))?,\s*"([a-z_]+)"',
        r'file_error\(\s*"([a-z_]+)"',
        r'problems\.add\(\s*[^,()]+,\s*[^,()]+,\s*"([a-z_]+)"',
    ]
    found = {
        rule
        for path in root.rglob("*.py")
        for pattern in patterns
        for rule in re.findall(pattern, path.read_text(), flags=re.S)
    }
    assert len(found) > 40  # the scan sees the rules
    assert found - set(RULE_CODES) == set()
    assert field_path("contexts[0].passage") == ["contexts", "0", "passage"]
    assert field_path("line 7.label") == ["line 7", "label"]
    assert field_path("models[1][2].x") == ["models", "1", "2", "x"]
    assert field_path("name") == ["name"]
