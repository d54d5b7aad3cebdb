"""SQLModel tables. Rules about who may change what live in ``dynaforge.services``, not here."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar, overload

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import class_mapper
from sqlmodel import Field, SQLModel

JSONType = sa.JSON().with_variant(JSONB(), "postgresql")


def utcnow() -> datetime:
    return datetime.now(UTC)


@overload
def as_utc(value: datetime) -> datetime: ...
@overload
def as_utc(value: None) -> None: ...
def as_utc(value: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes; every stored time is UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


M = TypeVar("M", bound=SQLModel)


def table(model: type[SQLModel]) -> sa.Table:
    """The table of a table model, for Core statements (SQLAlchemy sets ``__table__``; SQLModel's types omit it)."""
    return model.__table__  # type: ignore[attr-defined]


def row_object(model: type[M], values: Mapping[str, Any]) -> M:
    """The object of a row the caller has just written itself, built the way SQLAlchemy builds a row it reads: the
    values placed as they are, without the constructor's validation, defaults and change events (about 3 µs where
    the constructor of a 20-column table takes over 100 µs). ``values`` must hold every column of the table."""
    missing = [c.name for c in table(model).columns if c.name not in values]
    if missing:
        raise ValueError(f"{model.__name__} row without {', '.join(missing)}")
    row = class_mapper(model).class_manager.new_instance()
    row.__dict__.update(values)
    return row


def _ts(**kw: Any) -> Any:
    return Field(default_factory=utcnow, sa_type=sa.DateTime(timezone=True), **kw)


def _json(default_factory: Any = dict, nullable: bool = False) -> Any:
    return Field(default_factory=default_factory, sa_column_kwargs={"nullable": nullable}, sa_type=JSONType)


class ExampleStatus:
    """Lifecycle of an example (stored as text)."""

    PENDING_PREDICTION = "PENDING_PREDICTION"
    #: the model answered; whether it was fooled waits for the task's judge model or its validators
    PENDING_VERDICT = "PENDING_VERDICT"
    CREATED = "CREATED"
    RETRACTED = "RETRACTED"
    FLAGGED = "FLAGGED"
    ACCEPTED = "ACCEPTED"
    REJECTED = "REJECTED"

    ALL = (PENDING_PREDICTION, PENDING_VERDICT, CREATED, RETRACTED, FLAGGED, ACCEPTED, REJECTED)


class User(SQLModel, table=True):
    __tablename__ = "users"

    id: int = Field(default=None, primary_key=True)
    username: str = Field(max_length=40, sa_column_kwargs={"unique": True}, index=False)
    email: str = Field(max_length=254)  # not unique: an unverified contact (see services/auth.create_user)
    password_hash: str = Field(max_length=255)
    is_admin: bool = Field(default=False)
    is_active: bool = Field(default=True)
    #: a machine adversary's account (``machine:NAME``): it authors the candidates the adversary proposes, never
    #: signs in, and keeps machine examples out of the people's own counts
    is_machine: bool = Field(default=False)
    created_at: datetime = _ts()


class ApiToken(SQLModel, table=True):
    __tablename__ = "api_tokens"

    id: int = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="users.id", index=True, ondelete="CASCADE")
    name: str = Field(max_length=100)
    prefix: str = Field(max_length=16)
    token_hash: str = Field(max_length=64, sa_column_kwargs={"unique": True})
    created_at: datetime = _ts()
    last_used_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    revoked_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    expires_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))  # None: never
    #: how it was issued (:class:`TokenOrigin`)
    origin: str = Field(default="API", max_length=16, sa_column_kwargs={"server_default": "API"})


class TokenOrigin:
    REGISTRATION = "REGISTRATION"  # the register mutation
    LOGIN = "LOGIN"  # the login mutation
    API = "API"  # createApiToken, by the user themself
    OPERATOR = "OPERATOR"  # an admin or the server's operator (dynaforge tokens create) for the user
    CROWD = "CROWD"  # joinCrowdStudy, for a crowd study's participant
    ALL = (REGISTRATION, LOGIN, API, OPERATOR, CROWD)


class TaskRow(SQLModel, table=True):
    """A registered task's stored settings; the task's behaviour comes from its plugin."""

    __tablename__ = "tasks"

    id: int = Field(default=None, primary_key=True)
    code: str = Field(max_length=40, sa_column_kwargs={"unique": True})
    name: str = Field(max_length=200)
    settings: dict = _json()
    hidden: bool = Field(default=False)
    active: bool = Field(default=True)
    created_at: datetime = _ts()


