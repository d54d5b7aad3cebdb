"""Dynaforge: dynamic adversarial data collection and benchmarking.

The public API for plugin authors::

    from dynaforge import hookimpl, Task, TextField, ChoiceField, Role, ModelSpec
"""

from dynaforge.crowd import Arrival, Bonus, CrowdPlatform, PayoutFailed
from dynaforge.errors import FieldError, InvalidInput
from dynaforge.exporters import Export, ExportFormat, ExportPage, ExportSplit, WrittenExport
from dynaforge.hookspecs import hookimpl
from dynaforge.importers import ImportedExample, Importer, SkippedRow
from dynaforge.inference.backends import ModelBackend, Predictor
from dynaforge.tasks import (
    BooleanField,
    ChoiceField,
    DataSelection,
    Field,
    ImageField,
    Judge,
    Metric,
    MetricItem,
    ModelSpec,
    NumberField,
    Perturbation,
    ReferencesField,
    Role,
    Slice,
    SpanField,
    Task,
    TextField,
    TrainingRecipe,
    VerdictExplanation,
)

__version__ = "0.1.0"

__all__ = [
    "Arrival",
    "Bonus",
    "CrowdPlatform",
    "PayoutFailed",
    "BooleanField",
    "ChoiceField",
    "DataSelection",
    "Export",
    "ExportFormat",
    "ExportPage",
    "ExportSplit",
    "Field",
    "ImageField",
    "Judge",
    "FieldError",
    "ImportedExample",
    "Importer",
    "InvalidInput",
    "Metric",
    "MetricItem",
    "ModelBackend",
    "ModelSpec",
    "NumberField",
    "Perturbation",
    "ReferencesField",
    "Predictor",
    "Role",
    "SkippedRow",
    "Slice",
    "SpanField",
    "Task",
    "TextField",
    "TrainingRecipe",
    "VerdictExplanation",
    "WrittenExport",
    "hookimpl",
]
