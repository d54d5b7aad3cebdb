"""Default metrics for targets a model writes (text) or states (a number), from the field's own libraries.

Text (a task whose one target is a text or references field; a gold value is one reference or a list of them):

* ``chrf``, ``chrf_pp``: chrF and chrF++ (Popović 2015, 2017) as ``sacrebleu`` computes them over the corpus
  (character 6-grams, and word 2-grams for chrF++; beta 2), 0 to 100;
* ``bleu``: corpus BLEU (Papineni et al. 2002) by ``sacrebleu`` (its ``13a`` tokenizer, exponential smoothing),
  0 to 100;
* ``ter``: translation edit rate (Snover et al. 2006) by ``sacrebleu``, 0 and up, lower is better;
* ``rouge_l``: ROUGE-L F-measure (Lin 2004) by ``rouge-score``, with a Unicode word tokenizer (its own keeps only
  ASCII letters and digits), the best over the references, averaged over items, 0 to 1;
* ``token_f1``: word-overlap F1 (as extractive QA scores it) after normalisation, the best over the references,
  averaged, 0 to 1;
* ``normalized_exact_match``: the share of outputs equal to a reference after the target field's ``normalize``
  rules (all of :data:`~dynaforge.tasks.fields.NORMALIZATIONS` when the field sets none), 0 to 1.

Numbers (a task whose one target is a number field):

* ``mae``: mean absolute error over the items with a usable prediction, lower is better;
* ``within_tolerance``: the share of items predicted within the field's ``tolerance`` (an unusable answer is not).

A prediction the model could not give (None) scores as the empty text: it matches no reference. sacrebleu
(which imports numpy) and rouge-score are imported when a metric is computed, never when it is registered, so the
API process that lists metrics does not load them. The sacrebleu metrics give the bootstrap a ``statistic``: the
per-item sufficient statistics are extracted once and summed per resample, as sacrebleu's own paired bootstrap does.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from dynaforge.hookspecs import hookimpl
from dynaforge.tasks.base import Metric, MetricItem
from dynaforge.tasks.fields import NORMALIZATIONS, NumberField, Role, TextField, normalize_text, references

if TYPE_CHECKING:
    from dynaforge.tasks.base import Task

#: The rules token F1 and ROUGE-L compare words after (and exact match when the field sets none).
DEFAULT_NORMALIZATION = tuple(NORMALIZATIONS)
_WORD = re.compile(r"\w+", re.UNICODE)

# ------------------------------------------------------------------------------------------------------------ helpers


def _hypotheses(preds: Sequence[Any]) -> list[str]:
    return [p if isinstance(p, str) else "" for p in preds]


def _references(golds: Sequence[Any]) -> list[list[str]]:
    refs = []
    for i, gold in enumerate(golds):
        texts = [g for g in references(gold) if isinstance(g, str)]
        if not texts:
            raise ValueError(f"item {i}'s gold is not text: this metric applies to a task whose one target is text")
        refs.append(texts)
    return refs


def _streams(refs: list[list[str]]) -> list[list[str | None]]:
    """sacrebleu's reference streams: stream j holds every item's j-th reference (None where an item has fewer)."""
    width = max(len(r) for r in refs)
    return [[r[j] if j < len(r) else None for r in refs] for j in range(width)]


def _target_field(task: Task, kind: type) -> Any:
    targets = task.fields_with(Role.TARGET)
    if len(targets) != 1 or not isinstance(targets[0], kind):
        raise ValueError(f"applies to a task whose one target is a {kind.__name__}")
    return targets[0]


# ---------------------------------------------------------------------------------------------------------- sacrebleu
@cache
def _sacrebleu(name: str) -> Any:
    from sacrebleu.metrics import BLEU, CHRF, TER

    made: dict[str, Callable[[], Any]] = {
        "chrf": CHRF,
        "chrf_pp": lambda: CHRF(word_order=2),
        "bleu": BLEU,
        "ter": TER,
    }
    return made[name]()


def corpus_score(name: str, golds: Sequence[Any], preds: Sequence[Any]) -> float:
    """sacrebleu's corpus score of ``name`` (``chrf``, ``chrf_pp``, ``bleu``, ``ter``) of ``preds`` against the
    references in ``golds``."""
    if len(golds) != len(preds):
        raise ValueError("golds and preds differ in length")
    if not golds:
        return 0.0
    return float(_sacrebleu(name).corpus_score(_hypotheses(preds), _streams(_references(golds))).score)


def corpus_statistic(name: str, golds: Sequence[Any], preds: Sequence[Any]) -> Callable[[Sequence[int]], float]:
    """The bootstrap's form of :func:`corpus_score`: per-item statistics extracted once, summed per resample."""
    import numpy as np

    metric = _sacrebleu(name)
    stats = np.asarray(metric._extract_corpus_statistics(_hypotheses(preds), _streams(_references(golds))))

    def value(indices: Sequence[int]) -> float:
        total = stats[np.asarray(indices, dtype=np.intp)].sum(axis=0).tolist()
        return float(metric._compute_score_from_stats(total).score)

    return value