class TaskOwner(SQLModel, table=True):
    __tablename__ = "task_owners"

    task_id: int = Field(foreign_key="tasks.id", primary_key=True, ondelete="CASCADE")
    user_id: int = Field(foreign_key="users.id", primary_key=True, ondelete="CASCADE")
    created_at: datetime = _ts()


class Counters(SQLModel):
    """The counters a round and each user in a round keep: each is a count of examples in some state, kept in the
    same transaction as the change (see ``dynaforge.services.counters.contribution``)."""

    collected: int = Field(default=0)
    fooled: int = Field(default=0)
    verified_fooled: int = Field(default=0)
    accepted: int = Field(default=0)
    rejected: int = Field(default=0)
    flagged: int = Field(default=0)
    retracted: int = Field(default=0)
    pending: int = Field(default=0)


class Round(Counters, table=True):
    __tablename__ = "rounds"
    __table_args__ = (sa.UniqueConstraint("task_id", "number", name="uq_rounds_task_number"),)

    id: int = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="tasks.id", index=True, ondelete="CASCADE")
    number: int
    description: str = Field(default="")
    target_models: list = _json(list)
    ensemble_rule: str = Field(default="majority", max_length=20)
    #: the registry entry (``registered_models.id``) of each target model, in the order of ``target_models``
    target_registry_ids: list = _json(list)
    secret: str = Field(max_length=64)
    started_at: datetime = _ts()
    ended_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))


class RoundUserStats(Counters, table=True):
    """Counters of one user in one round, kept in the same transaction as the examples they count."""

    __tablename__ = "round_user_stats"

    round_id: int = Field(foreign_key="rounds.id", primary_key=True, ondelete="CASCADE")
    user_id: int = Field(foreign_key="users.id", primary_key=True, ondelete="CASCADE")


class Context(SQLModel, table=True):
    __tablename__ = "contexts"
    __table_args__ = (sa.Index("ix_contexts_round_used", "round_id", "total_used", "id"),)

    id: int = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="tasks.id", index=True, ondelete="CASCADE")
    round_id: int = Field(foreign_key="rounds.id", ondelete="CASCADE")
    fields: dict = _json()
    tag: str | None = Field(default=None, max_length=100)
    total_used: int = Field(default=0)
    total_fooled: int = Field(default=0)
    created_at: datetime = _ts()
    # Contexts never change (examples point into their text, and processes cache them): an owner's edit retires
    # the row and adds its successor; a retired context is no longer served or copied, and stays for its examples.
    retired_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    successor_id: int | None = Field(default=None)


