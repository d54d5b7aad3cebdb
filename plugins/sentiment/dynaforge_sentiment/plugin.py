"""The sentiment task: annotators write a statement and its sentiment, trying to fool the model.

Labels are positive, negative and neutral. The optional context is a prompt sentence for inspiration. The default
target model is the MiniLM sentence encoder with a small LoRA adapter and a head, trained by ``dynaforge train
sentiment``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dynaforge import ChoiceField, ModelSpec, Role, Task, TextField, TrainingRecipe, hookimpl
from dynaforge_sentiment.adversaries import register_adversaries  # noqa: F401  (the plugin's template adversary)
from dynaforge_sentiment.model import MODEL_NAME, WEIGHTS_DIR
from dynaforge_sentiment.train import (
    DEFAULT_ENCODER,
    DEFAULT_EXAMPLE_WEIGHT,
    DEFAULT_LORA_EPOCHS,
    DEFAULT_LORA_TIME_LIMIT_S,
    DEV_FILE,
    TRAIN_FILE,
)


class SentimentTask(Task):
    code = "sentiment"
    name = "Sentiment"
    description = "Write a statement whose sentiment the model gets wrong."
    instructions = (
        "Write one statement that expresses a positive, negative or neutral sentiment, choose the label a careful "
        "reader would give it, and try to make the model predict another label. Sarcasm, negation, mixed feelings "
        "and domain knowledge are fair game; nonsense and labels you do not believe are not. The prompt is only "
        "there for inspiration."
    )
    labels = ("positive", "negative", "neutral")
    fields = (
        TextField(
            name="prompt",
            role=Role.CONTEXT,
            required=False,
            max_length=500,
            description="A sentence to take inspiration from.",
        ),
        TextField(name="statement", role=Role.INPUT, min_length=3, max_length=500, description="Your statement."),
        ChoiceField(name="label", role=Role.TARGET, description="The sentiment a careful reader would give it."),
        TextField(
            name="explanation",
            role=Role.METADATA,
            reveals_gold=True,
            required=False,
            max_length=1000,
            description="Why do you think the model gets it wrong?",
        ),
    )
    metrics = ("accuracy", "macro_f1")
    principal_metric = "accuracy"
    perturbations = (
        "typo",
        "lowercase",
        "uppercase",
        "contractions",
        "whitespace",
        "gender_swap",
        "name_swap",
        "name_origin_swap",
    )
    default_target_models = (
        ModelSpec(name=MODEL_NAME, backend="python", config={"factory": "dynaforge_sentiment.model:load"}),
    )
    training_recipes = (
        TrainingRecipe(
            name="default",
            model=MODEL_NAME,
            trainer="dynaforge_sentiment.train:train_recipe",
            factory="dynaforge_sentiment.model:load",
            description=(
                "The MiniLM model retrained on the platform's positive and negative examples, each weighing "
                "example_weight SST-2 rows, added to the fitting part of SST-2 when the base data is given; the "
                "held-out rows are those `dynaforge train` holds out with the same seed (the shipped model's at "
                "seed 0), so the held-out and dev figures compare. Without base data "
                "the examples are split themselves (20% held out). Neutral examples are counted and scored against "
                "the neutral band, not fitted. encoder=lora fine-tunes a LoRA adapter on the encoder with the head "
                "(lora_epochs passes, stopped after lora_time_limit_s seconds; about ten minutes on two CPU cores "
                "with the base data); encoder=frozen refits the head alone, in seconds."
            ),
            hyperparameters={
                "example_weight": DEFAULT_EXAMPLE_WEIGHT,
                "encoder": DEFAULT_ENCODER,
                "lora_epochs": DEFAULT_LORA_EPOCHS,
                "lora_time_limit_s": DEFAULT_LORA_TIME_LIMIT_S,
            },
            base_data=f"{TRAIN_FILE} and {DEV_FILE}: SST-2 rows, sentence<TAB>label with a header, 0 negative, "
            "1 positive",
            shipped=WEIGHTS_DIR,
            tuning={"example_weight": (2.0, 8.0, 32.0)},  # tuneOn: one training per combination
        ),
    )
    demo_contexts = (
        {"prompt": "Describe a meal that did not go as planned."},
        {"prompt": "Review a gadget you bought last year."},
        {"prompt": "Tell a friend about a film you saw on a rainy evening."},
        {"prompt": "Write about a train journey."},
        {"prompt": "Say something about a book everybody else seems to love."},
        {"prompt": "Describe a neighbour's new hobby."},
        {"prompt": "Comment on the weather at a summer wedding."},
        {"prompt": "Review a concert from the back row."},
    )

    sample_examples = (
        {
            "prompt": "Describe a meal that did not go as planned.",
            "statement": "The soup arrived cold, but the waiter's apology was so sincere that I left smiling.",
            "label": "positive",
            "explanation": "A complaint that turns around at the end.",
        },
        {"statement": "Oh great, another meeting that could have been an email.", "label": "negative"},
        {
            "prompt": "Write about a train journey.",
            "statement": "The train left at nine and reached the coast shortly after noon.",
            "label": "neutral",
        },
    )

    def demo_scoring_set(self) -> Sequence[dict[str, Any]]:
        """402 short statements written by the project, 134 of each label, made by a seeded generator over templates
        (:mod:`dynaforge_sentiment.demo_data`); built on first use and cached."""
        from dynaforge_sentiment.demo_data import demo_scoring_set

        return demo_scoring_set()

    def build_model_input(self, context, example):
        # The prompt is inspiration for the annotator, not evidence for the model.
        return {"statement": example["statement"]}

    def train(self, data_dir, out_dir=None, *, progress=True, **options):
        """Train the default model from DATA_DIR/sst2_{train,dev}.tsv into ``out_dir``, or by default into a new
        version in the model store; see :mod:`dynaforge_sentiment.train`. Options: ``limit``, ``seed``."""
        from dynaforge.tasks.training import run_training
        from dynaforge_sentiment.train import train

        return run_training(train, data_dir, out_dir, task=self.code, model=MODEL_NAME, progress=progress, **options)


@hookimpl
def register_tasks(register):
    register(SentimentTask())


@hookimpl
def register_importers(register):
    from dynaforge_sentiment.importers import SSTImporter

    register(SSTImporter())
