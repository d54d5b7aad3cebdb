from enum import Enum


class AdversaryRunStatus(str, Enum):
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    DONE = "DONE"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class ContextStrategy(str, Enum):
    LEAST_USED = "LEAST_USED"
    UNIFORM = "UNIFORM"
    LEAST_FOOLED = "LEAST_FOOLED"
    VALIDATION_FAILED = "VALIDATION_FAILED"


class DatasetAccess(str, Enum):
    SCORING = "SCORING"
    STANDARD = "STANDARD"
    HIDDEN = "HIDDEN"


class DatasetSource(str, Enum):
    ROUND = "ROUND"
    UPLOAD = "UPLOAD"
    PERTURBED = "PERTURBED"


class DatasetSplit(str, Enum):
    TRAIN = "TRAIN"
    DEV = "DEV"
    TEST = "TEST"


class EvaluationStatus(str, Enum):
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    DONE = "DONE"
    FAILED = "FAILED"


class ExampleSource(str, Enum):
    HUMAN = "HUMAN"
    ASSISTED = "ASSISTED"
    MACHINE = "MACHINE"


class ExampleStatus(str, Enum):
    PENDING_PREDICTION = "PENDING_PREDICTION"
    PENDING_VERDICT = "PENDING_VERDICT"
    CREATED = "CREATED"
    RETRACTED = "RETRACTED"
    FLAGGED = "FLAGGED"
    ACCEPTED = "ACCEPTED"
    REJECTED = "REJECTED"


class FieldErrorCode(str, Enum):
    REQUIRED = "REQUIRED"
    TYPE = "TYPE"
    CHOICE = "CHOICE"
    RANGE = "RANGE"
    LENGTH = "LENGTH"
    FORMAT = "FORMAT"
    EMPTY = "EMPTY"
    UNIQUE = "UNIQUE"
    UNKNOWN = "UNKNOWN"
    NOT_FOUND = "NOT_FOUND"
    TOO_MANY = "TOO_MANY"
    ID = "ID"
    CURSOR = "CURSOR"
    EXCLUSIVE = "EXCLUSIVE"
    UNUSED = "UNUSED"
    NOT_ALLOWED = "NOT_ALLOWED"
    SPAN = "SPAN"
    ROLE = "ROLE"
    FILE = "FILE"
    CONFIG = "CONFIG"
    OTHER = "OTHER"


class FieldRole(str, Enum):
    CONTEXT = "CONTEXT"
    INPUT = "INPUT"
    TARGET = "TARGET"
    METADATA = "METADATA"


class FieldType(str, Enum):
    TEXT = "TEXT"
    REFERENCES = "REFERENCES"
    CHOICE = "CHOICE"
    SPAN = "SPAN"
    NUMBER = "NUMBER"
    BOOLEAN = "BOOLEAN"
    IMAGE = "IMAGE"
    OTHER = "OTHER"


class LeaderboardSort(str, Enum):
    DYNASCORE = "DYNASCORE"
    METRIC = "METRIC"


class MetricDirection(str, Enum):
    HIGHER = "HIGHER"
    LOWER = "LOWER"
    MEMORY = "MEMORY"


class ModelStatus(str, Enum):
    SUBMITTED = "SUBMITTED"
    EVALUATING = "EVALUATING"
    DONE = "DONE"
    FAILED = "FAILED"


class PerturbationKind(str, Enum):
    ROBUSTNESS = "ROBUSTNESS"
    FAIRNESS = "FAIRNESS"


class Quota(str, Enum):
    EXAMPLES_PER_DAY = "EXAMPLES_PER_DAY"
    SUBMISSIONS_PER_DAY = "SUBMISSIONS_PER_DAY"
    TRAINING_JOBS_PER_DAY = "TRAINING_JOBS_PER_DAY"
    GENERATION_QUERIES_PER_DAY = "GENERATION_QUERIES_PER_DAY"
    WEBHOOKS_PER_TASK = "WEBHOOKS_PER_TASK"


class ScoredPart(str, Enum):
    WHOLE = "WHOLE"
    PUBLIC = "PUBLIC"


class TimeBucket(str, Enum):
    HOUR = "HOUR"
    DAY = "DAY"


class ValidationLabel(str, Enum):
    CORRECT = "CORRECT"
    INCORRECT = "INCORRECT"
    FLAGGED = "FLAGGED"


class ValidationMode(str, Enum):
    CROWD = "CROWD"
    OWNER = "OWNER"


class VerdictSource(str, Enum):
    RULE = "RULE"
    JUDGE = "JUDGE"
    PEOPLE = "PEOPLE"
    AUTHOR = "AUTHOR"