class Example(SQLModel, table=True):
    __tablename__ = "examples"
    __table_args__ = (
        sa.Index("ix_examples_task_id_desc", "task_id", "id"),
        sa.Index("ix_examples_round_user", "round_id", "user_id"),
        sa.Index("ix_examples_status", "status"),
        sa.Index("ix_examples_to_validate", "task_id", "status", "fooled", "validations_total", "id"),
        sa.Index("ix_examples_task_user_created", "task_id", "user_id", "created_at"),
        sa.Index("ix_examples_round_source", "round_id", "source"),
        sa.Index("ix_examples_task_fooled_at", "task_id", "fooled_at", "id"),
    )

    id: int = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="tasks.id", ondelete="CASCADE")
    round_id: int = Field(foreign_key="rounds.id", ondelete="CASCADE")
    context_id: int | None = Field(default=None, foreign_key="contexts.id", ondelete="SET NULL")
    user_id: int = Field(foreign_key="users.id", ondelete="CASCADE")
    fields: dict = _json()
    prediction: dict | None = _json(lambda: None, nullable=True)
    model_predictions: list = _json(list)
    fooled: bool | None = Field(default=None)
    #: when it was found fooling (modelFooled was announced): at once, or once its pending prediction or its verdict
    #: came; the order a resumed modelFooled subscription replays in. Null for one that never fooled, or imported.
    fooled_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    status: str = Field(default=ExampleStatus.CREATED, max_length=24)
    tag: str | None = Field(default=None, max_length=100)
    time_taken_ms: int | None = Field(default=None)
    inference_ms: float | None = Field(default=None)
    validations_correct: int = Field(default=0)
    validations_incorrect: int = Field(default=0)
    validations_flagged: int = Field(default=0)
    validations_total: int = Field(default=0)
    flag_reason: str | None = Field(default=None, max_length=2000)
    decided_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    # An owner applied a validator's corrected target: the example keeps its own fields beside it.
    corrected_target: dict | None = _json(lambda: None, nullable=True)
    correction_id: int | None = Field(default=None)  # the validation it came from
    #: who wrote it: HUMAN, ASSISTED (a person, from a machine suggestion) or MACHINE (an adversary's candidate)
    source: str = Field(default="HUMAN", max_length=16, sa_column_kwargs={"server_default": "HUMAN"})
    adversary: str | None = Field(default=None, max_length=60)  # the adversary behind an ASSISTED or MACHINE one
    suggestion_id: int | None = Field(default=None)  # the suggestion an ASSISTED example was written from
    #: a PENDING_PREDICTION example: why it waits (the last failure, whole; readers without admin rights get it
    #: without the server's paths), and how many times in a row its round's target answered it unreadably (retries
    #: stop at UNUSABLE_OUTPUT_ATTEMPTS until the round's targets change)
    pending_reason: str | None = Field(default=None, max_length=2000)
    prediction_attempts: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    #: a task whose judge model or validators decide (dynaforge.services.verdicts): who decided and how, the judge's
    #: rationale, an owner's overruling; null for a task whose rule decides at once
    verdict: dict | None = _json(lambda: None, nullable=True)
    #: its author sent it although it is this close to an earlier fooling example of the round
    #: (dynaforge.services.near_duplicates): that example's id (null once it is deleted) and the estimated similarity
    near_duplicate_of: int | None = Field(default=None)
    near_duplicate_similarity: float | None = Field(default=None)
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class Validation(SQLModel, table=True):
    __tablename__ = "validations"
    __table_args__ = (sa.UniqueConstraint("example_id", "user_id", name="uq_validations_example_user"),)

    id: int = Field(default=None, primary_key=True)
    example_id: int = Field(foreign_key="examples.id", index=True, ondelete="CASCADE")
    user_id: int = Field(foreign_key="users.id", index=True, ondelete="CASCADE")
    label: str = Field(max_length=16)
    corrected_target: dict | None = _json(lambda: None, nullable=True)
    reason: str | None = Field(default=None, max_length=2000)
    by_owner: bool = Field(default=False)
    time_taken_ms: int | None = Field(default=None)  # how long the validator took, as the client measured it
    created_at: datetime = _ts()


class ValidationSkip(SQLModel, table=True):
    """A validator passed over an example: their queue serves it again only after everything else."""

    __tablename__ = "validation_skips"

    user_id: int = Field(foreign_key="users.id", primary_key=True, ondelete="CASCADE")
    example_id: int = Field(foreign_key="examples.id", primary_key=True, index=True, ondelete="CASCADE")
    skipped_at: datetime = _ts()


class ExampleSketch(SQLModel, table=True):
    """One value of a fooling example's MinHash sketch (the bottom-k hashes of its text's shingles), indexed per
    round so that a new example finds the earlier ones close to it (dynaforge.services.near_duplicates)."""

    __tablename__ = "example_sketches"
    __table_args__ = (sa.Index("ix_example_sketches_round_value", "round_id", "value"),)

    example_id: int = Field(foreign_key="examples.id", primary_key=True, ondelete="CASCADE")
    value: int = Field(primary_key=True, sa_type=sa.BigInteger)
    round_id: int = Field(foreign_key="rounds.id", ondelete="CASCADE")
    context_id: int | None = Field(default=None)  # examples are compared on the same context only


class TutorialItem(SQLModel, table=True):
    """A decided example an owner put in the task's tutorial, with the verdict a trainee should give and why
    (dynaforge.services.tutorial)."""

    __tablename__ = "tutorial_items"

    example_id: int = Field(foreign_key="examples.id", primary_key=True, ondelete="CASCADE")
    task_id: int = Field(foreign_key="tasks.id", index=True, ondelete="CASCADE")
    expected: str = Field(max_length=16)  # CORRECT or INCORRECT
    explanation: str = Field(default="", max_length=2000)
    added_by: int | None = Field(default=None, foreign_key="users.id", ondelete="SET NULL")
    added_at: datetime = _ts()


class TutorialAnswer(SQLModel, table=True):
    """A trainee's answer to a tutorial item in their current attempt: practice, never a vote or an example."""

    __tablename__ = "tutorial_answers"

    user_id: int = Field(foreign_key="users.id", primary_key=True, ondelete="CASCADE")
    example_id: int = Field(foreign_key="tutorial_items.example_id", primary_key=True, ondelete="CASCADE")
    task_id: int = Field(foreign_key="tasks.id", index=True, ondelete="CASCADE")
    label: str = Field(max_length=16)
    correct: bool
    answered_at: datetime = _ts()


