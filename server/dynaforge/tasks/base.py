"""The task contract: what a plugin declares so the platform can collect, judge and score examples of its task.

A task author subclasses :class:`Task`, sets the class attributes, overrides the few methods whose defaults do not
fit, and registers an instance from a ``register_tasks`` hook. Nothing in the core names a task.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from os import PathLike
from typing import Any, ClassVar

from dynaforge.errors import FieldError, InvalidInput
from dynaforge.tasks.fields import ChoiceField, Field, ImageField, ReferencesField, Role, SpanField, TextField

#: The one rule for a task's code, wherever a task comes from (a plugin, a declaration, a proposal): it is used in
#: URLs, file names and the API, and never changes once examples exist.
TASK_CODE_PATTERN = r"^[a-z][a-z0-9_-]{1,39}$"
#: :data:`TASK_CODE_PATTERN` in words, for messages and descriptions.
TASK_CODE_RULE = "2 to 40 lowercase letters, digits, '_' or '-', starting with a letter"
_CODE_RE = re.compile(TASK_CODE_PATTERN)


def task_code_problem(code: object) -> str | None:
    """Why ``code`` cannot be a task's code, or None when it can (:data:`TASK_CODE_PATTERN`)."""
    if isinstance(code, str) and _CODE_RE.match(code):
        return None
    return f"code must match {TASK_CODE_PATTERN[1:-1]}: {TASK_CODE_RULE}"


@dataclass(frozen=True)
class ModelSpec:
    """A model the platform can run: a registered backend name and that backend's configuration."""

    name: str
    backend: str
    config: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "backend": self.backend, "config": dict(self.config)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelSpec:
        return cls(name=data["name"], backend=data["backend"], config=dict(data.get("config") or {}))


#: Names a metric may not take: the Dynascore adds these to every task's leaderboard itself.
RESERVED_METRIC_NAMES: tuple[str, ...] = ("throughput", "memory", "robustness", "fairness")


#: What a metric that reads items (``reads="items"``) may need each item to carry; items without it are skipped.
METRIC_NEEDS: tuple[str, ...] = ("prediction", "probabilities", "confidence")


@dataclass(frozen=True)
class MetricItem:
    """One scored item, as a metric with ``reads="items"`` receives it.

    ``fields`` are the item's field values as stored (context, input, target and metadata fields); ``gold`` and
    ``prediction`` are its target values as a plain metric receives them (``prediction`` None when the model gave no
    usable answer); ``probabilities`` maps each of the task's labels to the probability the model gave it (summing
    to 1; a label the model left out has 0), or is None when the prediction carries none that are usable (see
    :func:`dynaforge.evaluation.scoring.read_probabilities`); ``confidence`` is the prediction's own ``confidence``
    in [0, 1], or None; ``output`` is the whole prediction as ``read_model_output`` returned it, or None.
    """

    fields: Mapping[str, Any]
    gold: Any
    prediction: Any
    probabilities: Mapping[str, float] | None = None
    confidence: float | None = None
    output: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Metric:
    """A metric of predictions against gold, in one of two forms:

    - ``reads="targets"`` (the default): ``compute(golds, preds) -> float`` over the gold and predicted target
      values (a prediction is None for an item the model gave no usable answer for);
    - ``reads="items"``: ``compute(items) -> float`` over :class:`MetricItem` objects, for a metric that needs more
      than targets (the inputs, the probabilities). ``needs`` lists what an item must carry to be scored, among
      :data:`METRIC_NEEDS`: the others are skipped, and a set where every item is skipped has no value for the
      metric. A metric that needs ``probabilities`` applies to tasks whose one target is a choice field.

    ``task_code``: the one task the metric is written for (None: shared by every task that names it).

    ``takes_task``: ``compute`` (and ``statistic``) also receive ``task=``, the task being scored, to read its target
    field's settings (a text field's ``normalize`` rules, a number field's ``tolerance``).

    ``statistic``: for a corpus-level metric of targets (one that is not a mean over items, like BLEU), a faster form
    for the bootstrap: ``statistic(golds, preds) -> value(indices) -> float`` prepares what it can once (per-item
    sufficient statistics) and computes the metric on the items at ``indices`` (repeats allowed); it must equal
    ``compute`` on those items. Without it, an interval recomputes ``compute`` on each resample.
    """

    name: str
    compute: Callable[..., float]
    description: str = ""
    higher_is_better: bool = True
    _: KW_ONLY
    reads: str = "targets"
    needs: tuple[str, ...] = ()
    task_code: str | None = None
    takes_task: bool = False
    statistic: Callable[..., Callable[[Sequence[int]], float]] | None = None

    def __post_init__(self) -> None:
        if self.statistic is not None and self.reads != "targets":
            raise ValueError(f'metric {self.name}: only a metric with reads="targets" has a statistic')
        if self.reads not in ("targets", "items"):
            raise ValueError(f'metric {self.name}: reads must be "targets" or "items", not {self.reads!r}')
        if isinstance(self.needs, str) or not set(self.needs) <= set(METRIC_NEEDS):
            raise ValueError(f"metric {self.name}: needs must be a tuple among {', '.join(METRIC_NEEDS)}")
        object.__setattr__(self, "needs", tuple(self.needs))
        if self.needs and self.reads != "items":
            raise ValueError(f'metric {self.name}: only a metric with reads="items" has needs')


