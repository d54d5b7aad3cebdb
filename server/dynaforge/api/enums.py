"""The closed value sets of the API, as GraphQL enums.

Each enum's Python values are what the database and the services store (``"SUBMITTED"``, ``"any_wrong"``,
``"modelFooled"``), so converting is ``Enum(row.column)`` one way and ``member.value`` the other; the GraphQL names
are the members' names. A test checks each against the set the services accept, so the two cannot drift apart.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, cast

import strawberry

from dynaforge.db.models import AdversaryRunStatus as RunValue
from dynaforge.db.models import DatasetAccess as AccessValue
from dynaforge.db.models import EvaluationStatus as EvaluationValue
from dynaforge.db.models import ExampleStatus as Status
from dynaforge.db.models import ModelStatus as ModelValue
from dynaforge.db.models import ProposalStatus as ProposalValue
from dynaforge.db.models import WebhookDeliveryStatus as DeliveryValue
from dynaforge.services import contexts as context_service
from dynaforge.services.cursors import WorkPage
from dynaforge.services.leaderboard import GapReason as GapValue
from dynaforge.services.tasks import ENSEMBLE_RULES


@strawberry.enum(description="Where a submitted model is in its evaluation.")
class ModelStatus(Enum):
    SUBMITTED = strawberry.enum_value(ModelValue.SUBMITTED, description="Stored; no evaluation has started yet.")
    EVALUATING = strawberry.enum_value(
        ModelValue.EVALUATING, description="At least one evaluation is queued or running."
    )
    DONE = strawberry.enum_value(ModelValue.DONE, description="Every evaluation finished.")
    FAILED = strawberry.enum_value(
        ModelValue.FAILED,
        description="An evaluation failed: its `error` and `logTail` say why (the submitter sees them).",
    )


@strawberry.enum(description="Where one evaluation (one model on one data set) is.")
class EvaluationStatus(Enum):
    QUEUED = strawberry.enum_value(EvaluationValue.QUEUED, description="Waiting for a worker.")
    RUNNING = strawberry.enum_value(EvaluationValue.RUNNING, description="A worker is scoring it; `progress` moves.")
    DONE = strawberry.enum_value(EvaluationValue.DONE, description="Scored: its metrics are final.")
    FAILED = strawberry.enum_value(EvaluationValue.FAILED, description="It stopped with an error.")


@strawberry.enum(description="Who sees a data set and what it is for.")
class DatasetAccess(Enum):
    SCORING = strawberry.enum_value(
        AccessValue.SCORING, description="Ranks models on the leaderboard; gold targets stay with the task's owners."
    )
    STANDARD = strawberry.enum_value(AccessValue.STANDARD, description="Downloadable with its gold targets.")
    HIDDEN = strawberry.enum_value(AccessValue.HIDDEN, description="Scored for the task's owners and admins only.")


@strawberry.enum(description="Which part of a round's accepted examples a data set holds (createRoundDatasets).")
class DatasetSplit(Enum):
    TRAIN = strawberry.enum_value("train", description="About 80%: what a model of the next round trains on.")
    DEV = strawberry.enum_value("dev", description="About 10%: for tuning; downloadable.")
    TEST = strawberry.enum_value("test", description="About 10%: scores models (a SCORING set).")


@strawberry.enum(description="Where a data set came from.")
class DatasetSource(Enum):
    ROUND = strawberry.enum_value("round", description="A round's accepted examples, split by `createRoundDatasets`.")
    UPLOAD = strawberry.enum_value("upload", description="An owner's file (a data set or a perturbed copy).")
    PERTURBED = strawberry.enum_value("perturbed", description="Made by the platform from a scoring set.")


@strawberry.enum(description="What a perturbed copy of a scoring set measures.")
class PerturbationKind(Enum):
    ROBUSTNESS = strawberry.enum_value(
        "robustness", description="Meaning-preserving edits: a model should answer as on the original."
    )
    FAIRNESS = strawberry.enum_value(
        "fairness", description="Edits of who the text is about: a model should not change its answer."
    )


@strawberry.enum(description="Which text fields of an example a perturbation changes.")
class PerturbationScope(Enum):
    INPUT = strawberry.enum_value("input", description="Each text input field on its own; the context stays.")
    EXAMPLE = strawberry.enum_value(
        "example",
        description="The context and input text fields together, alike (a name swapped in a claim and in its "
        "evidence), spans into them following.",
    )


@strawberry.enum(description="What a perturbation does to the gold of the copies it makes.")
class PerturbationGold(Enum):
    KEPT = strawberry.enum_value(
        "kept", description="The original's gold still holds: copies are scored against it and for consistency."
    )
    UNKNOWN = strawberry.enum_value(
        "unknown",
        description="The copies keep the original's gold fields, which may no longer hold: they are scored for "
        "consistency with the original only.",
    )
    DROPPED = strawberry.enum_value(
        "dropped", description="The copies lose their gold fields: they are scored for consistency only."
    )


@strawberry.enum(description="What happened to a round.")
class RoundChange(Enum):
    OPENED = strawberry.enum_value("OPENED", description="A new round opened (and the previous one closed).")
    CLOSED = strawberry.enum_value("CLOSED", description="The round stopped collecting examples.")
    UPDATED = strawberry.enum_value("UPDATED", description="The round's description or target models changed.")


@strawberry.enum(description="How an ensemble of target models decides whether an example fooled it.")
class EnsembleRule(Enum):
    MAJORITY = strawberry.enum_value("majority", description=ENSEMBLE_RULES["majority"])
    ANY_WRONG = strawberry.enum_value("any_wrong", description=ENSEMBLE_RULES["any_wrong"])
    ALL_WRONG = strawberry.enum_value("all_wrong", description=ENSEMBLE_RULES["all_wrong"])


@strawberry.enum(description="The events a webhook can receive (each one a subscription of the same name).")
class WebhookEvent(Enum):
    MODEL_FOOLED = strawberry.enum_value("modelFooled", description="An example fooled the target model.")
    EXAMPLE_CREATED = strawberry.enum_value("exampleCreated", description="An example was stored with its verdict.")
    EXAMPLE_PREDICTED = strawberry.enum_value(
        "examplePredicted", description="An example stored while its prediction was pending got it (fooled or not)."
    )
    VERDICT_DECIDED = strawberry.enum_value(
        "verdictDecided",
        description="Whether an example fooled the model was decided after it was stored (by the task's judge, its "
        "validators, or an owner overruling the judge).",
    )
    EXAMPLE_VALIDATED = strawberry.enum_value(
        "exampleValidated", description="A validator voted on an example, or an owner decided it."
    )
    ROUND_CHANGED = strawberry.enum_value("roundChanged", description="A round opened, closed or changed.")


@strawberry.enum(description="Where one webhook delivery is.")
class WebhookDeliveryStatus(Enum):
    PENDING = strawberry.enum_value(DeliveryValue.PENDING, description="Not yet accepted; it is retried with backoff.")
    DELIVERED = strawberry.enum_value(DeliveryValue.DELIVERED, description="The receiver answered 2xx.")
    FAILED = strawberry.enum_value(DeliveryValue.FAILED, description="Every attempt failed; it is not retried.")


@strawberry.enum(description="Where a task proposal is.")
class ProposalStatus(Enum):
    PENDING = strawberry.enum_value(ProposalValue.PENDING, description="Waiting for an admin.")
    ACCEPTED = strawberry.enum_value(ProposalValue.ACCEPTED, description="Accepted: the proposer owns the task.")
    DECLINED = strawberry.enum_value(ProposalValue.DECLINED, description="Declined; `decisionNote` says why.")


@strawberry.enum(description="The order of a list of work asked for (training jobs, generation runs).")
class CreationOrder(Enum):
    NEWEST_FIRST = strawberry.enum_value("newest", description="The latest asked for first (the default).")
    OLDEST_FIRST = strawberry.enum_value("oldest", description="The first asked for first.")


#: The ``orderBy`` argument of a list of work (trainingJobs, adversaryRuns).
OrderBy = Annotated[CreationOrder, strawberry.argument(description="Newest first (the default) or oldest first.")]


def work_page(
    status: Enum | None,
    order_by: CreationOrder,
    first: int | None,
    after: str | None,
    last: int | None,
    before: str | None,
) -> WorkPage:
    """A list of work's arguments, as the services take them."""
    return WorkPage(
        status=None if status is None else raw(status),
        oldest_first=order_by is CreationOrder.OLDEST_FIRST,
        first=first,
        after=after,
        last=last,
        before=before,
    )


