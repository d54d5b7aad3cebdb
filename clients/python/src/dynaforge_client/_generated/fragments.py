from datetime import datetime
from typing import Any, Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import (
    AdversaryRunStatus,
    DatasetAccess,
    DatasetSource,
    DatasetSplit,
    EvaluationStatus,
    ExampleSource,
    ExampleStatus,
    FieldRole,
    FieldType,
    MetricDirection,
    ModelStatus,
    PerturbationKind,
    ScoredPart,
    ValidationLabel,
    VerdictSource,
)


class AdversaryRunFields(BaseModel):
    id: str
    adversary: str
    round_number: int = Field(alias="roundNumber")
    status: AdversaryRunStatus
    budget: int
    seed: int
    queries: int
    items_total: int = Field(alias="itemsTotal")
    items_done: int = Field(alias="itemsDone")
    candidates: int
    error: Optional[str]
    created_at: datetime = Field(alias="createdAt")
    started_at: Optional[datetime] = Field(alias="startedAt")
    finished_at: Optional[datetime] = Field(alias="finishedAt")


class CrowdWorkFields(BaseModel):
    examples: int
    fooled: int
    verified_fooling: int = Field(alias="verifiedFooling")
    pending_examples: int = Field(alias="pendingExamples")
    validations: int
    agreeing_validations: int = Field(alias="agreeingValidations")
    pending_validations: int = Field(alias="pendingValidations")
    time_taken_ms: int = Field(alias="timeTakenMs")
    earned: int
    paid: int
    uncertain: int
    owed: int


class CrowdParticipantFields(BaseModel):
    username: str
    external_id: str = Field(alias="externalId")
    joined_at: datetime = Field(alias="joinedAt")
    completed_at: Optional[datetime] = Field(alias="completedAt")
    work: "CrowdParticipantFieldsWork"


class CrowdParticipantFieldsWork(CrowdWorkFields):
    pass


class CrowdPlatformFields(BaseModel):
    name: str
    title: str
    parameters: list[str]
    pays: bool


class CrowdStudyFields(BaseModel):
    id: str
    task_code: str = Field(alias="taskCode")
    platform: str
    external_id: str = Field(alias="externalId")
    name: str
    link_path: Optional[str] = Field(alias="linkPath")
    completion_code: str = Field(alias="completionCode")
    currency: str
    pay_per_verified_fooling: int = Field(alias="payPerVerifiedFooling")
    pay_per_agreeing_validation: int = Field(alias="payPerAgreeingValidation")
    minimum_examples: int = Field(alias="minimumExamples")
    minimum_validations: int = Field(alias="minimumValidations")
    is_open: bool = Field(alias="isOpen")
    created_at: datetime = Field(alias="createdAt")
    earned: int
    owed: int
    bonus_file: Optional[str] = Field(alias="bonusFile")
    participants: list["CrowdStudyFieldsParticipants"]


class CrowdStudyFieldsParticipants(CrowdParticipantFields):
    pass


class DatasetFields(BaseModel):
    id: str
    name: str
    description: str
    access: DatasetAccess
    source: DatasetSource
    split: Optional[DatasetSplit]
    size: int
    created_at: datetime = Field(alias="createdAt")


class MetricFields(BaseModel):
    name: str
    value: float
    direction: MetricDirection
    interval: Optional["MetricFieldsInterval"]


class MetricFieldsInterval(BaseModel):
    low: float
    high: float


class EvaluationFields(BaseModel):
    id: str
    status: EvaluationStatus
    progress: float
    queue_position: Optional[int] = Field(alias="queuePosition")
    throughput: Optional[float]
    memory_gib: Optional[float] = Field(alias="memoryGib")
    generation: Optional["EvaluationFieldsGeneration"]
    item_count: Optional[int] = Field(alias="itemCount")
    unusable_outputs: Optional[int] = Field(alias="unusableOutputs")
    error: Optional[str]
    scored_part: ScoredPart = Field(alias="scoredPart")
    dataset: "EvaluationFieldsDataset"
    metrics: list["EvaluationFieldsMetrics"]
    slices: list["EvaluationFieldsSlices"]
    perturbations: list["EvaluationFieldsPerturbations"]
    hardware: Optional["EvaluationFieldsHardware"]


class EvaluationFieldsGeneration(BaseModel):
    output_tokens: int = Field(alias="outputTokens")
    tokens_per_second: Optional[float] = Field(alias="tokensPerSecond")
    time_to_first_token_ms: Optional[float] = Field(alias="timeToFirstTokenMs")
    time_to_first_token_p_90_ms: Optional[float] = Field(alias="timeToFirstTokenP90Ms")


class EvaluationFieldsDataset(BaseModel):
    id: str
    name: str
    split: Optional[DatasetSplit]
    size: int


