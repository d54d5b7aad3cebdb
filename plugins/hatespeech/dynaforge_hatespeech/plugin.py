"""The hate speech task: annotators write a statement, say whether it is hateful, and try to fool the model.

Labels are ``hateful`` and ``not_hateful`` (Dynabench's binary formulation). The task has no context fields: the
annotator writes the statement from scratch, so examples are created without a context and ``demo_contexts`` is
empty. Two optional metadata fields describe a statement: ``target_group`` (the group it attacks or is about) and
``type`` (the kind of hate, ``none`` for a statement that is not hateful). Metrics are reported per target group
through the ``target_group`` fairness slice.

The default target model is the MiniLM sentence encoder with a small LoRA adapter and a linear head, trained by
``dynaforge train hatespeech --data DIR`` on the Davidson et al. (2017) tweets, whose three classes are mapped to
the task's two labels: class 0 (hate speech) is ``hateful``; class 1 (offensive language) and class 2 (neither) are
``not_hateful``, because offensive language without a protected target is not hate speech by this task's
definition. See :mod:`dynaforge_hatespeech.model` and :mod:`dynaforge_hatespeech.train`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dynaforge import (
    ChoiceField,
    FieldError,
    InvalidInput,
    ModelSpec,
    Role,
    Slice,
    Task,
    TextField,
    TrainingRecipe,
    hookimpl,
)
from dynaforge_hatespeech.adversaries import register_adversaries  # noqa: F401  (the plugin's template adversary)
from dynaforge_hatespeech.model import MODEL_NAME, WEIGHTS_DIR
from dynaforge_hatespeech.train import (
    DATA_FILE,
    DEFAULT_ENCODER,
    DEFAULT_EXAMPLE_WEIGHT,
    DEFAULT_LORA_EPOCHS,
    DEFAULT_LORA_TIME_LIMIT_S,
)

LABELS: tuple[str, str] = ("hateful", "not_hateful")

#: Groups a statement can attack or be about (the protected characteristics the instructions name).
TARGET_GROUPS: tuple[str, ...] = (
    "women",
    "men",
    "black_people",
    "asian_people",
    "muslims",
    "jews",
    "christians",
    "lgbtq_people",
    "immigrants",
    "disabled_people",
    "travellers_roma",
    "other",
)

#: Kinds of hate (after Vidgen et al. 2021); ``none`` is the only kind a not-hateful statement can have.
HATE_TYPES: tuple[str, ...] = (
    "derogation",
    "animosity",
    "threatening",
    "dehumanisation",
    "support_for_hateful_entities",
    "none",
)

SLICE_NAME = "target_group"

INSTRUCTIONS = """\
Write one statement, say whether it is hateful, and try to make the model get it wrong.

Hateful: the statement attacks people because of a protected characteristic: their race, ethnicity, national \
origin or immigration status, religion, sex or gender, sexual orientation, gender identity, or disability. An \
attack can demean or insult the group, express hostility or contempt, threaten or incite violence, compare its \
members to animals, vermin, disease or filth, or praise people and movements known for hating that group. It \
can be implicit: no slur, polite wording, a "joke" or a rhetorical question still count.

Not hateful, even when it sounds harsh:
- offensive language without a protected target: swearing, insults aimed at a person for what they did, \
anger at a company, a team or a politician for their actions;
- counter-speech: statements that argue against hate, defend a group or report the abuse its members receive;
- quoting or describing hateful language in order to criticise it;
- neutral or positive statements that mention a group.

