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
    ImageField,
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
    "ImageField",
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