class Qualification(SQLModel, table=True):
    """A person's standing in a task's tutorial: passed (and when), their best score, attempts."""

    __tablename__ = "qualifications"

    task_id: int = Field(foreign_key="tasks.id", primary_key=True, ondelete="CASCADE")
    user_id: int = Field(foreign_key="users.id", primary_key=True, ondelete="CASCADE")
    passed_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    best_score: float | None = Field(default=None)
    attempts: int = Field(default=0)


class ValidatorWeight(SQLModel, table=True):
    """How much a validator's votes count in a task's quorum, as its owners set it (1 when no row says otherwise);
    0 excludes the validator from the task's crowd queue (dynaforge.services.validator_quality)."""

    __tablename__ = "validator_weights"

    task_id: int = Field(foreign_key="tasks.id", primary_key=True, ondelete="CASCADE")
    user_id: int = Field(foreign_key="users.id", primary_key=True, index=True, ondelete="CASCADE")
    weight: float = Field(default=1.0)
    set_by: int | None = Field(default=None, foreign_key="users.id", ondelete="SET NULL")
    set_at: datetime = _ts()


class Media(SQLModel, table=True):
    """An uploaded image, cleaned and stored by the SHA-256 of its stored bytes (dynaforge.media): one row per
    uploader, so that each may read back what they uploaded."""

    __tablename__ = "media"
    __table_args__ = (sa.UniqueConstraint("sha256", "uploaded_by", name="uq_media_sha256_uploader"),)

    id: int = Field(default=None, primary_key=True)
    sha256: str = Field(max_length=64, index=True)
    content_type: str = Field(max_length=40)
    width: int
    height: int
    size: int  # bytes stored
    source_format: str = Field(max_length=16)  # what it was uploaded as (PNG, JPEG, ...)
    uploaded_by: int = Field(foreign_key="users.id", ondelete="CASCADE")
    created_at: datetime = _ts()


class ExampleMedia(SQLModel, table=True):
    """An image an example's fields name (an ImageField's ``{"media": key}``): whoever may read the example may read
    the image (dynaforge.services.media.visible_media)."""

    __tablename__ = "example_media"

    example_id: int = Field(foreign_key="examples.id", primary_key=True, ondelete="CASCADE")
    sha256: str = Field(max_length=64, primary_key=True, index=True)


class CrowdStudy(SQLModel, table=True):
    """A task's study on a crowd platform (dynaforge.services.crowd): its participants join through its link."""

    __tablename__ = "crowd_studies"
    __table_args__ = (sa.UniqueConstraint("platform", "external_id", name="uq_crowd_studies_platform_external"),)

    id: int = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="tasks.id", index=True, ondelete="CASCADE")
    platform: str = Field(max_length=40)
    external_id: str = Field(max_length=64)  # the platform's id for the study
    name: str = Field(max_length=200)
    completion_code: str = Field(max_length=64)
    currency: str = Field(max_length=3)
    #: pay in the currency's minor units (pence, cents)
    pay_per_verified_fooling: int = Field(default=0)
    pay_per_agreeing_validation: int = Field(default=0)
    #: the work a participant does before completeCrowdStudy gives the completion code
    minimum_examples: int = Field(default=0)
    minimum_validations: int = Field(default=0)
    is_open: bool = Field(default=True)
    #: set while a payout is under way (one at a time, across replicas)
    paying_since: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    created_by: int | None = Field(default=None, foreign_key="users.id", ondelete="SET NULL")
    created_at: datetime = _ts()


class CrowdParticipant(SQLModel, table=True):
    """A participant of a crowd study and their pseudonymous account (one account per participant and study)."""

    __tablename__ = "crowd_participants"
    __table_args__ = (sa.UniqueConstraint("study_id", "external_id", name="uq_crowd_participants_study_external"),)

    id: int = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="crowd_studies.id", index=True, ondelete="CASCADE")
    user_id: int = Field(foreign_key="users.id", ondelete="CASCADE", sa_column_kwargs={"unique": True})
    external_id: str = Field(max_length=64)  # the platform's id for the person
    session_id: str | None = Field(default=None, max_length=64)  # the platform's id for their attempt
    joined_at: datetime = _ts()
    completed_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))


class CrowdPayout:
    SENT = "SENT"  # the platform confirmed it
    UNCERTAIN = "UNCERTAIN"  # the request may have reached the platform: counted as paid until someone checks
    MANUAL = "MANUAL"  # an owner paid the bonus file on the platform and recorded it here
    ALL = (SENT, UNCERTAIN, MANUAL)


