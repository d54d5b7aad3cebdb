"""The task contract: field types, roles, the Task base class and the objects plugins register."""

from dynaforge.tasks.base import (
    DataSelection,
    Judge,
    Metric,
    MetricItem,
    ModelSpec,
    Perturbation,
    Slice,
    Task,
    TrainingRecipe,
    VerdictExplanation,
)
from dynaforge.tasks.fields import (
    BooleanField,
    ChoiceField,
    Field,
    NumberField,
    ReferencesField,
    Role,
    SpanField,
    TextField,
)

__all__ = [
    "BooleanField",
    "ChoiceField",
    "DataSelection",
    "Field",
    "Judge",
    "Metric",
    "MetricItem",
    "ModelSpec",
    "NumberField",
    "Perturbation",
    "ReferencesField",
    "Role",
    "Slice",
    "SpanField",
    "Task",
    "TextField",
    "TrainingRecipe",
    "VerdictExplanation",
]