#: What a perturbation does to the gold of the copies it makes (:attr:`Perturbation.gold`):
#: ``kept``, the copy keeps its original's gold and it still holds (consistency and the task's metrics apply);
#: ``unknown``, the copy keeps its original's gold fields but they may no longer hold (it is scored for consistency
#: with its original only, never against that gold); ``dropped``, the copy's gold fields are removed (targets and
#: the fields that reveal them; consistency only).
GOLD_EFFECTS: tuple[str, ...] = ("kept", "unknown", "dropped")
#: Which of an example's text fields a perturbation changes (:attr:`Perturbation.scope`): each ``input`` field on its
#: own, or the ``example``'s context and input fields together.
PERTURBATION_SCOPES: tuple[str, ...] = ("input", "example")


@dataclass(frozen=True)
class Perturbation:
    """A seeded text transformation; ``kind`` is ``robustness`` or ``fairness``. ``apply(text, rng) -> text``.
    ``task_code``: the one task it is written for (None: shared by every task that names it).

    ``scope`` says which text fields of an example it changes (:meth:`Task.perturb`): ``"input"`` (the default)
    applies ``apply`` to each text input field on its own and leaves the context alone; ``"example"`` changes the
    context and input text fields together (a claim and its evidence, a question and its passage). An example-wide
    perturbation that must change its fields alike (one name substitution for the claim and the evidence) gives
    ``apply_example(texts, rng) -> texts``: ``texts`` maps each of those fields' names to its text (in the task's
    field order, with the text of a span into a changed field under the span's field name), and it returns the same
    keys; without it, ``apply`` runs on each text in turn with the one ``rng``. Giving ``apply_example`` implies
    ``scope="example"``, and ``apply`` stays its form on one text (what edits one text alone, such as the
    ``perturbation-search`` adversary, uses). ``gold`` (:data:`GOLD_EFFECTS`) says whether the copies' gold still
    holds.
    """

    name: str
    apply: Callable[[str, Any], str]
    kind: str = "robustness"
    description: str = ""
    _: KW_ONLY
    task_code: str | None = None
    scope: str = "input"
    apply_example: Callable[[dict[str, str], Any], dict[str, str]] | None = None
    gold: str = "kept"

    def __post_init__(self) -> None:
        if self.apply_example is not None and self.scope == "input":
            object.__setattr__(self, "scope", "example")
        if self.scope not in PERTURBATION_SCOPES:
            raise ValueError(
                f"perturbation {self.name}: scope must be one of {', '.join(PERTURBATION_SCOPES)}, not {self.scope!r}"
            )
        if self.gold not in GOLD_EFFECTS:
            raise ValueError(
                f"perturbation {self.name}: gold must be one of {', '.join(GOLD_EFFECTS)} (what happens to the "
                f"copies' gold), not {self.gold!r}"
            )

    def apply_texts(self, texts: dict[str, str], rng: Any) -> dict[str, str]:
        """The example-wide form: ``apply_example`` when given, else ``apply`` on each text in turn. Raises
        ``ValueError`` when ``apply_example`` returns other keys or a value that is not text."""
        if self.apply_example is None:
            return {name: self.apply(text, rng) for name, text in texts.items()}
        changed = self.apply_example(dict(texts), rng)
        if not isinstance(changed, dict) or set(changed) != set(texts):
            raise ValueError(
                f"perturbation {self.name}: apply_example must return the keys it was given ({', '.join(texts)})"
            )
        if not all(isinstance(text, str) for text in changed.values()):
            raise ValueError(f"perturbation {self.name}: apply_example must return text for every key")
        return changed


@dataclass(frozen=True)
class Slice:
    """A fairness slice: ``group(fields) -> str | None`` puts an example in a group (None: in no group).
    ``task_code``: the one task it is written for (None: shared by every task that names it)."""

    name: str
    group: Callable[[dict[str, Any]], str | None]
    task_code: str | None = None
    description: str = ""


def choice_labels(task: Task) -> tuple[str, ...] | None:
    """The labels of the task's one target when it is a choice field, which a prediction's ``probabilities`` are
    given over; None for any other task (several targets, a span, a number)."""
    targets = task.fields_with(Role.TARGET)
    if len(targets) == 1 and isinstance(targets[0], ChoiceField):
        return tuple(targets[0].options(task))
    return None