class EvaluationFieldsMetrics(MetricFields):
    pass


class EvaluationFieldsSlices(BaseModel):
    slice_: str = Field(alias="slice")
    groups: list["EvaluationFieldsSlicesGroups"]
    gaps: list["EvaluationFieldsSlicesGaps"]


class EvaluationFieldsSlicesGroups(BaseModel):
    group: str
    size: int
    metrics: list["EvaluationFieldsSlicesGroupsMetrics"]


class EvaluationFieldsSlicesGroupsMetrics(BaseModel):
    name: str
    value: float


class EvaluationFieldsSlicesGaps(BaseModel):
    metric: str
    gap: Optional[float]
    worst_group: Optional[str] = Field(alias="worstGroup")
    worst_value: Optional[float] = Field(alias="worstValue")
    overall: Optional[float]
    groups_compared: int = Field(alias="groupsCompared")


class EvaluationFieldsPerturbations(BaseModel):
    perturbation: str
    kind: PerturbationKind
    consistency: float
    metrics: list["EvaluationFieldsPerturbationsMetrics"]


class EvaluationFieldsPerturbationsMetrics(BaseModel):
    name: str
    value: float


class EvaluationFieldsHardware(BaseModel):
    cpu: str
    cores: Optional[int]
    memory_gb: Optional[float] = Field(alias="memoryGb")
    accelerator: Optional[str]
    machine: str


class PredictionFields(BaseModel):
    fields: Any
    label: Optional[str]
    span: Optional["PredictionFieldsSpan"]
    probabilities: Optional[list["PredictionFieldsProbabilities"]]
    confidence: Optional[float]
    generation: Optional["PredictionFieldsGeneration"]


class PredictionFieldsSpan(BaseModel):
    text: str
    start: int


class PredictionFieldsProbabilities(BaseModel):
    label: str
    probability: float


class PredictionFieldsGeneration(BaseModel):
    text: str
    tokens: Optional[int]
    time_to_first_token_ms: Optional[float] = Field(alias="timeToFirstTokenMs")
    total_ms: Optional[float] = Field(alias="totalMs")
    finish_reason: Optional[str] = Field(alias="finishReason")


class ExampleFields(BaseModel):
    id: str
    fields: Any
    fooled: Optional[bool]
    status: ExampleStatus
    tag: Optional[str]
    created_at: datetime = Field(alias="createdAt")
    near_duplicate: Optional["ExampleFieldsNearDuplicate"] = Field(
        alias="nearDuplicate"
    )
    prediction: Optional["ExampleFieldsPrediction"]
    round: "ExampleFieldsRound"
    context: Optional["ExampleFieldsContext"]
    author: Optional["ExampleFieldsAuthor"]
    votes: "ExampleFieldsVotes"
    source: Optional[ExampleSource]
    adversary: Optional[str]
    verdict: Optional["ExampleFieldsVerdict"]


class ExampleFieldsNearDuplicate(BaseModel):
    similarity: float


class ExampleFieldsPrediction(PredictionFields):
    pass


class ExampleFieldsRound(BaseModel):
    number: int


class ExampleFieldsContext(BaseModel):
    id: str
    fields: Any


class ExampleFieldsAuthor(BaseModel):
    username: str


class ExampleFieldsVotes(BaseModel):
    correct: int
    incorrect: int
    flagged: int


class ExampleFieldsVerdict(BaseModel):
    decided_by: VerdictSource = Field(alias="decidedBy")
    decided: bool
    fooled: Optional[bool]
    rationale: Optional[str]
    judge_model: Optional[str] = Field(alias="judgeModel")
    last_error: Optional[str] = Field(alias="lastError")
    overruled: bool
    overrule_reason: Optional[str] = Field(alias="overruleReason")


class ModelFields(BaseModel):
    id: str
    name: str
    backend: Optional[str]
    status: ModelStatus
    published: bool
    anonymous: bool
    created_at: datetime = Field(alias="createdAt")
    card: "ModelFieldsCard"
    task: "ModelFieldsTask"


class ModelFieldsCard(BaseModel):
    parameters: Optional[int]
    license: Optional[str]
    paper: Optional[str]
    description: Optional[str]
    training_data: Optional[str] = Field(alias="trainingData")


class ModelFieldsTask(BaseModel):
    code: str


class StatsFields(BaseModel):
    collected: int
    fooled: int
    verified_fooled: int = Field(alias="verifiedFooled")
    accepted: int
    rejected: int
    flagged: int
    retracted: int
    pending: int
    vmer: Optional[float]
    fooling_rate: Optional[float] = Field(alias="foolingRate")


class SourceStatsFields(BaseModel):
    source: ExampleSource
    stats: "SourceStatsFieldsStats"


class SourceStatsFieldsStats(StatsFields):
    pass