#: The metrics the ``metric_below`` fooled rule can apply to one output (higher is better for each).
SENTENCE_METRICS: tuple[str, ...] = ("chrf", "chrf_pp", "bleu", "rouge_l", "token_f1")


def sentence_score(name: str, gold: Any, output: Any) -> float:
    """One output's score against its references (``gold``: one or a list) by a metric of
    :data:`SENTENCE_METRICS`: chrF and chrF++ as sacrebleu scores one segment, BLEU as its ``sentence_score`` does
    (effective n-gram order, so a short output is not zero for want of 4-grams), ROUGE-L and token F1 their best
    over the references."""
    if name not in SENTENCE_METRICS:
        raise ValueError(f"no sentence form of metric {name!r}; one of {', '.join(SENTENCE_METRICS)}")
    (refs,) = _references([gold])
    (said,) = _hypotheses([output])
    if name == "bleu":
        from sacrebleu.metrics import BLEU

        return float(BLEU(effective_order=True).sentence_score(said, refs).score)
    if name == "rouge_l":
        return float(_rouge().score_multi(refs, said)["rougeL"].fmeasure)
    if name == "token_f1":
        return max(token_f1_one(r, said) for r in refs)
    return float(_sacrebleu(name).sentence_score(said, refs).score)


def _sacrebleu_metric(name: str, description: str, higher_is_better: bool = True) -> Metric:
    def compute(golds: list[Any], preds: list[Any]) -> float:
        return corpus_score(name, golds, preds)

    def statistic(golds: list[Any], preds: list[Any]) -> Callable[[Sequence[int]], float]:
        return corpus_statistic(name, golds, preds)

    compute.__name__ = statistic.__name__ = name
    return Metric(name, compute, description, higher_is_better, statistic=statistic)


# ------------------------------------------------------------------------------------------------- word-level metrics
def words(text: str) -> list[str]:
    """The words token F1 and ROUGE-L compare: :data:`DEFAULT_NORMALIZATION`, then runs of Unicode word
    characters."""
    return _WORD.findall(normalize_text(text, DEFAULT_NORMALIZATION))


def token_f1_one(reference: str, output: str) -> float:
    """Word-overlap F1 of one output against one reference (the extractive-QA F1, without an English article rule)."""
    gold, said = words(reference), words(output)
    if not gold or not said:
        return float(gold == said)
    common = sum((Counter(gold) & Counter(said)).values())
    if not common:
        return 0.0
    precision, recall = common / len(said), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def token_f1(golds: list[Any], preds: list[Any]) -> float:
    """Mean over items of the best token F1 against any reference."""
    refs, hyps = _references(golds), _hypotheses(preds)
    if not refs:
        return 0.0
    return sum(max(token_f1_one(r, h) for r in rs) for rs, h in zip(refs, hyps, strict=True)) / len(refs)


class _Words:
    """rouge-score's tokenizer interface over :func:`words`."""

    def tokenize(self, text: str) -> list[str]:
        return words(text)


@cache
def _rouge() -> Any:
    from rouge_score.rouge_scorer import RougeScorer

    return RougeScorer(["rougeL"], tokenizer=_Words())