Good ways to fool the model: hate without slurs, misspellings or coded words, and non-hateful statements that \
use strong words or mention groups. Label what a careful reader would decide, not what you expect the model to \
say. Optionally pick the target group and the type of hate (choose "none" for a statement that is not hateful). \
Never write about real private individuals."""


class HateSpeechTask(Task):
    """Binary hate speech detection on statements written by annotators (no context)."""

    code = "hatespeech"
    name = "Hate speech"
    description = "Write a statement that the model wrongly judges hateful or not hateful."
    instructions = INSTRUCTIONS
    break_reminder_minutes = 30  # reading and writing hateful statements wears people down
    content_warning = (
        "This task's examples are statements people wrote to test a hate speech detector: many of them are hateful, "
        "slurs and threats included, and may be aimed at groups you belong to."
    )
    labels = LABELS
    label_titles = {"not_hateful": "not hateful"}
    fields = (
        TextField(name="statement", role=Role.INPUT, min_length=3, max_length=500, description="Your statement."),
        ChoiceField(
            name="label",
            role=Role.TARGET,
            description="Is the statement hateful? The answer a careful reader would give.",
        ),
        ChoiceField(
            name="target_group",
            role=Role.METADATA,
            required=False,
            choices=TARGET_GROUPS,
            description="The group the statement attacks, or is about when it is not hateful.",
        ),
        ChoiceField(
            name="type",
            role=Role.METADATA,
            reveals_gold=True,
            required=False,
            choices=HATE_TYPES,
            description="The kind of hate; none when the statement is not hateful.",
        ),
    )
    metrics = ("accuracy", "macro_f1")
    principal_metric = "accuracy"
    perturbations = (
        "typo",
        "lowercase",
        "uppercase",
        "punctuation",
        "contractions",
        "whitespace",
        "gender_swap",
        "name_swap",
        "name_origin_swap",
    )
    fairness_slices = (SLICE_NAME,)
    default_target_models = (
        ModelSpec(name=MODEL_NAME, backend="python", config={"factory": "dynaforge_hatespeech.model:load"}),
    )
    training_recipes = (
        TrainingRecipe(
            name="default",
            model=MODEL_NAME,
            trainer="dynaforge_hatespeech.train:train_recipe",
            factory="dynaforge_hatespeech.model:load",
            description=(
                "The MiniLM model retrained on the platform's examples, each weighing example_weight tweets (in the "
                "class-weighted fit and in the cross-validated choice of weight decay and threshold), added to the "
                "training part of the Davidson et al. tweets when the base data is given; the held-out tweets are "
                "those `dynaforge train` holds out with the same seed (the shipped model's at seed 0), so their "
                "figures compare. Without base data the examples are split "
                "themselves (20% held out). encoder=lora fine-tunes a LoRA adapter on the encoder with the head "
                "(lora_epochs passes over four of the five folds, stopped after lora_time_limit_s seconds; the fifth "
                "chooses the threshold; about ten minutes on two CPU cores with the base data); encoder=frozen "
                "refits the head alone."
            ),
            hyperparameters={
                "example_weight": DEFAULT_EXAMPLE_WEIGHT,
                "encoder": DEFAULT_ENCODER,
                "lora_epochs": DEFAULT_LORA_EPOCHS,
                "lora_time_limit_s": DEFAULT_LORA_TIME_LIMIT_S,
            },
            base_data=f"{DATA_FILE}: the Davidson et al. (2017) CSV (columns class and tweet; class 0 is hateful, "
            "1 and 2 not_hateful)",
            shipped=WEIGHTS_DIR,
            tuning={"example_weight": (2.0, 8.0), "lora_epochs": (2, 4)},  # tuneOn: one training per combination
        ),
    )
    # No context fields: annotators write examples without a context, and `dynaforge demo` has nothing to store.
    demo_contexts = ()
    # Written for the project: one of each kind the instructions describe (hate with and without slurs, counter-
    # speech that quotes hate, an insult without a protected target), with gendered words and first names so the
    # fairness perturbations have something to swap.
    sample_examples = (
        {
            "statement": "Women like her should be kept out of every boardroom, they are not fit to lead anything.",
            "label": "hateful",
            "target_group": "women",
            "type": "derogation",
        },
        {
            "statement": "They breed like rats and will swamp our towns unless somebody stops them.",
            "label": "hateful",
            "target_group": "immigrants",
            "type": "dehumanisation",
        },
        {
            "statement": "People who call immigrants vermin should be ashamed: Omar came here at ten and now runs "
            "the best bakery in town.",
            "label": "not_hateful",
            "target_group": "immigrants",
            "type": "none",
        },
        {"statement": "My brother missed the bus again and I told him he is a useless idiot.", "label": "not_hateful"},
    )

    def demo_scoring_set(self) -> Sequence[dict[str, Any]]:
        """400 short statements written by the project, 120 of them hateful (about made-up groups), made by a seeded
        generator over templates (:mod:`dynaforge_hatespeech.demo_data`); built on first use and cached."""
        from dynaforge_hatespeech.demo_data import demo_scoring_set

        return demo_scoring_set()

    def validate_example(self, values: Any, context: dict[str, Any] | None) -> dict[str, Any]:
        """The field checks, plus one across fields: the type ``none`` goes with ``not_hateful`` and only with it."""
        cleaned = super().validate_example(values, context)
        label, kind = cleaned.get("label"), cleaned.get("type")
        if kind is not None and (kind == "none") != (label == "not_hateful"):
            message = (
                "must be none for a statement that is not hateful"
                if label == "not_hateful"
                else "must name the kind of hate for a hateful statement, not none"
            )
            raise InvalidInput.from_errors([FieldError("type", "label_agreement", message)])
        return cleaned

    def train(self, data_dir, out_dir=None, *, progress: bool = True, **options) -> dict[str, Any]:
        """Train the default model's head on ``davidson_2017.csv`` in ``data_dir`` (see ``train.py``) into
        ``out_dir``, or by default into a new version in the model store. Options: ``limit``, ``seed``, ``cache``."""
        from dynaforge.tasks.training import run_training
        from dynaforge_hatespeech.train import train

        return run_training(train, data_dir, out_dir, task=self.code, model=MODEL_NAME, progress=progress, **options)


def target_group_of(fields: dict[str, Any]) -> str | None:
    """The example's target group, or None when the annotator gave none."""
    group = fields.get("target_group")
    return group if isinstance(group, str) and group in TARGET_GROUPS else None


@hookimpl
def register_tasks(register):
    register(HateSpeechTask())


@hookimpl
def register_fairness_slices(register):
    register(
        Slice(
            name=SLICE_NAME,
            group=target_group_of,
            task_code=HateSpeechTask.code,
            description="Hate speech examples grouped by the target group the annotator named.",
        )
    )


@hookimpl
def register_importers(register):
    from dynaforge_hatespeech.importers import DavidsonImporter

    register(DavidsonImporter())