class RoundFields(BaseModel):
    id: str
    number: int
    description: str
    started_at: datetime = Field(alias="startedAt")
    ended_at: Optional[datetime] = Field(alias="endedAt")
    target_models: list["RoundFieldsTargetModels"] = Field(alias="targetModels")
    stats: "RoundFieldsStats"
    stats_by_source: list["RoundFieldsStatsBySource"] = Field(alias="statsBySource")


class RoundFieldsTargetModels(BaseModel):
    name: str
    backend: str


class RoundFieldsStats(StatsFields):
    pass


class RoundFieldsStatsBySource(SourceStatsFields):
    pass


class TargetVerdictFields(BaseModel):
    fooled: bool
    gold_probability: Optional[float] = Field(alias="goldProbability")
    prediction: "TargetVerdictFieldsPrediction"


class TargetVerdictFieldsPrediction(PredictionFields):
    pass


class TaskFields(BaseModel):
    id: str
    code: str
    name: str
    description: str
    instructions: str
    labels: list[str]
    principal_metric: str = Field(alias="principalMetric")
    metrics: list[str]
    perturbations: list[str]
    fairness_slices: list[str] = Field(alias="fairnessSlices")
    active: bool
    fields: list["TaskFieldsFields"]
    current_round: Optional["TaskFieldsCurrentRound"] = Field(alias="currentRound")
    stats: "TaskFieldsStats"
    stats_by_source: list["TaskFieldsStatsBySource"] = Field(alias="statsBySource")


class TaskFieldsFields(BaseModel):
    name: str
    type_: FieldType = Field(alias="type")
    role: FieldRole
    description: str
    choices: Optional[list[str]]


class TaskFieldsCurrentRound(RoundFields):
    pass


class TaskFieldsStats(StatsFields):
    pass


class TaskFieldsStatsBySource(SourceStatsFields):
    pass


class TutorialFields(BaseModel):
    pass_mark: Optional[float] = Field(alias="passMark")
    required: bool
    passed: bool
    total: int
    answered: int
    correct: int
    score: Optional[float]
    attempts: int
    items: list["TutorialFieldsItems"]


class TutorialFieldsItems(BaseModel):
    example_id: str = Field(alias="exampleId")
    fields: Any
    context: Optional[Any]
    model_answer: Optional["TutorialFieldsItemsModelAnswer"] = Field(
        alias="modelAnswer"
    )
    your_answer: Optional[ValidationLabel] = Field(alias="yourAnswer")
    expected: Optional[ValidationLabel]
    explanation: Optional[str]
    correct: Optional[bool]


class TutorialFieldsItemsModelAnswer(PredictionFields):
    pass


class UserFields(BaseModel):
    id: str
    username: str
    is_admin: bool = Field(alias="isAdmin")


class ValidatorQualityFields(BaseModel):
    round_number: Optional[int] = Field(alias="roundNumber")
    alpha: Optional[float]
    paired_examples: int = Field(alias="pairedExamples")
    validators: list["ValidatorQualityFieldsValidators"]
    rounds: list["ValidatorQualityFieldsRounds"]


class ValidatorQualityFieldsValidators(BaseModel):
    user: "ValidatorQualityFieldsValidatorsUser"
    weight: float
    votes: int
    decided_votes: int = Field(alias="decidedVotes")
    agreed_votes: int = Field(alias="agreedVotes")
    agreement: Optional[float]
    owner_decided_votes: int = Field(alias="ownerDecidedVotes")
    agreed_with_owner_votes: int = Field(alias="agreedWithOwnerVotes")
    owner_agreement: Optional[float] = Field(alias="ownerAgreement")
    median_time_taken_ms: Optional[int] = Field(alias="medianTimeTakenMs")


class ValidatorQualityFieldsValidatorsUser(UserFields):
    pass


class ValidatorQualityFieldsRounds(BaseModel):
    round_number: int = Field(alias="roundNumber")
    alpha: Optional[float]
    paired_examples: int = Field(alias="pairedExamples")
    votes: int


AdversaryRunFields.model_rebuild()
CrowdWorkFields.model_rebuild()
CrowdParticipantFields.model_rebuild()
CrowdPlatformFields.model_rebuild()
CrowdStudyFields.model_rebuild()
DatasetFields.model_rebuild()
MetricFields.model_rebuild()
EvaluationFields.model_rebuild()
PredictionFields.model_rebuild()
ExampleFields.model_rebuild()
ModelFields.model_rebuild()
StatsFields.model_rebuild()
SourceStatsFields.model_rebuild()
RoundFields.model_rebuild()
TargetVerdictFields.model_rebuild()
TaskFields.model_rebuild()
TutorialFields.model_rebuild()
UserFields.model_rebuild()
ValidatorQualityFields.model_rebuild()