class CrowdPayment(SQLModel, table=True):
    """What one payout gave one participant (a payout the platform refused leaves no rows)."""

    __tablename__ = "crowd_payments"

    id: int = Field(default=None, primary_key=True)
    participant_id: int = Field(foreign_key="crowd_participants.id", index=True, ondelete="CASCADE")
    amount: int  # minor units
    status: str = Field(max_length=16)  # CrowdPayout
    reference: str | None = Field(default=None, max_length=100)  # the platform's id for the payout
    paid_by: int | None = Field(default=None, foreign_key="users.id", ondelete="SET NULL")
    created_at: datetime = _ts()


class Suggestion(SQLModel, table=True):
    """An edit an adversary suggested to an annotator's draft (``suggestEdits``); an example written from it records
    it and counts as ASSISTED. Kept so that the claim "written from a suggestion" can be checked, never trusted."""

    __tablename__ = "suggestions"
    __table_args__ = (sa.Index("ix_suggestions_user_created", "user_id", "created_at"),)

    id: int = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="tasks.id", ondelete="CASCADE")
    round_id: int = Field(foreign_key="rounds.id", ondelete="CASCADE")
    user_id: int = Field(foreign_key="users.id", ondelete="CASCADE")
    context_id: int | None = Field(default=None, foreign_key="contexts.id", ondelete="SET NULL")
    adversary: str = Field(max_length=60)
    draft: dict = _json()
    draft_prediction: dict = _json()  # the target's answer on the draft
    fields: dict = _json()
    prediction: dict = _json()  # the target's answer on the suggestion (it fooled the target)
    edits: list = _json(list)
    rationale: str = Field(default="", max_length=2000)
    created_at: datetime = _ts()


class AdversaryRunStatus:
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    DONE = "DONE"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    ALL = (QUEUED, RUNNING, DONE, FAILED, CANCELLED)
    FINISHED = (DONE, FAILED, CANCELLED)


class AdversaryRun(SQLModel, table=True):
    """A ``generateCandidates`` run: an adversary over a round's contexts, within a budget of target queries."""

    __tablename__ = "adversary_runs"
    __table_args__ = (sa.Index("ix_adversary_runs_task_created", "task_id", "created_at"),)

    id: int = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="tasks.id", ondelete="CASCADE")
    round_id: int = Field(foreign_key="rounds.id", ondelete="CASCADE")
    adversary: str = Field(max_length=60)
    requested_by: int | None = Field(default=None, foreign_key="users.id", ondelete="SET NULL")
    budget: int  # target queries it may spend
    seed: int = Field(default=0)
    status: str = Field(default=AdversaryRunStatus.QUEUED, max_length=16)
    queries: int = Field(default=0)  # target queries spent
    items_total: int = Field(default=0)  # contexts and drafts to attack
    items_done: int = Field(default=0)
    candidates: int = Field(default=0)  # fooling candidates stored as MACHINE examples
    error: str | None = Field(default=None, max_length=2000)
    created_at: datetime = _ts()
    started_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    heartbeat_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))  # its last progress
    finished_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))


class ProposalStatus:
    PENDING = "PENDING"
    ACCEPTED = "ACCEPTED"
    DECLINED = "DECLINED"

    ALL = (PENDING, ACCEPTED, DECLINED)


class TaskProposal(SQLModel, table=True):
    """A user asks to run a task; an admin accepts it (the task's plugin must be installed) or declines it."""

    __tablename__ = "task_proposals"

    id: int = Field(default=None, primary_key=True)
    user_id: int = Field(foreign_key="users.id", index=True, ondelete="CASCADE")
    code: str = Field(max_length=40)
    name: str = Field(max_length=200)
    description: str = Field(default="", max_length=5000)
    #: a declared task's definition (dynaforge.tasks.declarative), accepted by declaring it; None: a plugin's task
    definition: dict | None = Field(default=None, sa_column_kwargs={"nullable": True}, sa_type=JSONType)
    status: str = Field(default=ProposalStatus.PENDING, max_length=16)
    decision_note: str | None = Field(default=None, max_length=2000)
    decided_by: int | None = Field(default=None, foreign_key="users.id", ondelete="SET NULL")
    decided_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    created_at: datetime = _ts()