@dataclass(frozen=True)
class TrainingRecipe:
    """How the platform trains a new version of one of a task's models from its own examples.

    ``trainer`` is an import path ``pkg.module:function`` of
    ``train(data, out_dir, *, seed, report, progress, **hyperparameters) -> metrics``: ``data`` is a
    :class:`dynaforge.tasks.training.TrainingData` (the platform's accepted examples as the task's field values, and
    optionally ``data.base_dir``, a folder with the plugin's own base data, described by ``base_data``); the function
    writes the trained artifact (safetensors and JSON, no pickle) into ``out_dir``, calls ``report(fraction, stage)``
    now and then, and returns held-out metrics (a JSON object). It must be deterministic for a seed.

    ``factory`` is the ``python`` backend's factory that loads what ``trainer`` wrote: it takes the keyword argument
    ``weights_artifact`` (a model store digest) and, without it, loads ``shipped`` (the package's read-only weights)
    or what ``dynaforge train`` last put in the model store. ``hyperparameters`` are the defaults, and their types are
    the only types a caller may give. The platform imports ``trainer`` only in a training job's own process.

    ``tuning`` names the hyper-parameters a job may choose itself on a development set (``trainCandidateModel``'s
    ``tuneOn``, a round's dev split) and the values it tries for each, e.g. ``{"example_weight": (1.0, 2.0, 4.0)}``:
    the job trains once per combination of the values of those the caller left out (at most
    :data:`MAX_TUNING_TRIALS` in all), scores each on the development set and keeps the most accurate. A recipe
    that declares it must let ``factory`` take ``weights_dir`` (a folder ``trainer`` wrote), so that each trial can
    be loaded and scored in the job's own process.
    """

    name: str
    model: str  #: the model's name (a default target's name, and its folder in the model store)
    trainer: str
    factory: str
    description: str = ""
    hyperparameters: dict[str, bool | int | float | str] = field(default_factory=dict)
    base_data: str = ""  #: what a base data folder holds ("" when the recipe uses none)
    shipped: PathLike[str] | str | None = None  #: the package's own weights folder
    tuning: dict[str, tuple[bool | int | float | str, ...]] = field(default_factory=dict)

    def tuning_grid(self, given: Iterable[str] = ()) -> list[dict[str, Any]]:
        """The combinations a tuning job tries: every value of each :attr:`tuning` hyper-parameter not in ``given``
        (the caller's own), the defaults' combination first, then in declaration order; ``[{}]`` when nothing is
        left to tune."""
        fixed = set(given)
        names = [name for name in self.tuning if name not in fixed]
        combos: list[dict[str, Any]] = [{}]
        for name in names:
            values = list(dict.fromkeys(self.tuning[name]))
            default = self.hyperparameters.get(name)
            if default in values:  # the default first: the job keeps it unless another value does better
                values.remove(default)
                values.insert(0, default)
            combos = [{**combo, name: value} for combo in combos for value in values]
        return combos

    def model_spec(self, weights_artifact: str | None = None) -> ModelSpec:
        """The ``python`` backend spec that loads this recipe's model: ``weights_artifact`` (a digest in the model
        store) or, without it, what the factory loads by default."""
        kwargs = {"weights_artifact": weights_artifact} if weights_artifact else {}
        config: dict[str, Any] = {"factory": self.factory, **({"kwargs": kwargs} if kwargs else {})}
        return ModelSpec(name=self.model, backend="python", config=config)

    def loads(self, spec: ModelSpec) -> bool:
        """Whether ``spec`` is this recipe's model (any version of it)."""
        return spec.backend == "python" and spec.config.get("factory") == self.factory

    def check_hyperparameters(self, given: dict[str, Any]) -> tuple[dict[str, Any], list[FieldError]]:
        """The defaults updated by ``given``, and a :class:`FieldError` (on ``hyperparameters.NAME``) for each name
        the recipe lacks or value of another type than the default's (an int is accepted for a float)."""
        values, errors = dict(self.hyperparameters), []
        for name, value in given.items():
            where = f"hyperparameters.{name}"
            if name not in self.hyperparameters:
                known = ", ".join(sorted(self.hyperparameters)) or "none"
                message = f"recipe {self.name} has no hyper-parameter {name!r}; it has {known}"
                errors.append(FieldError(where, "unknown", message))
                continue
            default = self.hyperparameters[name]
            kind = type(default)
            ok = (
                isinstance(value, bool)
                if kind is bool
                else isinstance(value, (int, float)) and not isinstance(value, bool)
                if kind is float
                else isinstance(value, kind) and not isinstance(value, bool)
            )
            if not ok:
                what = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}[kind]
                errors.append(FieldError(where, "type", f"must be {what}, like the default {default!r}"))
                continue
            values[name] = float(value) if kind is float else value
        return values, errors


#: The most trainings one tuning job runs (the product of its values' counts).
MAX_TUNING_TRIALS = 6