@strawberry.enum(description="What a leaderboard's rows are ordered by.")
class LeaderboardSort(Enum):
    DYNASCORE = strawberry.enum_value("dynascore", description="The Dynascore, best first (the default).")
    METRIC = strawberry.enum_value(
        "metric", description="One metric, best first in its own direction: name it in `sortMetric`."
    )


@strawberry.enum(description="How nextContext picks one of the current round's contexts.")
class ContextStrategy(Enum):
    LEAST_USED = strawberry.enum_value(
        "least_used", description=context_service.STRATEGY_DESCRIPTIONS[context_service.ContextStrategy.LEAST_USED]
    )
    UNIFORM = strawberry.enum_value(
        "uniform", description=context_service.STRATEGY_DESCRIPTIONS[context_service.ContextStrategy.UNIFORM]
    )
    LEAST_FOOLED = strawberry.enum_value(
        "least_fooled", description=context_service.STRATEGY_DESCRIPTIONS[context_service.ContextStrategy.LEAST_FOOLED]
    )
    VALIDATION_FAILED = strawberry.enum_value(
        "validation_failed",
        description=context_service.STRATEGY_DESCRIPTIONS[context_service.ContextStrategy.VALIDATION_FAILED],
    )


@strawberry.enum(description="Which way a metric is better, and how the Dynascore orients it.")
class MetricDirection(Enum):
    HIGHER = strawberry.enum_value("higher", description="Higher is better (accuracy, throughput, ...).")
    LOWER = strawberry.enum_value("lower", description="Lower is better (an error rate): oriented as -x.")
    MEMORY = strawberry.enum_value("memory", description="Memory in GiB: oriented as the budget left, budget - x.")