def rouge_l(golds: list[Any], preds: list[Any]) -> float:
    """Mean over items of rouge-score's ROUGE-L F-measure, the best over the references."""
    refs, hyps = _references(golds), _hypotheses(preds)
    if not refs:
        return 0.0
    scorer = _rouge()
    total = sum(float(scorer.score_multi(rs, h)["rougeL"].fmeasure) for rs, h in zip(refs, hyps, strict=True))
    return total / len(refs)


def normalized_exact_match(golds: list[Any], preds: list[Any], *, task: Task) -> float:
    """Share of outputs equal to a reference after the target field's ``normalize`` rules (all of them when it sets
    none)."""
    field = _target_field(task, TextField)
    rules = field.normalize or DEFAULT_NORMALIZATION
    refs, hyps = _references(golds), _hypotheses(preds)
    if not refs:
        return 0.0
    hits = 0
    for rs, h in zip(refs, hyps, strict=True):
        said = normalize_text(h, rules)
        hits += any(normalize_text(r, rules) == said for r in rs)
    return hits / len(refs)


# ------------------------------------------------------------------------------------------------------------ numbers
def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def mean_absolute_error(items: list[MetricItem]) -> float:
    """Mean of ``|prediction - gold|`` over items whose prediction and gold are numbers."""
    pairs = [(float(i.gold), float(i.prediction)) for i in items if _number(i.gold) and _number(i.prediction)]
    if not pairs:
        raise ValueError("applies to a task whose one target is a number")
    return sum(abs(p - g) for g, p in pairs) / len(pairs)


def within_tolerance(golds: list[Any], preds: list[Any], *, task: Task) -> float:
    """Share of items predicted within the number field's ``tolerance`` of the gold (an unusable answer is not)."""
    field: NumberField = _target_field(task, NumberField)
    if not golds:
        return 0.0
    return sum(field.same(g, p) for g, p in zip(golds, preds, strict=True)) / len(golds)


@hookimpl(trylast=True)
def register_metrics(register: Callable[[Metric], None]) -> None:
    register(
        _sacrebleu_metric(
            "chrf", "chrF (sacrebleu): character 6-gram F-score (beta 2) of the outputs against the references, 0-100."
        )
    )
    register(
        _sacrebleu_metric(
            "chrf_pp", "chrF++ (sacrebleu): chrF with word unigrams and bigrams added, 0-100, as FLORES reports it."
        )
    )
    register(
        _sacrebleu_metric(
            "bleu", "Corpus BLEU (sacrebleu, 13a tokenizer): n-gram precision up to 4 with a brevity penalty, 0-100."
        )
    )
    register(
        _sacrebleu_metric(
            "ter",
            "Translation edit rate (sacrebleu): edits to turn an output into its closest reference, per reference "
            "word, as a percentage (lower is better).",
            higher_is_better=False,
        )
    )
    register(
        Metric(
            "rouge_l",
            rouge_l,
            "ROUGE-L F-measure (rouge-score, Unicode words): longest common subsequence of words with the best "
            "reference, averaged over items, 0-1.",
        )
    )
    register(
        Metric(
            "token_f1",
            token_f1,
            "Word-overlap F1 with the best reference after normalisation (case, punctuation, whitespace, Unicode), "
            "averaged over items, 0-1.",
        )
    )
    register(
        Metric(
            "normalized_exact_match",
            normalized_exact_match,
            "Share of outputs equal to a reference after the target field's normalisation rules (all of them when "
            "the field sets none), 0-1.",
            takes_task=True,
        )
    )
    register(
        Metric(
            "mae",
            mean_absolute_error,
            "Mean absolute error of the numbers predicted (lower is better). Items without a usable prediction are "
            "left out: rank on within_tolerance, which counts them as misses.",
            higher_is_better=False,
            reads="items",
            needs=("prediction",),
        )
    )
    register(
        Metric(
            "within_tolerance",
            within_tolerance,
            "Share of numbers predicted within the target field's tolerance of the gold (an unusable answer is a "
            "miss), 0-1.",
            takes_task=True,
        )
    )