def tuning_problems(recipe: TrainingRecipe) -> list[str]:
    """What is wrong with a recipe's :attr:`~TrainingRecipe.tuning` declaration."""
    problems = []
    where = f"training recipe {recipe.name}: tuning"
    for name, values in recipe.tuning.items():
        if name not in recipe.hyperparameters:
            problems.append(f"{where} names {name!r}, which is not one of its hyper-parameters")
            continue
        if not isinstance(values, tuple) or not values:
            problems.append(f"{where} of {name} must be a non-empty tuple of values")
            continue
        if any(recipe.check_hyperparameters({name: value})[1] for value in values):
            problems.append(f"{where} of {name}: every value must have the default's type")
    if recipe.tuning and len(recipe.tuning_grid()) > MAX_TUNING_TRIALS:
        problems.append(f"{where} tries {len(recipe.tuning_grid())} combinations; at most {MAX_TUNING_TRIALS}")
    return problems


#: What a task may accept as a submission: a model the platform runs, a file of predictions on a scoring set, or a
#: selection of training items the platform trains the task's fixed recipe on (:class:`DataSelection`).
SUBMISSION_KINDS: tuple[str, ...] = ("model", "predictions", "selection")


@dataclass(frozen=True)
class DataSelection:
    """How a task scores data instead of models (DataPerf-style): a participant selects at most ``budget`` items of
    one of the task's training pools (a STANDARD data set the owners upload); the evaluation job trains the task's
    fixed recipe on them and scores the result on the task's scoring sets, like any model.

    ``trainer`` is an import path ``pkg.module:fit`` of ``fit(examples, *, seed) -> predictor``: ``examples`` are the
    selected items' complete field values (gold included), in the order selected; the predictor has
    ``predict(inputs) -> outputs`` like any model (inputs from :meth:`Task.build_model_input`, outputs read by
    :meth:`Task.read_model_output`). It must be deterministic for a seed, and it runs where evaluations run."""

    budget: int
    trainer: str
    description: str = ""
    seed: int = 0

    def model_spec(self, name: str, examples: list[dict[str, Any]]) -> ModelSpec:
        """The ``python`` backend spec that trains the recipe on ``examples`` when the model loads."""
        return ModelSpec(
            name=name,
            backend="python",
            config={"factory": self.trainer, "kwargs": {"examples": examples, "seed": self.seed}},
        )


#: Who decides whether an example fooled the model (:attr:`Task.verdict`): ``rule``, the task's :meth:`Task.is_fooled`
#: at once; ``judge``, a model-as-judge with a rubric, after the example is stored (:class:`Judge`); ``people``, the
#: task's validators, voting on the model's output (an example whose author says the output is right is not fooled).
VERDICT_SOURCES: tuple[str, ...] = ("rule", "judge", "people")

#: The prompt a judge model gets by default (:class:`Judge`): ``{rubric}``, ``{input}`` (the example's context and
#: input fields as JSON), ``{output}`` (what the target model answered, its target fields as JSON, or its text) and
#: ``{references}`` (the author's gold target fields as JSON).
DEFAULT_JUDGE_PROMPT = (
    "You judge whether a model's answer is wrong under this rubric.\n\nRubric:\n{rubric}\n\n"
    "What the model was given:\n{input}\n\nThe model's answer:\n{output}\n\n"
    "The author's reference answer (may be empty):\n{references}\n\n"
    'Reply with a JSON object only: {{"fooled": true or false, "rationale": "one or two sentences"}}, where '
    '"fooled" is true when the answer is wrong or breaks the rubric.'
)


@dataclass(frozen=True)
class Judge:
    """A model-as-judge that decides whether an example fooled the target (``verdict = "judge"``): a model that
    writes (``model``, e.g. on the ``openai`` backend) gets a rubric, the example's input, the target's answer and the
    author's references, and answers ``{"fooled": bool, "rationale": str}``. Its verdict is stored beside the example
    with its rationale; a task's owner can overrule it. ``model.config`` may leave out ``prompt`` (then
    :data:`DEFAULT_JUDGE_PROMPT`) and ``parse`` (then JSON)."""

    model: ModelSpec
    rubric: str

    def model_spec(self) -> ModelSpec:
        """The judge model as it is run: the prompt and the JSON parser filled in where the task left them out."""
        config = {"prompt": DEFAULT_JUDGE_PROMPT, "parse": {"type": "json"}, **self.model.config}
        return ModelSpec(self.model.name, self.model.backend, config)


@dataclass(frozen=True)
class VerdictExplanation:
    """Why a rule with a threshold decided as it did (:meth:`Task.explain_verdict`): the measure it compared
    (``measure``, in people's words, such as "word-overlap F1 with your answer"), the example's ``score`` and the
    ``threshold``; the model is fooled when the score is below the threshold (``fooled_below``, the usual case) or
    at or above it."""

    measure: str
    score: float
    threshold: float
    fooled_below: bool = True

    @property
    def fooled(self) -> bool:
        return self.score < self.threshold if self.fooled_below else self.score >= self.threshold