class DeclaredTaskRow(SQLModel, table=True):
    """A task declared as data (dynaforge.tasks.declarative) by an admin: loaded by every process beside the plugins'
    tasks, no restart needed. ``version`` counts its updates."""

    __tablename__ = "declared_tasks"

    id: int = Field(default=None, primary_key=True)
    code: str = Field(max_length=40, unique=True)
    definition: dict = _json()
    version: int = Field(default=1)
    created_by: int | None = Field(default=None, foreign_key="users.id", ondelete="SET NULL")
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


# --------------------------------------------------------------------------- model evaluation


class DatasetAccess:
    """Who sees a data set: SCORING sets rank models on the leaderboard, STANDARD ones may be downloaded, HIDDEN
    ones are scored for owners only. Gold targets of SCORING and HIDDEN sets never leave the server except to the
    task's owners and admins."""

    SCORING = "SCORING"
    STANDARD = "STANDARD"
    HIDDEN = "HIDDEN"

    ALL = (SCORING, STANDARD, HIDDEN)


class Dataset(SQLModel, table=True):
    """A frozen set of examples of one task: built from a round's accepted examples (one split of it) or uploaded
    through the task's importers. Perturbed copies point at their source with ``parent_id`` and name their
    perturbation and its kind; ``source`` is ``perturbed`` for the platform's copies, ``upload`` for an owner's."""

    __tablename__ = "datasets"
    __table_args__ = (sa.UniqueConstraint("task_id", "name", name="uq_datasets_task_name"),)

    id: int = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="tasks.id", index=True, ondelete="CASCADE")
    name: str = Field(max_length=100)
    description: str = Field(default="", max_length=5000)
    access: str = Field(default=DatasetAccess.SCORING, max_length=16)
    source: str = Field(max_length=16)  # round | upload | perturbed
    round_id: int | None = Field(default=None, foreign_key="rounds.id", ondelete="SET NULL")
    split: str | None = Field(default=None, max_length=16)
    seed: int | None = Field(default=None)
    parent_id: int | None = Field(default=None, foreign_key="datasets.id", ondelete="CASCADE")
    perturbation: str | None = Field(default=None, max_length=60)
    perturbation_kind: str | None = Field(default=None, max_length=16)  # robustness | fairness
    #: a perturbed copy: what its perturbation does to the gold (kept | unknown | dropped; None: kept): only a copy
    #: that keeps it is scored against it
    perturbation_gold: str | None = Field(default=None, max_length=16)
    size: int = Field(default=0)
    #: a SCORING set's public part, as a share of its items (None: SCORING_PUBLIC_SHARE); 1 for a set whose gold
    #: is public anyway (a published benchmark). Its perturbed copies follow it.
    public_share: float | None = Field(default=None)
    created_by: int | None = Field(default=None, foreign_key="users.id", ondelete="SET NULL")
    created_at: datetime = _ts()


class DatasetItem(SQLModel, table=True):
    """One example of a data set, copied so that the set never changes under an evaluation."""

    __tablename__ = "dataset_items"
    __table_args__ = (sa.UniqueConstraint("dataset_id", "position", name="uq_dataset_items_position"),)

    id: int = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="datasets.id", ondelete="CASCADE")
    position: int
    example_id: int | None = Field(default=None, foreign_key="examples.id", ondelete="SET NULL")
    original_position: int | None = Field(default=None)  # perturbed copies: the item it was made from
    fields: dict = _json()


class ModelStatus:
    """Where a submitted model is: its evaluations' states rolled up."""

    SUBMITTED = "SUBMITTED"
    EVALUATING = "EVALUATING"
    DONE = "DONE"
    FAILED = "FAILED"

    ALL = (SUBMITTED, EVALUATING, DONE, FAILED)


class ModelRow(SQLModel, table=True):
    """A model submitted to a task's leaderboard: a backend and its configuration, or uploaded predictions."""

    __tablename__ = "models"
    __table_args__ = (sa.Index("ix_models_task_user_created", "task_id", "user_id", "created_at"),)

    id: int = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="tasks.id", ondelete="CASCADE")
    user_id: int = Field(foreign_key="users.id", ondelete="CASCADE")
    name: str = Field(max_length=100)
    backend: str | None = Field(default=None, max_length=60)  # None: predictions were uploaded
    config: dict = _json()
    card: dict = _json()
    published: bool = Field(default=False)
    anonymous: bool = Field(default=False)
    status: str = Field(default=ModelStatus.SUBMITTED, max_length=16)
    created_at: datetime = _ts()