@strawberry.enum(description="Which items of its data set an evaluation's `metrics` were computed on.")
class ScoredPart(Enum):
    WHOLE = strawberry.enum_value(
        "whole", description="Every item (a set that is not a scoring set, or one whose publicShare is 1)."
    )
    PUBLIC = strawberry.enum_value(
        "public",
        description="The public part of a scoring set (Dataset.publicShare of its items, the same for every model "
        "and for the set's perturbed copies): the private part is scored too, and its figures (`privateMetrics`) "
        "are shown once the set's round has ended.",
    )


@strawberry.enum(description="Why a model lacks figures on a scoring set (LeaderboardRow.gaps).")
class GapReason(Enum):
    NOT_EVALUATED = strawberry.enum_value(
        GapValue.NOT_EVALUATED, description="No evaluation on the set: it was never queued there."
    )
    QUEUED = strawberry.enum_value(GapValue.QUEUED, description="Its evaluation on the set waits for a worker.")
    RUNNING = strawberry.enum_value(GapValue.RUNNING, description="Its evaluation on the set is running.")
    FAILED = strawberry.enum_value(
        GapValue.FAILED, description="Its evaluation on the set failed (the submitter reads why on the model)."
    )
    UNUSABLE = strawberry.enum_value(
        GapValue.UNUSABLE,
        description="Most of its answers could not be read: no figure that depends on the gold; it ranks after "
        "every model that has them.",
    )
    NOT_MEASURED = strawberry.enum_value(
        GapValue.NOT_MEASURED,
        description="Evaluated, but an axis was not measured there (speed for uploaded predictions, fairness on a "
        "set without fairness copies).",
    )


@strawberry.enum(description="Where an example came from; statistics, the round page and exports split by it.")
class ExampleSource(Enum):
    HUMAN = strawberry.enum_value("HUMAN", description="A person wrote it alone.")
    ASSISTED = strawberry.enum_value(
        "ASSISTED",
        description="A person wrote it from a machine adversary's suggestion (suggestEdits); it is theirs in every "
        "count, and `adversary` says which one helped.",
    )
    MACHINE = strawberry.enum_value(
        "MACHINE",
        description="A machine adversary proposed it (generateCandidates); people validate it like any other.",
    )