class Task:
    """Base class of every task. Subclass it, set the attributes, register an instance.

    Attributes every task sets: ``code`` (stable, lowercase, used in URLs and the API), ``name``, ``fields``.
    Classification tasks set ``labels``; a :class:`ChoiceField` without explicit choices offers them.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    description: ClassVar[str] = ""
    instructions: ClassVar[str] = ""
    labels: ClassVar[tuple[str, ...]] = ()
    #: How people read each label or choice value where it differs from the value itself (``{"not_hateful": "not
    #: hateful"}``): the web app shows the title, the API and exports keep the value.
    label_titles: ClassVar[Mapping[str, str]] = {}
    fields: ClassVar[tuple[Field, ...]] = ()
    metrics: ClassVar[tuple[str, ...]] = ("accuracy", "macro_f1")
    principal_metric: ClassVar[str] = "accuracy"
    perturbations: ClassVar[tuple[str, ...]] = ()
    fairness_slices: ClassVar[tuple[str, ...]] = ()
    default_target_models: ClassVar[tuple[ModelSpec, ...]] = ()
    training_recipes: ClassVar[tuple[TrainingRecipe, ...]] = ()
    submission_kinds: ClassVar[tuple[str, ...]] = ("model", "predictions")
    data_selection: ClassVar[DataSelection | None] = None
    demo_contexts: ClassVar[tuple[dict[str, Any], ...]] = ()
    sample_examples: ClassVar[tuple[dict[str, Any], ...]] = ()
    validation_quorum: ClassVar[int] = 3
    #: Who decides whether an example fooled the model (:data:`VERDICT_SOURCES`); ``judge`` needs :attr:`judge`.
    verdict: ClassVar[str] = "rule"
    judge: ClassVar[Judge | None] = None
    #: The number the fooled rule compares with, when it has one (a metric or a probability under which the model
    #: is fooled): ``is_fooled`` reads it here, so the task's owners may set another (the ``fooledThreshold``
    #: setting, within :attr:`fooled_threshold_range`; :meth:`tuned`). None: the rule has no threshold.
    fooled_threshold: ClassVar[float | None] = None
    fooled_threshold_range: ClassVar[tuple[float, float]] = (0.0, 100.0)
    #: Shown (and accepted) before anyone sees the task's examples, contexts and model outputs, when they may be
    #: offensive or unsafe.
    content_warning: ClassVar[str] = ""
    #: What validators are told (the writers' ``instructions`` are for writing): what makes an example correct.
    validator_guidance: ClassVar[str] = ""
    #: Remind annotators and validators to take a break after this many minutes of continuous work (owners may
    #: change it: the ``breakReminderMinutes`` setting); None: no reminder.
    break_reminder_minutes: ClassVar[int | None] = None

    def demo_scoring_set(self) -> Sequence[dict[str, Any]]:
        """The scoring set ``dynaforge demo`` ranks the task's target models on (``demo-scoring``): complete
        examples, gold included, as in :attr:`sample_examples` (the default). A board a newcomer can read needs a
        few hundred of them: an accuracy near 0.8 on n items has a 95% interval of about ±0.8/√n (±0.04 at 400),
        and a set under ``MIN_SCORING_SET_SIZE`` (10) is not made at all. Written by the plugin (a generator over
        templates of its own is fine), never held-out rows of data the plugin may not ship; deterministic, so that
        every demo shows the same board. Its gold ships with the package: the demo shows every item's figures at
        once (``publicShare`` 1)."""
        return self.sample_examples

    # ------------------------------------------------------------------ declaration checks
    def check_declaration(self) -> list[str]:
        """Problems with the task's own declaration (reported when the plugin registers it)."""
        problems = []
        if (why := task_code_problem(getattr(self, "code", None))) is not None:
            problems.append(why)
        names = [f.name for f in self.fields]
        if len(names) != len(set(names)):
            problems.append("field names must be unique")
        if not self.fields_with(Role.INPUT):
            problems.append("a task needs at least one input field")
        if not self.fields_with(Role.TARGET):
            problems.append("a task needs at least one target field")
        for f in self.fields:
            if isinstance(f, ChoiceField) and f.choices is None and not self.labels:
                problems.append(f"field {f.name} offers the task's labels but the task has none")
            span_of = getattr(f, "context_field", None)
            if span_of is not None and span_of not in names:
                problems.append(f"field {f.name} selects from unknown field {span_of}")
        offered = set(self.labels) | {c for f in self.fields if isinstance(f, ChoiceField) for c in (f.choices or ())}
        unknown = sorted(set(self.label_titles) - offered)
        if unknown:
            problems.append(f"label_titles names values that no label or choice has: {', '.join(unknown)}")
        if any(not isinstance(t, str) or not t.strip() for t in self.label_titles.values()):
            problems.append("label_titles must map each value to a non-empty title")
        if getattr(self, "principal_metric", None) not in self.metrics:
            problems.append(f"principal_metric {getattr(self, 'principal_metric', None)!r} is not one of metrics")
        reserved = sorted(set(self.metrics) & set(RESERVED_METRIC_NAMES))
        if reserved:
            problems.append(
                f"metrics {reserved} are reserved: the leaderboard adds {', '.join(RESERVED_METRIC_NAMES)} to every "
                "task itself; give the task's metric another name"
            )
        kinds = tuple(self.submission_kinds)
        if not kinds or len(set(kinds)) != len(kinds) or not set(kinds) <= set(SUBMISSION_KINDS):
            problems.append(f"submission_kinds must be distinct kinds among {', '.join(SUBMISSION_KINDS)}; got {kinds}")
        if ("selection" in kinds) != (self.data_selection is not None):
            problems.append('a task takes "selection" submissions exactly when it declares data_selection')
        if self.data_selection is not None:
            if not isinstance(self.data_selection.budget, int) or self.data_selection.budget < 1:
                problems.append("data_selection.budget must be a whole number of at least 1")
            if ":" not in self.data_selection.trainer:
                problems.append("data_selection.trainer must be an import path pkg.module:name")
        if self.verdict not in VERDICT_SOURCES:
            problems.append(f"verdict must be one of {', '.join(VERDICT_SOURCES)}, not {self.verdict!r}")
        if (self.verdict == "judge") != (self.judge is not None):
            problems.append('a task sets judge exactly when its verdict is "judge"')
        if self.judge is not None and not (isinstance(self.judge.rubric, str) and self.judge.rubric.strip()):
            problems.append("judge.rubric must say what makes an answer wrong")
        recipe_names = [r.name for r in self.training_recipes]
        if len(recipe_names) != len(set(recipe_names)):
            problems.append("training recipe names must be unique")
        for recipe in self.training_recipes:
            for what in ("trainer", "factory"):
                if ":" not in getattr(recipe, what):
                    problems.append(f"training recipe {recipe.name}: {what} must be an import path pkg.module:name")
            for name, value in recipe.hyperparameters.items():
                if not isinstance(value, (bool, int, float, str)):
                    problems.append(
                        f"training recipe {recipe.name}: hyper-parameter {name} must default to a bool, int, float "
                        "or str"
                    )
            problems += tuning_problems(recipe)
        return problems

    def training_recipe(self, name: str | None = None) -> TrainingRecipe | None:
        """The recipe called ``name`` (default: the first), or None."""
        for recipe in self.training_recipes:
            if name is None or recipe.name == name:
                return recipe
        return None

    # ------------------------------------------------------------------ fields
    def fields_with(self, *roles: Role) -> list[Field]:
        return [f for f in self.fields if f.role in roles]

    @property
    def image_fields(self) -> list[ImageField]:
        """The fields whose values are uploaded images (``{"media": key}``)."""
        return [f for f in self.fields if isinstance(f, ImageField)]

    def tuned(self, *, fooled_threshold: float | None = None, judge_rubric: str | None = None) -> Task:
        """The task as its owners set it: another :attr:`fooled_threshold` (when the rule has one) and another
        rubric for its :attr:`judge` (when it has one), over the task as its plugin declares it (tuning a tuned
        task starts again from that); that task itself when neither changes anything."""
        base: Task = self.__dict__.get("_untuned", self)
        changes: dict[str, Any] = {}
        if base.fooled_threshold is not None and fooled_threshold not in (None, base.fooled_threshold):
            changes["fooled_threshold"] = float(fooled_threshold)
        if judge_rubric and base.judge is not None and judge_rubric != base.judge.rubric:
            changes["judge"] = replace(base.judge, rubric=judge_rubric)
        if not changes:
            return base
        clone = copy.copy(base)
        clone.__dict__.update(changes, _untuned=base)  # instance values in front of the class's
        return clone

    def field_names(self, *roles: Role) -> list[str]:
        return [f.name for f in self.fields_with(*roles)]

    def gold_field_names(self) -> frozenset[str]:
        """The fields that state or reveal the gold answer: the targets and the fields declared ``reveals_gold``.
        Whoever may not see an example's gold sees its fields without these."""
        return frozenset(f.name for f in self.fields if f.role is Role.TARGET or f.reveals_gold)

    def json_schema(self, *roles: Role) -> dict[str, Any]:
        """JSON Schema (draft 2020-12) of the fields with the given roles (all roles when none are given)."""
        selected = self.fields_with(*roles) if roles else list(self.fields)
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": self.name,
            "type": "object",
            "properties": {f.name: f.json_schema(self) for f in selected},
            "required": [f.name for f in selected if f.required],
            "additionalProperties": False,
        }

    def _validate(self, values: Any, roles: Iterable[Role], *, known: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(values, dict):
            raise InvalidInput.from_errors([FieldError("fields", "type", "must be a JSON object of field values")])
        wanted = self.fields_with(*roles)
        allowed = {f.name for f in wanted}
        errors: list[FieldError] = []
        for name in values:
            if name not in allowed:
                other = next((f for f in self.fields if f.name == name), None)
                if other is None:
                    errors.append(FieldError(name, "unknown_field", f"is not a field of task {self.code}"))
                else:
                    errors.append(FieldError(name, "role", f"is a {other.role.value} field and cannot be set here"))
        merged = {**known, **values}
        # Text that a span points into is kept exactly as written, so the span's offset stays true.
        span_sources = {getattr(f, "context_field", None) for f in self.fields} - {None}
        cleaned: dict[str, Any] = {}
        for f in wanted:
            value = values.get(f.name)
            if value is None or (isinstance(value, str) and not value.strip() and not f.required):
                if f.required:
                    errors.append(FieldError(f.name, "required", "is required"))
                continue
            problems = f.check(value, task=self, values=merged)
            if problems:
                errors.extend(problems)
            else:
                strip = f.role != Role.CONTEXT and f.name not in span_sources
                if strip and isinstance(value, str):
                    value = value.strip()
                elif strip and isinstance(f, ReferencesField) and isinstance(value, list):
                    value = [text.strip() for text in value]
                cleaned[f.name] = value
        if errors:
            raise InvalidInput.from_errors(errors)
        return cleaned

    def validate_context(self, values: Any) -> dict[str, Any]:
        """Check a context's fields; returns the cleaned values or raises :class:`InvalidInput`."""
        return self._validate(values, [Role.CONTEXT], known={})

    def validate_example(self, values: Any, context: dict[str, Any] | None) -> dict[str, Any]:
        """Check what an annotator submits (input, target and metadata fields; context fields too when the
        example has no stored context). Returns the cleaned values or raises :class:`InvalidInput`."""
        if context is None:
            return self._validate(values, [Role.CONTEXT, Role.INPUT, Role.TARGET, Role.METADATA], known={})
        return self._validate(values, [Role.INPUT, Role.TARGET, Role.METADATA], known=context)

    # ------------------------------------------------------------------ model in the loop
    def build_model_input(self, context: dict[str, Any], example: dict[str, Any]) -> dict[str, Any]:
        """What the target model receives: by default the context and input fields."""
        names = self.field_names(Role.CONTEXT, Role.INPUT)
        merged = {**context, **example}
        return {name: merged[name] for name in names if name in merged}

    def read_model_output(self, output: dict[str, Any]) -> dict[str, Any]:
        """Normalise a backend's raw output into a prediction keyed by target field names.

        The default keeps the target fields and the optional ``probabilities``/``confidence`` the backend gave (and
        ``generation``, what a backend of models that write says about the reply: its raw text, tokens, time to
        first token), and rejects an output that lacks a target field, names a label outside the task's set, gives
        a text target something other than text, or says it is ``unusable`` (and why). An override may
        take a keyword argument ``model_input`` (what the model was given): the server then passes it, so the
        task can check the output against it.
        """
        if not isinstance(output, dict):
            raise ValueError(f"model output must be an object, got {type(output).__name__}")
        if isinstance(output.get("unusable"), str):  # a backend that could not read the model's reply says why
            raise ValueError(output["unusable"])
        prediction: dict[str, Any] = {}
        for f in self.fields_with(Role.TARGET):
            if f.name not in output:
                raise ValueError(f"model output lacks the target field {f.name!r}")
            value = output[f.name]
            if isinstance(f, ChoiceField) and value not in f.options(self):
                raise ValueError(f"model predicted {value!r} for {f.name}, not one of {f.options(self)}")
            if isinstance(f, TextField) and not isinstance(value, str):
                raise ValueError(f"model output for {f.name} must be text, got {type(value).__name__}")
            prediction[f.name] = value
        for extra in ("probabilities", "confidence", "generation"):
            if extra in output:
                prediction[extra] = output[extra]
        return prediction

    def is_fooled(self, example: dict[str, Any], prediction: dict[str, Any], context: dict[str, Any]) -> bool:
        """Whether the model got it wrong. Default: some target field's prediction does not match the annotator's
        value (:meth:`Field.same`: equal; for text after the field's ``normalize`` rules and against any of its
        references; for a number within its ``tolerance``)."""
        return any(not f.same(example.get(f.name), prediction.get(f.name)) for f in self.fields_with(Role.TARGET))

    def explain_verdict(
        self, example: dict[str, Any], prediction: dict[str, Any], context: dict[str, Any]
    ) -> VerdictExplanation | None:
        """Why :meth:`is_fooled` decided as it did, for a rule that compares a score with a threshold (the web app
        shows it beside the verdict); None (the default) for a rule that compares answers, which the verdict already
        shows. A task that sets :attr:`fooled_threshold` reads it here too."""
        return None

    def title_of(self, value: str) -> str:
        """How people read a label or choice value (:attr:`label_titles`, else the value)."""
        return self.label_titles.get(value, value)

    def claims_fooled(self, example: dict[str, Any]) -> bool:
        """With ``verdict = "people"``: whether the author says the model's output is wrong, so that validators
        decide (True, the default); an example whose author says it is right is stored as not fooling at once."""
        return True

    def judge_input(
        self, context: dict[str, Any], example: dict[str, Any], prediction: dict[str, Any]
    ) -> dict[str, Any]:
        """With ``verdict = "judge"``: what the judge model's prompt is made from (:data:`DEFAULT_JUDGE_PROMPT`):
        ``rubric``, ``input`` (the context and input fields), ``output`` (the answer's target fields: the text itself
        for one text target) and ``references`` (the author's target fields), the last three as text."""
        targets = self.field_names(Role.TARGET)
        given = {k: v for k, v in {**context, **example}.items() if k in self.field_names(Role.CONTEXT, Role.INPUT)}
        answer = {k: prediction.get(k) for k in targets}
        references = {k: example.get(k) for k in targets if k in example}
        one = targets[0] if len(targets) == 1 else None
        output = answer[one] if one is not None and isinstance(answer[one], str) else json.dumps(answer)
        return {
            "rubric": self.judge.rubric if self.judge is not None else "",
            "input": json.dumps(given, ensure_ascii=False, indent=1),
            "output": output,
            "references": json.dumps(references, ensure_ascii=False) if references else "",
        }

    def split_fields(self, values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Split a full set of field values (as in ``sample_examples``) into (context fields, example fields)."""
        context_names = set(self.field_names(Role.CONTEXT))
        context = {k: v for k, v in values.items() if k in context_names}
        return context, {k: v for k, v in values.items() if k not in context_names}

    def perturb(self, example: dict[str, Any], perturbation: Perturbation, rng: Any) -> dict[str, Any]:
        """A copy of ``example`` (all its fields) with ``perturbation`` applied, as its ``scope`` says.

        ``"input"``: ``apply`` on each text input field; context and target fields are left alone, so spans into the
        context stay true. ``"example"``: the context and input text fields change together
        (:meth:`Perturbation.apply_texts`), and so does the text of each span into a changed field, which is then
        found again in its field's new text (the same occurrence, counted from the start): a name swapped in the
        input is swapped in the context too, and a QA answer follows its passage. A span that cannot be found
        again keeps its offset, and the copy fails the span's check. Then the gold follows ``perturbation.gold``:
        left as it is, or (``dropped``) the gold fields (:meth:`gold_field_names`) removed.
        """
        perturbed = dict(example)
        dropped = perturbation.gold == "dropped"
        if perturbation.scope == "input":
            for f in self.fields_with(Role.INPUT):
                value = perturbed.get(f.name)
                if isinstance(value, str):
                    perturbed[f.name] = perturbation.apply(value, rng)
        else:
            names = [f.name for f in self.fields_with(Role.CONTEXT, Role.INPUT) if isinstance(example.get(f.name), str)]
            spans = [
                f
                for f in self.fields
                if isinstance(f, SpanField)
                and f.context_field in names
                and _is_span(example.get(f.name))
                and not (dropped and f.name in self.gold_field_names())
            ]
            texts = {name: example[name] for name in names}
            texts.update({f.name: example[f.name]["text"] for f in spans})
            changed = perturbation.apply_texts(texts, rng)
            perturbed.update({name: changed[name] for name in names})
            for f in spans:
                source = f.context_field
                perturbed[f.name] = _span_again(example[source], example[f.name], perturbed[source], changed[f.name])
        if dropped:
            for name in self.gold_field_names():
                perturbed.pop(name, None)
        return perturbed

    # ------------------------------------------------------------------ optional
    def train(
        self,
        data_dir: str | PathLike[str],
        out_dir: str | PathLike[str] | None,
        *,
        progress: bool = True,
        **options: Any,
    ) -> dict[str, Any]:
        """Train the task's default target model from a data folder; returns its held-out metrics.

        ``out_dir`` None (``dynaforge train`` without ``--out``) means the model store, never the package's own
        folder: :func:`dynaforge.tasks.training.run_training` does both for a trainer written as
        ``train(data_dir, out_dir, *, progress, **options)``.
        """
        raise NotImplementedError(f"task {self.code} has no training command")

    def __repr__(self) -> str:
        return f"<Task {getattr(self, 'code', '?')}>"


def _is_span(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("text"), str) and isinstance(value.get("start"), int)


def _span_again(old_source: str, old_span: dict[str, Any], new_source: str, new_text: str) -> dict[str, Any]:
    """A span moved into its field's new text: ``new_text`` at the same occurrence (counted from the start) as the old
    span's text had in the old field; the old offset when the new text has no such occurrence."""
    text, start = old_span["text"], old_span["start"]
    rank, at = 0, old_source.find(text)
    while 0 <= at < start:
        rank, at = rank + 1, old_source.find(text, at + 1)
    found = new_source.find(new_text) if new_text else -1
    for _ in range(rank):
        if found < 0:
            break
        found = new_source.find(new_text, found + 1)
    return {**old_span, "text": new_text, "start": found if found >= 0 else start}