class SubmissionAttempt(SQLModel, table=True):
    """One scored attempt at a task's leaderboard (a model, uploaded predictions or a data selection), kept when the
    model is deleted: the per-user, per-task allowance counts these, so that no delete, flag or failure gives an
    attempt back. ``model_id`` is the model it stored while that model exists."""

    __tablename__ = "submission_attempts"
    __table_args__ = (sa.Index("ix_submission_attempts_task_user_created", "task_id", "user_id", "created_at"),)

    id: int = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="tasks.id", ondelete="CASCADE")
    user_id: int = Field(foreign_key="users.id", ondelete="CASCADE")
    kind: str = Field(max_length=16)  # model | predictions | selection
    model_id: int | None = Field(default=None, foreign_key="models.id", ondelete="SET NULL")
    created_at: datetime = _ts()


class EvaluationStatus:
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    DONE = "DONE"
    FAILED = "FAILED"

    ALL = (QUEUED, RUNNING, DONE, FAILED)


class Evaluation(SQLModel, table=True):
    """One model on one data set: its state, progress and, when done, its measurements."""

    __tablename__ = "evaluations"
    __table_args__ = (sa.UniqueConstraint("model_id", "dataset_id", name="uq_evaluations_model_dataset"),)

    id: int = Field(default=None, primary_key=True)
    model_id: int = Field(foreign_key="models.id", index=True, ondelete="CASCADE")
    dataset_id: int = Field(foreign_key="datasets.id", index=True, ondelete="CASCADE")
    status: str = Field(default=EvaluationStatus.QUEUED, max_length=16)
    progress: float = Field(default=0.0)
    metrics: dict = _json()
    details: dict = _json()  # intervals, per-slice metrics and gaps, robustness and fairness
    throughput: float | None = Field(default=None)
    memory_mb: float | None = Field(default=None)
    error: str | None = Field(default=None, max_length=4000)
    log_tail: str | None = Field(default=None, max_length=20000)
    attempts: int = Field(default=0)
    queued_at: datetime = _ts()
    started_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    finished_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))


class LeaderboardFork(SQLModel, table=True):
    """A named choice of leaderboard weights that a user saved (and may share by its id)."""

    __tablename__ = "leaderboard_forks"
    __table_args__ = (sa.UniqueConstraint("task_id", "user_id", "name", name="uq_leaderboard_forks_name"),)

    id: int = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="tasks.id", index=True, ondelete="CASCADE")
    user_id: int = Field(foreign_key="users.id", ondelete="CASCADE")
    name: str = Field(max_length=100)
    description: str = Field(default="", max_length=2000)
    metric_weights: dict = _json()
    dataset_weights: dict = _json()
    created_at: datetime = _ts()


class LeaderboardSnapshot(SQLModel, table=True):
    """A frozen copy of a leaderboard as it was computed, with the weights it was computed with."""

    __tablename__ = "leaderboard_snapshots"

    id: int = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="tasks.id", index=True, ondelete="CASCADE")
    user_id: int = Field(foreign_key="users.id", ondelete="CASCADE")
    name: str = Field(max_length=100)
    metric_weights: dict = _json()
    dataset_weights: dict = _json()
    rows: list = _json(list)
    created_at: datetime = _ts()


class EvaluationChunk(SQLModel, table=True):
    """The raw model outputs for one chunk of a data set's items (positions ``chunk * size`` onwards), written
    once: a job that restarts skips the chunks already here, so a killed worker leaves what a clean run leaves."""

    __tablename__ = "evaluation_chunks"

    evaluation_id: int = Field(foreign_key="evaluations.id", primary_key=True, ondelete="CASCADE")
    chunk: int = Field(primary_key=True)
    size: int
    outputs: list = _json(list)
    seconds: float = Field(default=0.0)
    created_at: datetime = _ts()


class WebhookDeliveryStatus:
    PENDING = "PENDING"
    DELIVERED = "DELIVERED"
    FAILED = "FAILED"

    ALL = (PENDING, DELIVERED, FAILED)


class Webhook(SQLModel, table=True):
    """A URL that receives a task's events, signed the Standard Webhooks way. The signing secret is never stored:
    it is derived from the server's secret key and ``secret_salt`` (a database alone does not reveal it), shown
    once when the webhook is created or its secret rotated."""

    __tablename__ = "webhooks"

    id: int = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="tasks.id", index=True, ondelete="CASCADE")
    user_id: int = Field(foreign_key="users.id", index=True, ondelete="CASCADE")
    url: str = Field(max_length=2000)
    events: list = _json(list)
    description: str = Field(default="", max_length=500)
    secret_salt: str = Field(max_length=64)
    active: bool = Field(default=True)
    created_at: datetime = _ts()


