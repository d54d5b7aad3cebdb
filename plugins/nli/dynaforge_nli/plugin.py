"""The NLI task: given a premise, annotators write a hypothesis and its relation to the premise, trying to fool
the model.

Labels are entailment, neutral and contradiction; the model is fooled when it predicts another label than the
annotator's (the default rule). The default target model is a logistic-regression head on frozen MiniLM
sentence-pair features and lexical cues, trained by ``dynaforge train nli``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dynaforge import ChoiceField, ModelSpec, Role, Task, TextField, TrainingRecipe, hookimpl
from dynaforge_nli.adversaries import register_adversaries  # noqa: F401  (the plugin's template adversary)
from dynaforge_nli.model import MODEL_NAME, WEIGHTS_DIR
from dynaforge_nli.train import (
    DEFAULT_ENCODER,
    DEFAULT_EXAMPLE_WEIGHT,
    DEFAULT_LORA_EPOCHS,
    DEFAULT_LORA_TIME_LIMIT_S,
)


class NLITask(Task):
    code = "nli"
    name = "Natural language inference"
    description = "Write a hypothesis whose relation to the premise the model gets wrong."
    instructions = (
        "Read the premise, then write one hypothesis: a single, self-contained statement about the situation the "
        "premise describes. Choose its label. Entailment: the premise makes the hypothesis definitely true. "
        "Contradiction: the premise makes the hypothesis definitely false. Neutral: the premise leaves it open; "
        "the hypothesis could be true or false. "
        "A good hypothesis makes the model pick the wrong label while a careful reader agrees with yours: it may "
        "hinge on numbers, dates and time order, on who did what to whom, on quantities (only, all, at least), on "
        "negation, or on something the premise implies without saying it. Avoid copying the premise with one word "
        "flipped to its opposite, facts that only outside knowledge can settle, and labels you are unsure of. "
        "In the reason field, say briefly why you think the model gets it wrong."
    )
    labels = ("entailment", "neutral", "contradiction")
    fields = (
        TextField(
            name="premise",
            role=Role.CONTEXT,
            min_length=10,
            max_length=1000,
            description="The text your hypothesis is about.",
        ),
        TextField(
            name="hypothesis",
            role=Role.INPUT,
            min_length=5,
            max_length=300,
            description="Your statement about the premise.",
        ),
        ChoiceField(
            name="label",
            role=Role.TARGET,
            description="Is the hypothesis definitely true (entailment), definitely false (contradiction) "
            "or possibly either (neutral), given the premise?",
        ),
        TextField(
            name="reason",
            role=Role.METADATA,
            reveals_gold=True,
            required=False,
            max_length=1000,
            description="Why do you think the model was fooled?",
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
    default_target_models = (
        ModelSpec(name=MODEL_NAME, backend="python", config={"factory": "dynaforge_nli.model:load"}),
    )
    training_recipes = (
        TrainingRecipe(
            name="default",
            model=MODEL_NAME,
            trainer="dynaforge_nli.train:train_recipe",
            factory="dynaforge_nli.model:load",
            description="The logistic-regression head on MiniLM pair features and lexical cues, fitted on the base "
            "data (when given) and the platform's examples, each example weighing example_weight against a base "
            "row's 1; held out: a premise-grouped fifth of the base data (of the examples without it). "
            "encoder=lora then fine-tunes a LoRA adapter on the encoder together with the head, on the same rows "
            "and weights (lora_epochs passes, stopped after lora_time_limit_s seconds; a few minutes on two CPU "
            "cores for a thousand pairs); encoder=frozen keeps the head on the frozen encoder.",
            hyperparameters={
                "example_weight": DEFAULT_EXAMPLE_WEIGHT,
                "encoder": DEFAULT_ENCODER,
                "lora_epochs": DEFAULT_LORA_EPOCHS,
                "lora_time_limit_s": DEFAULT_LORA_TIME_LIMIT_S,
            },
            base_data="anli_r1_dev_annotated.csv: ANLI-style CSV, columns context (premise), statement "
            "(hypothesis), gold_label (e/n/c)",
            shipped=WEIGHTS_DIR,
            tuning={"example_weight": (1.0, 2.0, 4.0), "lora_epochs": (2, 4)},  # tuneOn: one training per combination
        ),
    )
    demo_contexts = (
        {
            "premise": "The night ferry to the island leaves at 11 p.m. on weekdays and at midnight on Saturdays. "
            "It does not run on Sundays between October and March."
        },
        {
            "premise": "Marta planted twelve tomato seedlings in April. By July only half of them had survived the "
            "heat, but those gave more fruit than her family could eat."
        },
        {
            "premise": "The town library moved into the old railway station in 2009. Its reading room, once the "
            "ticket hall, still has the original clock above the door."
        },
        {
            "premise": "Dr. Okafor's team followed 400 volunteers for two years after they received the new vaccine. "
            "Mild headaches were the most common side effect, reported by about one in ten."
        },
        {
            "premise": "After losing the first two sets, the 19-year-old qualifier won the next three to reach her "
            "first Grand Slam quarter-final."
        },
        {
            "premise": "The bakery on Elm Street sells sourdough only on Fridays, and it usually runs out before "
            "noon. The owner, a former chemist, mills part of the flour herself."
        },
        {
            "premise": "Lake Varna freezes over most winters, but the ice is rarely thick enough to walk on before "
            "late January."
        },
        {
            "premise": "The council postponed its vote on the new cycle lanes until spring, after shop owners asked "
            "for a study of how the lanes would affect parking."
        },
    )

    sample_examples = (
        {
            "premise": "The night ferry to the island leaves at 11 p.m. on weekdays and at midnight on Saturdays. "
            "It does not run on Sundays between October and March.",
            "hypothesis": "In January a woman cannot take the night ferry on a Sunday.",
            "label": "entailment",
            "reason": "Needs the month to be matched to the October-March window.",
        },
        {
            "premise": "Marta planted twelve tomato seedlings in April. By July only half of them had survived the "
            "heat, but those gave more fruit than her family could eat.",
            "hypothesis": "Seven of Marta's seedlings were still alive in July.",
            "label": "contradiction",
        },
        {
            "premise": "The town library moved into the old railway station in 2009. Its reading room, once the "
            "ticket hall, still has the original clock above the door.",
            "hypothesis": "The clock above the reading-room door still keeps good time.",
            "label": "neutral",
        },
    )

    def demo_scoring_set(self) -> Sequence[dict[str, Any]]:
        """402 short premise and hypothesis pairs written by the project, 134 of each label, made by a seeded
        generator over frames (:mod:`dynaforge_nli.demo_data`); built on first use and cached."""
        from dynaforge_nli.demo_data import demo_scoring_set

        return demo_scoring_set()

    def build_model_input(self, context: dict[str, Any], example: dict[str, Any]) -> dict[str, Any]:
        # The model judges the pair: the premise from the context, the annotator's hypothesis.
        return {"premise": context["premise"], "hypothesis": example["hypothesis"]}

    def train(self, data_dir, out_dir=None, *, progress: bool = True, **options) -> dict[str, Any]:
        """Train the default model from DATA_DIR/anli_r1_dev_annotated.csv into ``out_dir``, or by default into a
        new version in the model store. Options: ``limit`` (seeded subsample of N rows), ``seed``."""
        from dynaforge.tasks.training import run_training
        from dynaforge_nli.train import train

        return run_training(train, data_dir, out_dir, task=self.code, model=MODEL_NAME, progress=progress, **options)


@hookimpl
def register_tasks(register):
    register(NLITask())


@hookimpl
def register_importers(register):
    from dynaforge_nli.importers import ANLIImporter

    register(ANLIImporter())
