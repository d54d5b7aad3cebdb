"""A test-only plugin: a tiny classification task with a deterministic model, and a slow model for timeouts."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

from dynaforge import ChoiceField, DataSelection, ModelSpec, Role, Task, TextField, TrainingRecipe, hookimpl
from dynaforge.adversaries.templates import Template, TemplateAdversary


def keyword_model(inputs):
    """Predicts 'good' when the text contains the word 'good', else 'bad'."""
    return [
        {"label": "good" if "good" in item["text"].lower().split() else "bad", "probabilities": {}} for item in inputs
    ]


def slow_model(inputs):
    time.sleep(2.0)
    return keyword_model(inputs)


def broken_model(inputs):
    return [{"label": "not-a-label"} for _ in inputs]


def picky_model(inputs):
    """The keyword model, but an answer the task cannot read for a text with the word 'weird'."""
    return [
        {"label": "not-a-label"} if "weird" in item["text"].lower().split() else answer
        for item, answer in zip(inputs, keyword_model(inputs), strict=True)
    ]


# ---------------------------------------------------------------- a trainable toy model (no torch)


def train_words(
    data,
    out_dir: Path,
    *,
    seed: int,
    report,
    progress: bool,
    smoothing: float = 1.0,
    min_count: int = 1,
    pause_s: float = 0.0,
    ballast_mb: int = 0,
):
    """A training recipe: a naive Bayes over the words of ``text`` from the platform's examples, written as JSON
    (deterministic: counting does not depend on order or seed). ``pause_s`` waits between stages, so that tests can
    watch progress and cancel a running job; ``ballast_mb`` allocates that much, to meet a memory limit."""
    ballast = bytearray(ballast_mb * 1024 * 1024)
    counts = {"good": Counter(), "bad": Counter()}
    labels = Counter()
    report(0.2, "counting words")
    time.sleep(pause_s)
    del ballast
    for example in data.examples:
        label = example.get("label")
        if label not in counts:
            continue
        labels[label] += 1
        counts[label].update(str(example.get("text", "")).lower().split())
    if len(labels) < 2:
        raise ValueError(f"the examples need both labels, good and bad; they have {sorted(labels) or 'none'}")
    vocabulary = sorted(
        w for w in set(counts["good"]) | set(counts["bad"]) if sum(c[w] for c in counts.values()) >= min_count
    )
    report(0.6, "writing weights")
    time.sleep(pause_s)
    weights = {
        "format": "toy-words/1",
        "smoothing": smoothing,
        "priors": {k: labels[k] for k in sorted(labels)},
        "counts": {k: {w: counts[k][w] for w in vocabulary if counts[k][w]} for k in sorted(counts)},
    }
    Path(out_dir, "words.json").write_text(json.dumps(weights, sort_keys=True, indent=1) + "\n", encoding="utf-8")
    correct = sum(_classify(weights, e.get("text", "")) == e.get("label") for e in data.examples)
    return {"training_accuracy": correct / max(1, len(data.examples)), "vocabulary": len(vocabulary)}


def _classify(weights, text: str) -> str:
    import math

    smoothing = weights["smoothing"]
    vocabulary = set().union(*(set(c) for c in weights["counts"].values())) or {""}
    best, best_score = "bad", -math.inf
    for label in ("good", "bad"):
        counts = weights["counts"].get(label, {})
        total = sum(counts.values()) + smoothing * len(vocabulary)
        score = math.log(weights["priors"].get(label, 0) + 1)
        score += sum(math.log((counts.get(w, 0) + smoothing) / total) for w in str(text).lower().split())
        if score > best_score:
            best, best_score = label, score
    return best


class WordsModel:
    def __init__(self, weights):
        self.weights = weights

    def predict(self, inputs):
        return [{"label": _classify(self.weights, item["text"]), "probabilities": {}} for item in inputs]


def fit_words(examples, *, seed: int) -> WordsModel:
    """The toy task's fixed recipe for data selections: the same naive Bayes, counted on the selected examples."""
    counts = {"good": Counter(), "bad": Counter()}
    labels = Counter(e["label"] for e in examples if e.get("label") in counts)
    for example in examples:
        if example.get("label") in counts:
            counts[example["label"]].update(str(example.get("text", "")).lower().split())
    return WordsModel({"smoothing": 1.0, "priors": dict(labels), "counts": {k: dict(c) for k, c in counts.items()}})


def load_words(weights_artifact: str | None = None, weights_dir: str | Path | None = None) -> WordsModel:
    """The recipe's factory: the trained words by model-store digest (or in a folder the recipe wrote), else a model
    that knows one word."""
    if weights_dir is not None:
        return WordsModel(json.loads((Path(weights_dir) / "words.json").read_text(encoding="utf-8")))
    if weights_artifact is None:
        return WordsModel(
            {"smoothing": 1.0, "priors": {"good": 1, "bad": 1}, "counts": {"good": {"good": 5}, "bad": {}}}
        )
    from dynaforge.model_store import resolve_weights

    folder = resolve_weights("toy", "words", Path("."), weights_artifact=weights_artifact).path
    return WordsModel(json.loads((folder / "words.json").read_text(encoding="utf-8")))


class ToyTask(Task):
    code = "toy"
    name = "Toy"
    instructions = "Write a text and say whether it is good or bad."
    labels = ("good", "bad")
    fields = (
        TextField(name="topic", role=Role.CONTEXT, required=False, max_length=200),
        TextField(name="text", role=Role.INPUT, max_length=100),
        ChoiceField(name="label", role=Role.TARGET),
        TextField(name="note", role=Role.METADATA, required=False, max_length=50),
    )
    default_target_models = (ModelSpec("keyword", "python", {"callable": "toy_plugin:keyword_model"}),)
    demo_contexts = ({"topic": "weather"}, {"topic": "food"}, {"topic": "films"})
    submission_kinds = ("model", "predictions", "selection")
    data_selection = DataSelection(budget=5, trainer="toy_plugin:fit_words", description="Naive Bayes over words.")
    training_recipes = (
        TrainingRecipe(
            name="words",
            model="words",
            trainer="toy_plugin:train_words",
            factory="toy_plugin:load_words",
            description="Naive Bayes over the words of the examples.",
            hyperparameters={"smoothing": 1.0, "min_count": 1, "pause_s": 0.0, "ballast_mb": 0},
            tuning={"smoothing": (1.0, 0.05, 20.0), "min_count": (1, 2)},
        ),
    )


def toy_synonym(context, draft, rng):
    """A template the keyword model falls for: 'good' -> 'fine' keeps the gold for a reader."""
    if draft is None or "good" not in draft["text"].split():
        return []
    return [({**draft, "text": draft["text"].replace("good", "fine")}, "'fine' is 'good' to a reader")]


TOY_SYNONYMS = TemplateAdversary("toy-synonyms", "toy", (Template("synonym", toy_synonym),))


class ToyPlugin:
    __name__ = "toy_plugin"

    @hookimpl
    def register_tasks(self, register):
        register(ToyTask())

    @hookimpl
    def register_adversaries(self, register):
        register(TOY_SYNONYMS)


PLUGIN = ToyPlugin()  # for an entry point (``toy = toy_plugin:PLUGIN``) in tests that start processes