class WebhookDelivery(SQLModel, table=True):
    """One event sent (or being sent) to one webhook: what was sent, how many attempts, how the last one ended."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (sa.Index("ix_webhook_deliveries_webhook_created", "webhook_id", "id"),)

    id: int = Field(default=None, primary_key=True)
    webhook_id: int = Field(foreign_key="webhooks.id", ondelete="CASCADE")
    message_id: str = Field(max_length=64, sa_column_kwargs={"unique": True})  # the webhook-id header
    event: str = Field(max_length=40)
    body: str = Field(sa_type=sa.Text)
    status: str = Field(default=WebhookDeliveryStatus.PENDING, max_length=16)
    attempts: int = Field(default=0)
    response_status: int | None = Field(default=None)
    error: str | None = Field(default=None, max_length=2000)
    created_at: datetime = _ts()
    last_attempt_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    delivered_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))


class RegisteredModelOrigin:
    """Where a registry entry's model came from."""

    SHIPPED = "SHIPPED"  # the weights a task plugin's package ships
    STORE = "STORE"  # what `dynaforge train` put in the model store (its current version)
    CONFIGURED = "CONFIGURED"  # a configuration an owner or admin set (an endpoint, an uploaded artifact, ...)
    TRAINED = "TRAINED"  # a training job's candidate
    ALL = (SHIPPED, STORE, CONFIGURED, TRAINED)


class RegisteredModel(SQLModel, table=True):
    """The model registry: one immutable record per model version a task has targeted or trained. ``config`` is
    pinned (a weights digest where there are weights), so a round says exactly what it ran against."""

    __tablename__ = "registered_models"
    id: int = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="tasks.id", index=True, ondelete="CASCADE")
    name: str = Field(max_length=100)
    backend: str = Field(max_length=60)
    config: dict = _json()
    spec_sha256: str = Field(max_length=64)  # of the canonical (backend, config): the same model, the same hash
    weights: str | None = Field(default=None, max_length=64)  # the model store digest of its weights, if any
    origin: str = Field(max_length=16)
    recipe: str | None = Field(default=None, max_length=100)
    hyperparameters: dict = _json()
    seed: int | None = Field(default=None)
    training_data: dict = _json()  # data sets (id, name, size, sha256), base data, example counts
    metrics: dict = _json()  # what the recipe measured on its held-out data
    parent_id: int | None = Field(default=None, foreign_key="registered_models.id", ondelete="SET NULL")
    model_id: int | None = Field(default=None, foreign_key="models.id", ondelete="SET NULL")  # its evaluations
    training_job_id: int | None = Field(default=None, sa_column_kwargs={"unique": True})
    created_by: int | None = Field(default=None, foreign_key="users.id", ondelete="SET NULL")
    created_at: datetime = _ts()


class TrainingStatus:
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    ALL = (QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED)
    FINISHED = (SUCCEEDED, FAILED, CANCELLED)


class TrainingJob(SQLModel, table=True):
    """One ``trainCandidateModel`` request: a recipe trained on data sets in a job, into a registered candidate."""

    __tablename__ = "training_jobs"
    id: int = Field(default=None, primary_key=True)
    task_id: int = Field(foreign_key="tasks.id", index=True, ondelete="CASCADE")
    user_id: int | None = Field(default=None, foreign_key="users.id", ondelete="SET NULL")
    recipe: str = Field(max_length=100)
    hyperparameters: dict = _json()
    seed: int = Field(default=0)
    dataset_ids: list = _json(list)
    include_base_data: bool = Field(default=False)
    #: the development set the job tunes on (``tuneOn``), and the combinations of hyper-parameters it tries
    tuning_dataset_id: int | None = Field(default=None, foreign_key="datasets.id", ondelete="SET NULL")
    tuning_grid: list = _json(list)
    parent_id: int | None = Field(default=None, foreign_key="registered_models.id", ondelete="SET NULL")
    status: str = Field(default=TrainingStatus.QUEUED, max_length=16)
    progress: float = Field(default=0.0)
    stage: str = Field(default="", max_length=100)
    error: str | None = Field(default=None, max_length=4000)
    log_tail: str | None = Field(default=None, max_length=20000)
    attempts: int = Field(default=0)
    cancel_requested: bool = Field(default=False)
    candidate_id: int | None = Field(default=None, foreign_key="registered_models.id", ondelete="SET NULL")
    created_at: datetime = _ts()
    started_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
    finished_at: datetime | None = Field(default=None, sa_type=sa.DateTime(timezone=True))
