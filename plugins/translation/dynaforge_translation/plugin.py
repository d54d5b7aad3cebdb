"""French to English translation: annotators write French sentences that a language model translates wrongly.

The target is a model that writes, behind an OpenAI-compatible API: by default the demo's local engine (Gemma 3
270M on llama.cpp, :mod:`dynaforge.inference.engine`), at ``DYNAFORGE_LLM_URL``. The model is fooled when the chrF of
its translation against the annotator's references (one to three) is under :data:`CHRF_THRESHOLD`, as sacrebleu
computes it for one segment; models on the board are ranked by corpus chrF++ and chrF with BLEU and TER beside
them. Robustness is how far a model's translation moves (chrF) when the French sentence has a typo or loses its
punctuation.
"""

from __future__ import annotations

from typing import Any

from dynaforge import ReferencesField, Role, Task, TextField, VerdictExplanation, hookimpl
from dynaforge.defaults.text_metrics import sentence_score
from dynaforge.inference.engine import target_model
from dynaforge_translation.demo_data import SCORING_SET

#: Below this chrF (0-100) against the references, the translation is wrong enough to count as fooled.
CHRF_THRESHOLD = 50.0

#: The prompt: the default model is a small pretrained (not instruction-tuned) model, so it is shown two examples
#: (written for this plugin) and completes the third; the reply ends at the line's end.
PROMPT = (
    "Translate French into English.\n\n"
    "French: Le chien dort dans le jardin.\nEnglish: The dog is sleeping in the garden.\n\n"
    "French: Nous avons acheté du pain ce matin.\nEnglish: We bought bread this morning.\n\n"
    "French: {source}\nEnglish:"
)


class TranslationTask(Task):
    code = "translate-fr-en"
    name = "French to English translation"
    description = "Write French sentences that a small language model translates into English wrongly."
    instructions = (
        "Write one French sentence (up to 300 characters) that the model will translate into English wrongly, then "
        "give a correct English translation, or several, one per line: any of them counts as right. The model is "
        f"fooled when the chrF of its translation against your references is under {CHRF_THRESHOLD:g} (0-100; chrF "
        "compares character sequences, so a correct translation in other words can still score low: give the "
        "likely wordings). Idioms, false friends, gender and agreement, negation and numbers are good places to "
        "look. Do not write personal information about real people."
    )
    fields = (
        TextField(name="source", role=Role.INPUT, max_length=300, description="A French sentence."),
        ReferencesField(
            name="translation",
            role=Role.TARGET,
            max_length=400,
            max_references=3,
            normalize=("unicode", "case", "punctuation", "whitespace"),
            description="Correct English translations, one per line.",
        ),
    )
    metrics = ("chrf_pp", "chrf", "bleu", "ter")
    principal_metric = "chrf_pp"
    fooled_threshold = CHRF_THRESHOLD  # its owners may set another (the fooledThreshold setting)
    perturbations = ("typo", "punctuation")
    submission_kinds = ("model", "predictions")
    default_target_models = (target_model(PROMPT, "translation", stop=["\n"]),)
    sample_examples = (
        {"source": "Il pleut des cordes depuis ce matin.", "translation": ["It has been pouring since this morning."]},
        {
            "source": "Je ne suis pas sûr qu'elle vienne.",
            "translation": ["I am not sure she will come.", "I'm not sure she's coming."],
        },
    )

    def is_fooled(self, example: dict[str, Any], prediction: dict[str, Any], context: dict[str, Any]) -> bool:
        return self.explain_verdict(example, prediction, context).fooled

    def explain_verdict(
        self, example: dict[str, Any], prediction: dict[str, Any], context: dict[str, Any]
    ) -> VerdictExplanation:
        output = prediction.get("translation")
        threshold = CHRF_THRESHOLD if self.fooled_threshold is None else self.fooled_threshold
        measure = "chrF of the model's translation against your references"
        if not isinstance(output, str) or not output.strip():  # no translation at all: fooled
            return VerdictExplanation(measure, 0.0, threshold)
        return VerdictExplanation(measure, sentence_score("chrf", example.get("translation"), output), threshold)

    def demo_scoring_set(self) -> list[dict[str, Any]]:
        return [dict(item) for item in SCORING_SET]


TASK = TranslationTask()


@hookimpl
def register_tasks(register: Any) -> None:
    register(TASK)