@strawberry.enum(description="Where a generation run (generateCandidates) is.")
class AdversaryRunStatus(Enum):
    QUEUED = strawberry.enum_value(RunValue.QUEUED, description="Accepted; it starts at once.")
    RUNNING = strawberry.enum_value(
        RunValue.RUNNING, description="Attacking the round's contexts; `itemsDone` and `queries` move."
    )
    DONE = strawberry.enum_value(
        RunValue.DONE, description="Finished: budget spent or all attacked (`error` may say why nothing was)."
    )
    FAILED = strawberry.enum_value(RunValue.FAILED, description="It stopped; `error` says why. What it stored stays.")
    CANCELLED = strawberry.enum_value(
        RunValue.CANCELLED, description="An owner stopped it (cancelGeneration). What it stored stays."
    )


def raw(member: Enum) -> str:
    """The stored value of an enum member (what the services take); typed for mypy, which sees the
    ``strawberry.enum_value`` wrapper where Python holds the plain value."""
    return cast(str, member.value)


@strawberry.enum(description="Who decides whether an example fooled the model (Task.verdictBy).")
class VerdictSource(Enum):
    RULE = strawberry.enum_value("rule", description="The task's own rule, at once (a label differs, a metric).")
    JUDGE = strawberry.enum_value(
        "judge", description="A judge model with the task's rubric, soon after the example is stored."
    )
    PEOPLE = strawberry.enum_value(
        "people",
        description="The task's validators, voting on the model's output after its author says it is wrong.",
    )
    AUTHOR = strawberry.enum_value(
        "author", description="Its author, who said the model's output was right (on a PEOPLE task): not fooled."
    )


@strawberry.enum(
    description="CROWD: the usual queue. OWNER (owners and admins): flagged examples first; a vote decides alone."
)
class ValidationMode(Enum):
    CROWD = strawberry.enum_value(
        "CROWD",
        description="Anyone signed in: others' examples awaiting votes (only fooling ones unless the task's "
        "validateNonFooling is on), fooling ones first, then those with the fewest votes.",
    )
    OWNER = strawberry.enum_value(
        "OWNER",
        description="The task's owners and admins only: flagged examples first, then those awaiting votes, their "
        "own included; each vote decides the example alone.",
    )


@strawberry.enum(description="Where an example is in its life.")
class ExampleStatus(Enum):
    PENDING_PREDICTION = strawberry.enum_value(
        Status.PENDING_PREDICTION,
        description="Stored, but the target model did not answer (down or too slow) or answered unreadably: the "
        "server asks it again later (an unreadable answer a few times only); `prediction` and `fooled` stay null "
        "until it answers, and `pendingReason` says why.",
    )
    PENDING_VERDICT = strawberry.enum_value(
        Status.PENDING_VERDICT,
        description="The model answered; whether it was fooled waits for the task's judge model (Task.verdictBy "
        "JUDGE) or its validators (PEOPLE, whose vote is on the model's output). `fooled` stays null and the example "
        "counts for nothing until the verdict is decided (the verdictDecided subscription says when).",
    )
    CREATED = strawberry.enum_value(
        Status.CREATED,
        description="The model answered; the example waits in the validators' queue (if it fooled the model, or "
        "the task validates every example).",
    )
    RETRACTED = strawberry.enum_value(
        Status.RETRACTED, description="Withdrawn by its author, an owner or an admin before a decision; final."
    )
    FLAGGED = strawberry.enum_value(
        Status.FLAGGED, description="Flagged: out of the validators' queue until an owner or an admin decides."
    )
    ACCEPTED = strawberry.enum_value(
        Status.ACCEPTED, description="Accepted by a quorum of CORRECT votes or by an owner's vote; final."
    )
    REJECTED = strawberry.enum_value(
        Status.REJECTED,
        description="Rejected by a quorum of INCORRECT or of FLAGGED votes, or by an owner's vote; final.",
    )


@strawberry.enum(description="Where a training job is.")
class TrainingStatus(Enum):
    QUEUED = strawberry.enum_value("QUEUED", description="Waiting for a worker.")
    RUNNING = strawberry.enum_value("RUNNING", description="The recipe is running (see progress and stage).")
    SUCCEEDED = strawberry.enum_value("SUCCEEDED", description="The candidate is registered and being evaluated.")
    FAILED = strawberry.enum_value("FAILED", description="It stopped; `error` says why. Nothing was registered.")
    CANCELLED = strawberry.enum_value("CANCELLED", description="An owner cancelled it. Nothing was registered.")
