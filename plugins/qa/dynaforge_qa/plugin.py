"""The qa task: annotators ask a question about a passage and select its answer, trying to fool the model.

The passage is the context; the question is the annotator's input; the answer is a span of the passage
(``{"text", "start"}``, the text exactly as it sits at that offset). The model answers with a span too, and it is
fooled, as in Dynabench, when the word-overlap F1 of its answer text and the annotator's (after SQuAD normalisation)
is below 0.4.

Perturbations (typo, casing, punctuation, contractions, whitespace, gender, name and name-origin swaps) are
meant for the task's input field, the question: perturbing the passage would move the text under the gold span's
offset.

The plugin registers two metrics over span targets, ``span_f1`` and ``exact_match``. The default target model is a
small span head on the frozen MiniLM encoder, trained by ``dynaforge train qa``. This module never imports torch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from dynaforge import Metric, ModelSpec, Role, SpanField, Task, TextField, TrainingRecipe, VerdictExplanation, hookimpl
from dynaforge_qa.adversaries import register_adversaries  # noqa: F401  (the plugin's template adversary)
from dynaforge_qa.model import MODEL_NAME, WEIGHTS_DIR
from dynaforge_qa.scoring import span_exact_match, span_f1, token_f1

FOOLED_BELOW_F1 = 0.4


_CANAL = (
    "The Varrow Canal links the inland port of Kestley with the tidal estuary at Hollin Mouth. Work on th"
    "e canal began in 1788 under the engineer Agnes Pell, who had earlier drained the marshes around Dunm"
    "ere. Its 23 locks lift boats a total of 71 metres, and the longest flight, at Crane Hill, has nine l"
    "ocks in under a kilometre. Traffic peaked in the 1840s, when barges carried slate and grain, but the"
    " opening of the Kestley railway in 1861 halved the canal's income within a decade. The last commerci"
    "al cargo, a load of timber, passed through in 1952. Volunteers reopened the whole route to pleasure "
    "boats in 1994."
)


class QATask(Task):
    code = "qa"
    name = "Question answering"
    description = "Ask a question about the passage that the model answers wrongly."
    instructions = (
        "Read the passage, write a question that the passage answers, and select the answer in the passage: the "
        "shortest span that fully answers it, exactly as written. Try to make the model pick a different span. "
        "Paraphrase instead of copying the passage's words, ask about numbers, dates and comparisons, make the "
        "answer depend on two sentences, or ask about one of several similar candidates. A question must be "
        "answerable from the passage alone by a careful reader: no yes/no questions, no outside knowledge, no "
        "trick questions whose answer is not in the passage. The model counts as fooled when its answer shares "
        "too few words with yours."
    )
    fields = (
        TextField(
            name="passage", role=Role.CONTEXT, min_length=100, max_length=6000, description="The passage to ask about."
        ),
        TextField(
            name="question",
            role=Role.INPUT,
            min_length=5,
            max_length=200,
            description="Your question; the passage must answer it.",
        ),
        SpanField(
            name="answer",
            role=Role.TARGET,
            context_field="passage",
            max_length=300,
            description="The answer: select the shortest span of the passage that answers your question.",
        ),
    )
    metrics = ("span_f1", "exact_match")
    principal_metric = "span_f1"
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
        ModelSpec(name=MODEL_NAME, backend="python", config={"factory": "dynaforge_qa.model:load"}),
    )
    training_recipes = (
        TrainingRecipe(
            name="default",
            model=MODEL_NAME,
            trainer="dynaforge_qa.train:train_recipe",
            factory="dynaforge_qa.model:load",
            description="The span head on the frozen MiniLM encoder. With base data: trained afresh on the base "
            "paragraphs and the platform's examples, each example window's loss weighing example_weight against a "
            "base window's 1, held out: a fifth of the base paragraphs. Without: the shipped head fine-tuned on the "
            "examples, held out: a fifth of their passages. The validation part chooses up to epochs epochs.",
            hyperparameters={"example_weight": 2.0, "epochs": 30},
            base_data="squad_v2_dev_sample.json: SQuAD 2.0 JSON (answerable questions are used)",
            shipped=WEIGHTS_DIR,
        ),
    )
    sample_examples = (
        {
            "passage": _CANAL,
            "question": "Who was the woman in charge when work on the canal started?",
            "answer": {"text": "Agnes Pell", "start": _CANAL.index("Agnes Pell")},
        },
        {
            "passage": _CANAL,
            "question": "What did the final commercial boat on the canal carry?",
            "answer": {"text": "a load of timber", "start": _CANAL.index("a load of timber")},
        },
        {
            "passage": _CANAL,
            "question": "Since when can pleasure boats use the entire route again?",
            "answer": {"text": "1994", "start": _CANAL.index("1994")},
        },
    )
    demo_contexts = (
        {
            "passage": (
                "The Varrow Canal links the inland port of Kestley with the tidal estuary at Hollin Mouth. Work on the "
                "canal began in 1788 under the engineer Agnes Pell, who had earlier drained the marshes around "
                "Dunmere. "
                "Its 23 locks lift boats a total of 71 metres, and the longest flight, at Crane Hill, has nine locks "
                "in "
                "under a kilometre. Traffic peaked in the 1840s, when barges carried slate and grain, but the opening "
                "of "
                "the Kestley railway in 1861 halved the canal's income within a decade. The last commercial cargo, a "
                "load of timber, passed through in 1952. Volunteers reopened the whole route to pleasure boats in 1994."
            )
        },
        {
            "passage": (
                "The pale lantern moth lives only in the cloud forests of the Serra Alta, between 1,800 and 2,400 "
                "metres "
                "above sea level. Adults have a wingspan of about four centimetres and a yellow spot on each forewing "
                "that reflects moonlight. Unlike most moths, the species is active at dawn rather than at night. Its "
                "caterpillars feed exclusively on the leaves of the mountain laurel, which is why the moth disappears "
                "wherever the laurel is cleared. A survey in 2019 counted fewer than 600 adults, down from roughly "
                "3,000 in 2005. The biologist Tomasz Reiner, who first described the species, named it after the "
                "lanterns carried by the herders who guided his expedition."
            )
        },
        {
            "passage": (
                "The Guild of Lamplighters of Orvieux was founded in 1612 and disbanded in 1889, when the city "
                "switched "
                "to electric street lighting. At its height the guild had 140 members, each responsible for a fixed "
                "round of about forty lamps. Apprentices served for five years and had to memorise every street of "
                "their district before they could carry a ladder of their own. The guild's hall on Rue des Cordiers, "
                "built in 1735, now houses the municipal archive. Its last master, Henri Daubel, refused the pension "
                "offered by the council and spent his final years repairing clocks."
            )
        },
        {
            "passage": (
                "The Tour of the Three Lakes is a five-day cycling race held every September in the northern "
                "highlands. The first edition, in 1967, had only eleven riders, all of them amateurs from local clubs. "
                "The race covers about 780 kilometres, and its queen stage climbs the Passo Grigio, whose summit lies "
                "at 2,310 metres. Because the pass is often closed by early snow, the organisers keep a lower route "
                "over the Colle Verde in reserve; it has been used six times. Marta Ilves became the first rider to "
                "win "
                "three editions in a row, in 2011, 2012 and 2013. The winner receives a jersey dyed the blue-green of "
                "the largest lake rather than a trophy."
            )
        },
        {
            "passage": (
                "The composer Ilse Varga wrote her only opera, The Salt Bride, during a winter spent in a fishing "
                "village on the northern coast. It premiered in 1931 at the Royal Theatre in Brenn, conducted by her "
                "brother Pavel. Critics praised the second act, in which the chorus imitates the sound of waves "
                "without instruments, but the audience found the four-hour running time exhausting. After six "
                "performances the production was withdrawn, and the score was thought lost during the war. A complete "
                "copy was found in 1988 in the attic of the theatre's former prompter. The opera has since been staged "
                "in eleven countries, usually in a shortened version of about two and a half hours."
            )
        },
        {
            "passage": (
                "The Millbrook bakers' cooperative was formed in 1978 by seven bakeries that could no longer afford to "
                "buy flour separately. Members share a mill, a delivery van and a training kitchen, but each bakery "
                "keeps its own name and recipes. The cooperative's best-known product is the Millbrook rye, a dark "
                "loaf proved for eighteen hours and baked in a wood-fired oven. Only bakeries that have been members "
                "for at least three years may sell it under that name. Today the cooperative has 23 members and "
                "employs about 210 people. Its board is elected every two years, and no bakery may hold the chair "
                "twice in a row."
            )
        },
    )

    def demo_scoring_set(self) -> Sequence[dict[str, Any]]:
        """273 questions on 40 short passages written by the project, each answer a span of its passage, made by a
        seeded generator over frames (:mod:`dynaforge_qa.demo_data`); built on first use and cached."""
        from dynaforge_qa.demo_data import demo_scoring_set

        return demo_scoring_set()

    def read_model_output(self, output: Any, model_input: dict[str, Any] | None = None) -> dict[str, Any]:
        """Keep the answer span and confidence, rejecting a malformed span or confidence with a ValueError.

        The answer must be ``{"text": non-empty string, "start": integer >= 0}``. When ``model_input`` (holding the
        passage the model read) is given, the text must also sit at ``start`` in the passage. ``confidence`` is
        optional and must be a number between 0 and 1.
        """
        prediction = super().read_model_output(output)
        answer_field = self.fields_with(Role.TARGET)[0]
        passage = (model_input or {}).get("passage")
        values = {"passage": passage} if isinstance(passage, str) else {}
        problems = [
            p
            for p in answer_field.check(prediction["answer"], task=self, values=values)
            if values or p.rule != "span_context"
        ]
        if problems:
            raise ValueError(
                f"model answer {prediction['answer']!r} is not a span of the passage: "
                + "; ".join(p.message for p in problems)
            )
        if "confidence" in prediction:
            confidence = prediction["confidence"]
            if (
                isinstance(confidence, bool)
                or not isinstance(confidence, (int, float))
                or not (math.isfinite(confidence) and 0.0 <= confidence <= 1.0)
            ):
                raise ValueError(f"model confidence must be a number between 0 and 1, got {confidence!r}")
        return prediction

    def is_fooled(self, example: dict[str, Any], prediction: dict[str, Any], context: dict[str, Any]) -> bool:
        """Dynabench's rule: fooled when the SQuAD word-overlap F1 of the two answer texts is below 0.4."""
        explanation = self.explain_verdict(example, prediction, context)
        return explanation.fooled

    def explain_verdict(
        self, example: dict[str, Any], prediction: dict[str, Any], context: dict[str, Any]
    ) -> VerdictExplanation:
        guess = (prediction.get("answer") or {}).get("text", "")
        score = token_f1(guess, example["answer"]["text"])
        return VerdictExplanation("word-overlap F1 of the model's answer with yours", score, FOOLED_BELOW_F1)

    def train(self, data_dir, out_dir=None, *, progress=True, **options):
        """Train the span head from DATA_DIR/squad_v2_dev_sample.json into ``out_dir``, or by default into a new
        version in the model store; see :mod:`dynaforge_qa.train` for the options."""
        from dynaforge.tasks.training import run_training
        from dynaforge_qa.train import train

        return run_training(train, data_dir, out_dir, task=self.code, model=MODEL_NAME, progress=progress, **options)


@hookimpl
def register_tasks(register):
    register(QATask())


@hookimpl
def register_metrics(register):
    register(Metric("span_f1", span_f1, "Mean SQuAD word-overlap F1 of the predicted and gold answer spans' texts."))
    register(
        Metric(
            "exact_match",
            span_exact_match,
            "Share of predicted answer spans whose text equals the gold one after SQuAD normalisation.",
        )
    )


@hookimpl
def register_importers(register):
    from dynaforge_qa.importers import SquadImporter

    register(SquadImporter())
