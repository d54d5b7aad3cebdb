"""Train the qa span head on frozen MiniLM token states of SQuAD 2.0 paragraphs.

Usage (either; without ``--out`` the head becomes a new version in the model store, which the model's loader then
prefers to the weights shipped in the package)::

    dynaforge train qa --data ../shared/data/qa [--out DIR] [--limit N]
    python -m dynaforge_qa.train --data ../shared/data/qa [--out DIR] [--limit N] [--seed 0] [--epochs 40]

Steps (all seeded, no dates written):

1. read ``squad_v2_dev_sample.json`` (SQuAD 2.0 format) and keep the answerable questions, each with all its
   gold answers (answers whose text does not sit at its ``answer_start`` are dropped and counted);
2. split the *paragraphs* (not the questions) with a seeded shuffle: 20% held out, so held-out questions are about
   passages the head never saw; of the rest, 15% of the paragraphs are a validation part that only chooses the
   number of epochs;
3. encode every (question, passage) pair once with the frozen encoder (overlapping windows, as at inference) and
   keep the token states; training epochs then only run the small head. Each fitting question is also paired
   with another paragraph (no answer there), and validation also hides each paragraph among three others, so that
   the head learns, and is chosen for, telling the window that holds the answer from those that do not;
4. train the head with AdamW (loss: minus the log probability of the gold spans, or of "no answer" in a window
   without one, under a softmax over the window's valid spans and the no-answer option), choose the epoch count
   with the best validation F1 (averaged with the neighbouring epochs), then retrain from the same
   initialisation on the fitting and validation windows for that many epochs;
5. score the held-out questions (SQuAD F1 and exact match, best over a question's gold answers) next to two
   trivial baselines: the passage's first sentence, and the sliding-window baseline of Richardson et al. (2013);
   and again with each held-out paragraph hidden among three others, so that passages span several windows;
6. write ``head.safetensors`` and ``metadata.json`` to the output folder.

The data file is only read; no sentence from it is written anywhere.

:func:`train_recipe` is the task's ``default`` training recipe (``QATask.training_recipes``): the same pipeline
on the platform's examples, with this file as optional base data (see its docstring and the plugin's README).
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dynaforge.tasks.training import (
    TrainingData,
    encoder_record,
    file_info,
    no_report,
    save_head,
    training_main,
    write_json_atomically,
)

from .model import (
    DEFAULT_MAX_LENGTH,
    DEFAULT_STRIDE,
    EMBEDDING_DIM,
    HEAD_FILE,
    MAX_ANSWER_TOKENS,
    METADATA_FILE,
    MODEL_NAME,
    TOKEN_FEATURES,
    encoder_path,
)
from .scoring import best_over_golds, exact_match, token_f1

DATA_FILE = "squad_v2_dev_sample.json"
HOLDOUT_FRACTION = 0.20
DEFAULT_EXAMPLE_WEIGHT = 2.0
MIN_EXAMPLES = 20  # without base data: the fewest usable examples the recipe splits into fit, validation, held out
MIN_EXAMPLE_PASSAGES = 3  # without base data: the examples are split by passage, one part at least each
EXAMPLES_ARTICLE = "examples"  # the "article" of the platform examples' paragraphs (their keys: examples/N)
VALIDATION_FRACTION = 0.15
DEFAULTS: dict[str, Any] = {
    "epochs": 30,
    "rank": 16,
    "hidden": 64,
    "kernel": 5,
    "lr": 2e-3,
    "weight_decay": 1e-2,
    "dropout": 0.2,
    "state_dropout": 0.6,
    "batch_size": 16,
}


# --------------------------------------------------------------------------- data


@dataclass
class Question:
    qid: str
    question: str
    answers: list[tuple[str, int]]  # distinct (text, char start) gold answers


@dataclass
class Paragraph:
    key: str  # "title/index", for the record of which paragraphs were held out
    article: str
    context: str
    questions: list[Question] = field(default_factory=list)


def read_squad(path: Path) -> tuple[list[Paragraph], dict[str, int]]:
    """Paragraphs with their answerable questions, and counts of what was skipped."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} not found; --data must be a folder holding {DATA_FILE}") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise ValueError(f"{path}: expected SQuAD format, an object with a 'data' list of articles")
    paragraphs: list[Paragraph] = []
    skipped: Counter[str] = Counter()
    for a, article in enumerate(data["data"]):
        title = article.get("title", f"article{a}")
        for p, para in enumerate(article.get("paragraphs") or []):
            if not isinstance(para.get("context"), str) or not isinstance(para.get("qas"), list):
                raise ValueError(f"{path}: paragraph {p} of {title!r} needs a 'context' string and a 'qas' list")
            context = para["context"]
            paragraph = Paragraph(key=f"{title}/{p}", article=title, context=context)
            for qa in para["qas"]:
                if qa.get("is_impossible"):
                    skipped["unanswerable_questions"] += 1
                    continue
                answers: list[tuple[str, int]] = []
                for ans in qa.get("answers") or []:
                    text, start = ans.get("text"), ans.get("answer_start")
                    if (
                        not isinstance(text, str)
                        or not isinstance(start, int)
                        or context[start : start + len(text)] != text
                    ):
                        skipped["answers_not_at_their_offset"] += 1
                    elif (text, start) not in answers:
                        answers.append((text, start))
                if answers:
                    paragraph.questions.append(Question(str(qa.get("id", "")), qa["question"], answers))
                else:
                    skipped["questions_without_usable_answer"] += 1
            if paragraph.questions:
                paragraphs.append(paragraph)
    if not paragraphs:
        raise ValueError(f"{path}: no paragraph with an answerable question")
    return paragraphs, dict(skipped)


def split_paragraphs(
    paragraphs: list[Paragraph], seed: int
) -> tuple[list[Paragraph], list[Paragraph], list[Paragraph]]:
    """Seeded (fit, validation, held-out) split of the paragraphs; each part has at least one."""
    if len(paragraphs) < 3:
        raise ValueError(f"need at least 3 paragraphs with answerable questions to split, got {len(paragraphs)}")
    order = list(range(len(paragraphs)))
    random.Random(seed).shuffle(order)
    n_hold = max(1, round(HOLDOUT_FRACTION * len(order)))
    n_val = max(1, round(VALIDATION_FRACTION * (len(order) - n_hold)))
    hold = sorted(order[:n_hold])
    val = sorted(order[n_hold : n_hold + n_val])
    fit = sorted(order[n_hold + n_val :])
    return [paragraphs[i] for i in fit], [paragraphs[i] for i in val], [paragraphs[i] for i in hold]


def limit_paragraphs(paragraphs: list[Paragraph], limit: int, seed: int) -> list[Paragraph]:
    """A seeded choice of whole paragraphs holding about ``limit`` answerable questions (at least three)."""
    order = list(range(len(paragraphs)))
    random.Random(seed + 1).shuffle(order)
    kept: list[int] = []
    count = 0
    for i in order:
        if count >= limit and len(kept) >= 3:
            break
        kept.append(i)
        count += len(paragraphs[i].questions)
    return [paragraphs[i] for i in sorted(kept)]


def negative_pairs(
    paragraphs: list[Paragraph], seed: int, among: list[Paragraph] | None = None
) -> tuple[list[Question], list[str]]:
    """Every question again, paired with another paragraph of the same part (of the same article when there is
    one) and no answer: windows from which the head learns its no-answer score. With ``among``, the other
    paragraph is one of those, with another text."""
    rng = random.Random(seed + 2)
    questions, passages = [], []
    for paragraph in paragraphs:
        if among is None:
            others = [p for p in paragraphs if p is not paragraph]
        else:
            others = [p for p in among if p.context != paragraph.context]
        pool = [p for p in others if p.article == paragraph.article] or others
        for q in paragraph.questions if pool else []:
            questions.append(Question(q.qid, q.question, []))
            passages.append(rng.choice(pool).context)
    return questions, passages


def long_passages(paragraphs: list[Paragraph], seed: int, others: int = 3) -> tuple[list[Question], list[str]]:
    """Every question again, its paragraph hidden at a seeded place among ``others`` other paragraphs of the same
    part (blank lines between them), answer offsets shifted: passages several encoder windows long."""
    rng = random.Random(seed + 3)
    questions, passages = [], []
    for paragraph in paragraphs:
        chosen = rng.sample([p for p in paragraphs if p is not paragraph], min(others, len(paragraphs) - 1))
        chosen.insert(rng.randrange(len(chosen) + 1), paragraph)
        shift = sum(len(p.context) + 2 for p in chosen[: chosen.index(paragraph)])
        passage = "\n\n".join(p.context for p in chosen)
        for q in paragraph.questions:
            questions.append(Question(q.qid, q.question, [(text, start + shift) for text, start in q.answers]))
            passages.append(passage)
    return questions, passages


# --------------------------------------------------------------------------- baselines


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_WORD = re.compile(r"\w+")


def first_sentence(passage: str) -> str:
    """Baseline (a): the passage's first sentence."""
    return _SENTENCE_END.split(passage.strip(), maxsplit=1)[0]


def sliding_window(passage: str, question: str) -> str:
    """Baseline (b): the sliding-window answer of Richardson et al. (2013, MCTest), adapted to spans.

    A window as wide as the question's distinct words slides over the passage's words; it scores the summed inverse
    count ``log(1 + 1/count(w))`` of the question words it covers (rare passage words weigh more). The answer is
    the best window's words that are not question words, in order (the first best window on ties).
    """
    words = [w.lower() for w in _WORD.findall(passage)]
    question_words = {w.lower() for w in _WORD.findall(question)}
    if not words or not question_words:
        return ""
    counts = Counter(words)
    weight = [math.log(1.0 + 1.0 / counts[w]) if w in question_words else 0.0 for w in words]
    width = min(len(question_words), len(words))
    best_at, best = 0, float("-inf")
    for at in range(len(words) - width + 1):
        score = sum(weight[at : at + width])
        if score > best:
            best_at, best = at, score
    return " ".join(w for w in words[best_at : best_at + width] if w not in question_words)


def score_answers(predictions: list[str], questions: list[Question]) -> dict[str, Any]:
    """Mean SQuAD F1 and exact match (best over each question's gold answers), in percent, with n."""
    n = len(questions)
    f1 = sum(
        best_over_golds(token_f1, p, [t for t, _ in q.answers]) for p, q in zip(predictions, questions, strict=True)
    )
    em = sum(
        best_over_golds(exact_match, p, [t for t, _ in q.answers]) for p, q in zip(predictions, questions, strict=True)
    )
    return {"n": n, "f1": round(100 * f1 / max(n, 1), 2), "exact_match": round(100 * em / max(n, 1), 2)}


# --------------------------------------------------------------------------- encoding


@dataclass
class Encoded:
    """Per-window tensors of many (question, passage) pairs, trimmed to their real length."""

    states: list  # [L, D] float16 each
    input_ids: list
    question: list
    passage: list
    offsets: list
    q: list  # [D]
    feats: list  # [L, F]
    sample: list[int]  # which pair each window comes from
    gold_start: list  # [L] bool each: tokens that start a gold answer (all False when the window has none)
    gold_end: list
    weight: list  # float each: the window's weight in the training loss


def _gold_tokens(offsets, passage_mask, answers: list[tuple[str, int]]):
    """Token masks of the gold starts and ends of the answers that lie wholly inside this window."""
    import torch

    starts = torch.zeros(len(passage_mask), dtype=torch.bool)
    ends = torch.zeros(len(passage_mask), dtype=torch.bool)
    tokens = passage_mask.nonzero().flatten().tolist()
    if not tokens:
        return starts, ends
    lo, hi = int(offsets[tokens[0], 0]), int(offsets[tokens[-1], 1])
    for text, char_start in answers:
        char_end = char_start + len(text)
        if char_start < lo or char_end > hi:
            continue
        start_tok = max(t for t in tokens if int(offsets[t, 0]) <= char_start)
        end_tok = min(t for t in tokens if int(offsets[t, 1]) >= char_end)
        if end_tok >= start_tok:
            starts[start_tok] = True
            ends[end_tok] = True
    return starts, ends


def encode_pairs(
    encoder,
    questions: list[Question],
    passages: list[str],
    *,
    max_length: int,
    stride: int,
    progress: bool,
    desc: str,
    batch_size: int = 16,
    weight: float = 1.0,
) -> Encoded:
    """Encode every pair once (length-sorted batches), keeping each window's states and head inputs; each window
    weighs ``weight`` in the training loss."""
    import torch
    from tqdm import tqdm

    from .model import encode_windows, token_features

    out = Encoded(*([] for _ in Encoded.__dataclass_fields__))
    order = sorted(range(len(questions)), key=lambda k: len(passages[k]) + len(questions[k].question))
    with tqdm(total=len(order), desc=desc, unit="question", disable=not progress) as bar:
        for at in range(0, len(order), batch_size):
            idx = order[at : at + batch_size]
            windows = encode_windows(
                encoder,
                [questions[k].question for k in idx],
                [passages[k] for k in idx],
                max_length=max_length,
                stride=stride,
            )
            with torch.inference_mode():
                q, feats = token_features(windows, [questions[k].question for k in idx], [passages[k] for k in idx])
            for w in range(windows.states.shape[0]):
                length = int(windows.attention[w].sum())
                k = idx[int(windows.sample[w])]
                offsets = windows.offsets[w, :length]
                passage_mask = windows.passage[w, :length]
                gold_start, gold_end = _gold_tokens(offsets, passage_mask, questions[k].answers)
                out.states.append(windows.states[w, :length].half())
                out.input_ids.append(windows.input_ids[w, :length])
                out.question.append(windows.question[w, :length])
                out.passage.append(passage_mask)
                out.offsets.append(offsets)
                out.q.append(q[w])
                out.feats.append(feats[w, :length])
                out.sample.append(k)
                out.gold_start.append(gold_start)
                out.gold_end.append(gold_end)
                out.weight.append(weight)
            bar.update(len(idx))
    return out


def _batch(enc: Encoded, rows: list[int]):
    """Pad the chosen windows to the longest of them."""
    import torch
    from torch.nn.utils.rnn import pad_sequence

    def pad(items, value=0):
        return pad_sequence([items[r] for r in rows], batch_first=True, padding_value=value)

    states = pad(enc.states).float()
    lengths = torch.tensor([len(enc.input_ids[r]) for r in rows])
    attention = torch.arange(states.shape[1]).unsqueeze(0) < lengths.unsqueeze(1)
    return {
        "states": states,
        "q": torch.stack([enc.q[r] for r in rows]),
        "feats": pad(enc.feats),
        "attention": attention,
        "passage": pad(enc.passage, False),
        "gold_start": pad(enc.gold_start, False),
        "gold_end": pad(enc.gold_end, False),
        "weight": torch.tensor([enc.weight[r] for r in rows], dtype=torch.float32),
    }


# --------------------------------------------------------------------------- head training


def _logits(params, enc: Encoded, rows: list[int], *, batch_size: int = 32):
    """Start, end and no-answer logits of the chosen windows, padded to the longest window of all of them."""
    import torch

    from .model import head_logits

    width = max(len(enc.input_ids[r]) for r in rows)
    starts, ends, nulls = [], [], []
    with torch.inference_mode():
        for at in range(0, len(rows), batch_size):
            b = _batch(enc, rows[at : at + batch_size])
            start, end, null = head_logits(params, b["states"], b["q"], b["feats"], b["attention"], b["passage"])
            pad = width - start.shape[1]
            starts.append(torch.nn.functional.pad(start, (0, pad), value=-1e4))
            ends.append(torch.nn.functional.pad(end, (0, pad), value=-1e4))
            nulls.append(null)
    return torch.cat(starts), torch.cat(ends), torch.cat(nulls)


def predict_encoded(params, enc: Encoded, passages: list[str]) -> list[str]:
    """The model's answer text for every pair of ``enc``, exactly as ``QAModel.predict`` decodes it."""
    import torch
    from torch.nn.utils.rnn import pad_sequence

    from .model import Windows, choose_answers

    rows = list(range(len(enc.states)))
    start, end, null = _logits(params, enc, rows)
    windows = Windows(
        states=None,
        input_ids=None,
        attention=None,
        question=None,
        passage=pad_sequence(enc.passage, batch_first=True, padding_value=False),
        offsets=pad_sequence(enc.offsets, batch_first=True),
        sample=torch.tensor(enc.sample),
    )
    return [o["answer"]["text"] for o in choose_answers(windows, start, end, null, passages, params["length.bias"])]


def _loss(start, end, null, length_bias, passage, gold_start, gold_end, weights=None):
    """Minus the log probability of the right choice under a softmax over a window's valid spans and "no answer",
    averaged over the windows (a weighted mean with ``weights``, one per window).

    The right choice is the gold spans (a gold start paired with a gold end) when the window holds any, else "no
    answer"; windows whose gold spans are all longer than the longest allowed answer are left out.
    """
    import torch

    from .model import span_scores

    spans = span_scores(start, end, passage, length_bias).flatten(1)
    gold = (gold_start.unsqueeze(2) & gold_end.unsqueeze(1)).flatten(1) & torch.isfinite(spans)
    has_gold = gold.any(dim=1)
    usable = has_gold | ~gold_start.any(dim=1)
    log_all = torch.logsumexp(torch.cat([spans, null.unsqueeze(1)], dim=1), dim=1)
    log_gold = torch.logsumexp(spans.masked_fill(~gold, float("-inf")), dim=1)
    log_right = torch.where(has_gold, log_gold, null)
    if not bool(usable.any()):
        return log_all.sum() * 0.0
    losses = (log_all - log_right)[usable]
    if weights is None:
        return losses.mean()
    return (losses * weights[usable]).sum() / weights[usable].sum()


@contextmanager
def _one_torch_thread():
    """Run the head's training on one intra-op thread (restored afterwards): with several, the order in which
    gradients are summed varies from run to run, and so would the trained weights in their last bits."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def fit_head(
    enc: Encoded,
    *,
    epochs: int,
    seed: int,
    options: dict[str, Any],
    progress: bool,
    desc: str,
    evaluate=None,
    initial: dict[str, Any] | None = None,
    on_epoch: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, Any], list[float]]:
    """Train a head on the windows of ``enc``, each window's loss weighted by ``enc.weight``: a fresh one, or a
    copy of ``initial``. ``evaluate(params)`` and ``on_epoch(done, epochs)`` after each epoch. One torch thread,
    so that a seed gives the same weights bit for bit."""
    import torch
    from tqdm import tqdm

    from .model import head_logits, init_head

    rows = list(range(len(enc.states)))
    if not any(bool(g.any()) for g in enc.gold_start):
        raise ValueError("no training window holds a gold answer; check the data's answer offsets")
    weighted = any(w != 1.0 for w in enc.weight)
    torch.manual_seed(seed)
    if initial is None:
        initial = init_head(rank=options["rank"], hidden=options["hidden"], kernel=options["kernel"], seed=seed)
    params = {k: v.detach().clone().requires_grad_(True) for k, v in initial.items()}
    optimizer = torch.optim.AdamW(params.values(), lr=options["lr"], weight_decay=options["weight_decay"])
    steps_per_epoch = math.ceil(len(rows) / options["batch_size"])
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=options["lr"], total_steps=max(1, epochs * steps_per_epoch), pct_start=0.1
    )
    rng = random.Random(seed)
    history: list[float] = []
    with tqdm(total=epochs, desc=desc, unit="epoch", disable=not progress) as bar, _one_torch_thread():
        for epoch in range(1, epochs + 1):
            rng.shuffle(rows)
            total = 0.0
            for at in range(0, len(rows), options["batch_size"]):
                b = _batch(enc, rows[at : at + options["batch_size"]])
                start, end, null = head_logits(
                    params,
                    b["states"],
                    b["q"],
                    b["feats"],
                    b["attention"],
                    b["passage"],
                    dropout=options["dropout"],
                    state_dropout=options["state_dropout"],
                    training=True,
                )
                loss = _loss(
                    start,
                    end,
                    null,
                    params["length.bias"],
                    b["passage"],
                    b["gold_start"],
                    b["gold_end"],
                    b["weight"] if weighted else None,
                )
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                scheduler.step()
                total += float(loss.detach()) * len(b["q"])
            postfix = {"loss": f"{total / len(rows):.3f}"}
            if evaluate is not None:
                history.append(evaluate({k: v.detach() for k, v in params.items()}))
                postfix["val_f1"] = f"{history[-1]:.1f}"
            bar.set_postfix(postfix)
            bar.update(1)
            if on_epoch is not None:
                on_epoch(epoch, epochs)
    return {k: v.detach().contiguous() for k, v in params.items()}, history


def _smoothed(history: list[float], epoch: int) -> float:
    """Validation F1 averaged over an epoch and its neighbours: a small validation part is noisy from epoch to
    epoch, and a lone lucky epoch should not decide how long the final head trains."""
    around = history[max(0, epoch - 1) : epoch + 2]
    return sum(around) / len(around)


def _flatten(paragraphs: list[Paragraph]) -> tuple[list[Question], list[str]]:
    questions = [q for p in paragraphs for q in p.questions]
    passages = [p.context for p in paragraphs for _ in p.questions]
    return questions, passages


def _concat(a: Encoded, b: Encoded) -> Encoded:
    """The windows of ``a`` and ``b``, for training (their pair indices no longer point at one list of passages)."""
    return Encoded(*[getattr(a, f) + getattr(b, f) for f in Encoded.__dataclass_fields__])


# --------------------------------------------------------------------------- the pipeline


@dataclass
class Part:
    """Questions, their passages and their encoded windows."""

    questions: list[Question]
    passages: list[str]
    enc: Encoded


@dataclass
class Prepared:
    """Every encoded set a training run needs.

    ``fit`` and ``validation`` (each with its ``*_negatives``) and the held-out part come from one split of
    paragraphs; ``extra_fit`` (platform examples, with negatives) join the fitting windows of both fits,
    ``extra_final`` only the final one (they are about validation paragraphs).
    """

    fit: Part
    fit_negatives: Part
    validation: Part
    validation_negatives: Part
    validation_long: Part
    holdout: Part
    holdout_long: Part
    extra_fit: list[Part] = field(default_factory=list)
    extra_final: list[Part] = field(default_factory=list)

    @classmethod
    def from_parts(cls, parts: list[Part]) -> Prepared:
        """The seven sets of :func:`plan_parts`, encoded, in its order."""
        if len(parts) != 7:
            raise ValueError(f"expected the 7 encoded sets of plan_parts, got {len(parts)}")
        fit, fit_negatives, validation, validation_negatives, validation_long, holdout, holdout_long = parts
        return cls(fit, fit_negatives, validation, validation_negatives, validation_long, holdout, holdout_long)


@dataclass
class ToEncode:
    """Questions and passages waiting to be encoded, with the description of their progress bar and the weight of
    their windows in the training loss."""

    questions: list[Question]
    passages: list[str]
    desc: str
    weight: float = 1.0


def plan_parts(fit_par: list[Paragraph], val_par: list[Paragraph], hold_par: list[Paragraph], seed: int):
    """What to encode for a (fit, validation, held-out) split of paragraphs, in the order :func:`prepare` takes:
    each part's questions, the fit and validation negatives, and the validation and held-out long passages."""
    return [
        ToEncode(*_flatten(fit_par), "encode fit"),
        ToEncode(*negative_pairs(fit_par, seed), "encode fit negatives"),
        ToEncode(*_flatten(val_par), "encode validation"),
        ToEncode(*negative_pairs(val_par, seed), "encode validation negatives"),
        ToEncode(*long_passages(val_par, seed), "encode validation, long"),
        ToEncode(*_flatten(hold_par), "encode held-out"),
        ToEncode(*long_passages(hold_par, seed), "encode held-out, long"),
    ]


def encode_all(
    plan: list[ToEncode], *, progress: bool, on_step: Callable[[int, int], None] | None = None
) -> list[Part]:
    """Encode every set of ``plan`` with the shared frozen encoder (one encoding per set, as at inference)."""
    from dynaforge.inference.encoders import shared_encoder

    encoder = shared_encoder(encoder_path())
    parts = []
    for done, item in enumerate(plan, start=1):
        enc = encode_pairs(
            encoder,
            item.questions,
            item.passages,
            max_length=DEFAULT_MAX_LENGTH,
            stride=DEFAULT_STRIDE,
            progress=progress,
            desc=item.desc,
            weight=item.weight,
        )
        parts.append(Part(item.questions, item.passages, enc))
        if on_step is not None:
            on_step(done, len(plan))
    return parts


def _windows(parts: list[Part]) -> Encoded:
    out = parts[0].enc
    for part in parts[1:]:
        out = _concat(out, part.enc)
    return out


def choose_and_fit(
    prepared: Prepared,
    *,
    opts: dict[str, Any],
    seed: int,
    progress: bool,
    initial: dict[str, Any] | None = None,
    on_epoch: Callable[[str, int, int], None] | None = None,
) -> tuple[dict[str, Any], list[float], int]:
    """Train on the fitting windows for ``opts["epochs"]`` epochs, scoring the validation part after each; then
    retrain from the same start on the fitting and validation windows for the best epoch count. Returns the
    head, the validation F1 by epoch and the epoch count."""
    val, val_long = prepared.validation, prepared.validation_long

    def val_f1(params) -> float:
        """Mean of the validation F1 on the paragraphs alone and hidden in long passages."""
        single = score_answers(predict_encoded(params, val.enc, val.passages), val.questions)["f1"]
        long = score_answers(predict_encoded(params, val_long.enc, val_long.passages), val_long.questions)["f1"]
        return round((single + long) / 2, 2)

    fitting = [prepared.fit, prepared.fit_negatives, *prepared.extra_fit]
    _, history = fit_head(
        _windows(fitting),
        epochs=opts["epochs"],
        seed=seed,
        options=opts,
        progress=progress,
        desc="choose epochs",
        evaluate=val_f1,
        initial=initial,
        on_epoch=None if on_epoch is None else lambda done, total: on_epoch("choose epochs", done, total),
    )
    best_epochs = 1 + max(range(len(history)), key=lambda e: (_smoothed(history, e), -e))
    final = [
        prepared.fit,
        prepared.fit_negatives,
        prepared.validation,
        prepared.validation_negatives,
        *prepared.extra_fit,
        *prepared.extra_final,
    ]
    params, _ = fit_head(
        _windows(final),
        epochs=best_epochs,
        seed=seed,
        options=opts,
        progress=progress,
        desc="final fit",
        initial=initial,
        on_epoch=None if on_epoch is None else lambda done, total: on_epoch("final fit", done, total),
    )
    return params, history, best_epochs


def score_part(params, part: Part) -> dict[str, dict[str, Any]]:
    """The head's answers to a part's questions scored next to the two baselines."""
    questions, passages = part.questions, part.passages
    return {
        "model": score_answers(predict_encoded(params, part.enc, passages), questions),
        "baseline_first_sentence": score_answers([first_sentence(p) for p in passages], questions),
        "baseline_sliding_window": score_answers(
            [sliding_window(p, q.question) for p, q in zip(passages, questions, strict=True)], questions
        ),
    }


def holdout_metrics(held_out: dict[str, Any], held_out_long: dict[str, Any]) -> dict[str, Any]:
    return {
        "holdout_questions": held_out["model"]["n"],
        "holdout_f1": held_out["model"]["f1"],
        "holdout_exact_match": held_out["model"]["exact_match"],
        "baseline_first_sentence_f1": held_out["baseline_first_sentence"]["f1"],
        "baseline_first_sentence_exact_match": held_out["baseline_first_sentence"]["exact_match"],
        "baseline_sliding_window_f1": held_out["baseline_sliding_window"]["f1"],
        "baseline_sliding_window_exact_match": held_out["baseline_sliding_window"]["exact_match"],
        "holdout_long_passages_f1": held_out_long["model"]["f1"],
        "holdout_long_passages_exact_match": held_out_long["model"]["exact_match"],
    }


def head_record(
    params: dict[str, Any], head_path: Path, opts: dict[str, Any], best_epochs: int, *, start: str
) -> dict[str, Any]:
    """The ``head`` part of the metadata."""
    return {
        "type": "low-rank projection of [h, h*q] next to the token features -> linear -> GELU -> residual "
        "conv1d -> start/end logits over passage tokens; span score start + end + length bias",
        "file": HEAD_FILE,
        "bytes": head_path.stat().st_size,
        "parameters": sum(v.numel() for v in params.values()),
        "token_features": list(TOKEN_FEATURES),
        "rank": int(params["state.weight"].shape[0]),
        "hidden": int(params["proj.weight"].shape[0]),
        "kernel": int(params["conv.weight"].shape[-1]),
        "max_answer_tokens": MAX_ANSWER_TOKENS,
        **({"start": start} if start != "fresh" else {}),
        "optimizer": f"AdamW (lr {opts['lr']}, weight decay {opts['weight_decay']}, one-cycle schedule), "
        f"batch {opts['batch_size']} windows, dropout {opts['dropout']} "
        f"(state inputs {opts['state_dropout']})",
        "loss": "-log probability of the gold spans (or of no answer, in a window without one) under a "
        "softmax over the window's valid spans and the no-answer option",
        "epoch_selection": "best validation F1 (mean of paragraphs alone and in long passages, averaged with "
        "the neighbouring epochs) over 1..epochs, then refit on fit + validation windows",
        "epochs_searched": opts["epochs"],
        "epochs": best_epochs,
    }


def encoder_block() -> dict[str, Any]:
    return {
        **encoder_record(),
        "frozen": True,
        "max_length": DEFAULT_MAX_LENGTH,
        "stride": DEFAULT_STRIDE,
        "embedding_dim": EMBEDDING_DIM,
    }


def split_record(prepared: Prepared, hold_par: list[Paragraph]) -> dict[str, Any]:
    """Sizes of the fitting, validation and held-out parts, for the metadata."""
    long_hold = prepared.holdout_long
    long_chars = sum(len(p) for p in long_hold.passages) / max(1, len(long_hold.passages))
    n_hold = max(1, len(prepared.holdout.questions))
    return {
        "fit": {
            "questions": len(prepared.fit.questions),
            "windows": len(prepared.fit.enc.states),
            "negative_windows": len(prepared.fit_negatives.enc.states),
        },
        "validation": {
            "questions": len(prepared.validation.questions),
            "windows": len(prepared.validation.enc.states),
            "negative_windows": len(prepared.validation_negatives.enc.states),
        },
        "holdout": {
            "paragraphs": len(hold_par),
            "questions": len(prepared.holdout.questions),
            "windows_per_question": round(len(prepared.holdout.enc.states) / n_hold, 3),
            "long_passage_mean_chars": round(long_chars),
            "long_passage_windows_per_question": round(len(long_hold.enc.states) / max(1, len(long_hold.questions)), 3),
            "paragraph_keys": [p.key for p in hold_par],
        },
    }


def train(
    data_dir: Path,
    out_dir: Path,
    *,
    progress: bool = True,
    limit: int | None = None,
    seed: int = 0,
    **options: Any,
) -> dict[str, Any]:
    """Train the head, write ``head.safetensors`` + ``metadata.json``; return the held-out metrics."""
    import torch

    unknown = set(options) - set(DEFAULTS)
    if unknown:
        raise TypeError(f"unknown training options {sorted(unknown)}; known: {sorted(DEFAULTS)}")
    opts = {**DEFAULTS, **options}
    t0 = time.perf_counter()
    data_path = Path(data_dir) / DATA_FILE
    out_dir = Path(out_dir)
    paragraphs, skipped = read_squad(data_path)
    n_paragraphs_read = len(paragraphs)
    if limit is not None:
        if limit < 3:
            raise ValueError("limit must be at least 3 questions")
        paragraphs = limit_paragraphs(paragraphs, limit, seed)
    fit_par, val_par, hold_par = split_paragraphs(paragraphs, seed)

    torch.manual_seed(seed)
    t_enc = time.perf_counter()
    prepared = Prepared.from_parts(encode_all(plan_parts(fit_par, val_par, hold_par, seed), progress=progress))
    encode_seconds = time.perf_counter() - t_enc

    t_fit = time.perf_counter()
    params, history, best_epochs = choose_and_fit(prepared, opts=opts, seed=seed, progress=progress)
    fit_seconds = time.perf_counter() - t_fit

    held_out = score_part(params, prepared.holdout)
    held_out_long = score_part(params, prepared.holdout_long)

    head_path = save_head(out_dir, params, format="dynaforge-qa-head/1", file=HEAD_FILE)
    summary = holdout_metrics(held_out, held_out_long)
    metrics = {
        "holdout_questions": summary.pop("holdout_questions"),
        "holdout_paragraphs": len(hold_par),
        **summary,
        "epochs": best_epochs,
        "validation_f1_by_epoch": history,
    }
    split = split_record(prepared, hold_par)
    split["fit"] = {"paragraphs": len(fit_par), **split["fit"]}
    split["validation"] = {"paragraphs": len(val_par), **split["validation"]}
    metadata = {
        "format": "dynaforge-qa-head/1",
        "encoder": encoder_block(),
        "head": head_record(params, head_path, opts, best_epochs, start="fresh"),
        "data": {
            "file": file_info(data_path),
            "format": "SQuAD 2.0; answerable questions only",
            "paragraphs_read": n_paragraphs_read,
            "paragraphs_used": len(paragraphs),
            "limit": limit,
            "skipped": skipped,
            "split": "seeded shuffle of paragraphs: 20% held out, 15% of the rest validation, the rest fitting",
            "negatives": "each fit/validation question also paired with another paragraph of its part (same article "
            "when possible) and no answer",
            "long_passages": "each question's paragraph hidden at a seeded place among 3 other paragraphs of its part",
            **split,
        },
        "seed": seed,
        "metrics": {
            "scoring": "SQuAD F1 and exact match in percent, best over each question's gold answers",
            "holdout": held_out,
            "holdout_long_passages": held_out_long,
            "validation_f1_by_epoch": history,
        },
    }
    write_json_atomically(out_dir / METADATA_FILE, metadata)
    metrics["encode_seconds"] = round(encode_seconds, 1)
    metrics["fit_seconds"] = round(fit_seconds, 1)
    metrics["total_seconds"] = round(time.perf_counter() - t0, 1)
    return metrics


# --------------------------------------------------------------------------- the training recipe


def example_paragraphs(examples: Sequence[Mapping[str, Any]]) -> tuple[list[Paragraph], dict[str, int]]:
    """The platform's examples (``passage``, ``question``, ``answer``: a span ``{"text", "start"}`` or a list of
    them) as paragraphs, one per distinct passage in order of appearance, and counts of what was skipped: spans
    whose text does not sit at their offset of the passage, and examples left without a usable answer or without
    a passage or question."""
    by_passage: dict[str, Paragraph] = {}
    skipped: Counter[str] = Counter()
    for n, example in enumerate(examples):
        passage, question, answer = example.get("passage"), example.get("question"), example.get("answer")
        if not isinstance(passage, str) or not isinstance(question, str) or not passage.strip() or not question.strip():
            skipped["examples_without_passage_or_question"] += 1
            continue
        answers: list[tuple[str, int]] = []
        for span in answer if isinstance(answer, list) else [answer]:
            text = span.get("text") if isinstance(span, Mapping) else None
            start = span.get("start") if isinstance(span, Mapping) else None
            if (
                not isinstance(text, str)
                or not text.strip()
                or isinstance(start, bool)
                or not isinstance(start, int)
                or start < 0
                or passage[start : start + len(text)] != text
            ):
                skipped["answers_not_in_passage"] += 1
            elif (text, start) not in answers:
                answers.append((text, start))
        if not answers:
            skipped["examples_without_usable_answer"] += 1
            continue
        paragraph = by_passage.get(passage)
        if paragraph is None:
            key = f"{EXAMPLES_ARTICLE}/{len(by_passage)}"
            paragraph = by_passage[passage] = Paragraph(key=key, article=EXAMPLES_ARTICLE, context=passage)
        paragraph.questions.append(Question(f"example-{n}", question.strip(), answers))
    return list(by_passage.values()), dict(skipped)


def _questions(paragraphs: list[Paragraph]) -> int:
    return sum(len(p.questions) for p in paragraphs)


def _fit_score(params, parts: list[Part]) -> dict[str, Any]:
    """SQuAD F1 and exact match of the head on the questions of ``parts`` (the examples it was fitted on)."""
    scores = [score_answers(predict_encoded(params, p.enc, p.passages), p.questions) for p in parts if p.questions]
    n = sum(s["n"] for s in scores)
    if not n:
        return {"n": 0, "f1": None, "exact_match": None}
    return {
        "n": n,
        "f1": round(sum(s["f1"] * s["n"] for s in scores) / n, 2),
        "exact_match": round(sum(s["exact_match"] * s["n"] for s in scores) / n, 2),
    }


def train_recipe(
    data: TrainingData,
    out_dir: Path,
    *,
    seed: int = 0,
    report: Callable[[float, str], None] | None = None,
    progress: bool = False,
    example_weight: float = DEFAULT_EXAMPLE_WEIGHT,
    epochs: int = DEFAULTS["epochs"],
) -> dict[str, Any]:
    """The ``default`` training recipe: the span head trained on the base data (when ``data.base_dir`` is given)
    and the platform's examples; writes ``head.safetensors`` + ``metadata.json`` to ``out_dir`` and returns
    held-out metrics.

    The examples' answers must sit in their passage (a span ``{"text", "start"}``, or a list of them); the others
    are skipped and counted. Examples are grouped by passage, which is the unit every split keeps whole.

    With base data, its paragraphs are split as :func:`train` splits them (fit, validation, held out), a fresh
    head is trained as there, and the examples' windows (each question with its passage, and again with another
    passage and no answer) join the fitting windows, their loss weighted ``example_weight`` against a base
    window's 1. Examples about a validation paragraph join the final fit only, examples about a held-out
    paragraph are dropped (``examples_dropped``): the held-out figures are those of the same base paragraphs.

    Without base data, the examples' passages are split alone (20% held out, 15% of the rest validation; at least
    :data:`MIN_EXAMPLES` usable examples about :data:`MIN_EXAMPLE_PASSAGES` passages), and training starts from the
    shipped head rather than a fresh one: a few dozen questions cannot teach a head from scratch, but they can
    move a trained one toward them. ``example_weight`` has no effect then.

    ``epochs`` is the most epochs the validation part chooses from (it keeps the fewest among equals). ``report``
    is called after each encoded set and each epoch. Deterministic for a seed; no example text is written.
    """
    import torch

    report = report or no_report
    if example_weight <= 0:
        raise ValueError(f"example_weight must be positive, got {example_weight}")
    if epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    opts = {**DEFAULTS, "epochs": epochs}
    report(0.02, "reading data")
    examples, skipped = example_paragraphs(data.examples)
    usable = _questions(examples)
    base_record: dict[str, Any] | None = None
    extra_fit: list[Paragraph] = []
    extra_final: list[Paragraph] = []
    dropped: list[Paragraph] = []
    initial: dict[str, Any] | None = None
    if data.base_dir is not None:
        data_path = Path(data.base_dir) / DATA_FILE
        paragraphs, base_skipped = read_squad(data_path)
        fit_par, val_par, hold_par = split_paragraphs(paragraphs, seed)
        held = {p.context for p in hold_par}
        validation = {p.context for p in val_par}
        dropped = [p for p in examples if p.context in held]
        extra_final = [p for p in examples if p.context in validation and p.context not in held]
        extra_fit = [p for p in examples if p.context not in held and p.context not in validation]
        plan = plan_parts(fit_par, val_par, hold_par, seed)
        for part, among, what in (
            (extra_fit, fit_par + extra_fit, "examples"),
            (extra_final, fit_par + val_par + extra_fit + extra_final, "examples on validation passages"),
        ):
            if part:
                plan.append(ToEncode(*_flatten(part), f"encode {what}", example_weight))
                plan.append(
                    ToEncode(*negative_pairs(part, seed, among=among), f"encode {what}, negatives", example_weight)
                )
        base_record = {
            "file": file_info(data_path),
            "format": "SQuAD 2.0; answerable questions only",
            "paragraphs": len(paragraphs),
            "skipped": base_skipped,
        }
        split_rule = (
            "seeded shuffle of the base paragraphs: 20% held out, 15% of the rest validation, the rest fitting; "
            "platform examples in the fitting windows (those about a validation paragraph in the final fit only, "
            "those about a held-out paragraph dropped)"
        )
    else:
        if usable < MIN_EXAMPLES or len(examples) < MIN_EXAMPLE_PASSAGES:
            raise ValueError(
                f"without base data the recipe needs at least {MIN_EXAMPLES} usable examples about at least "
                f"{MIN_EXAMPLE_PASSAGES} different passages, to hold some out; got {usable} examples about "
                f"{len(examples)} passage(s)"
                + (f" (skipped: {', '.join(f'{k} {v}' for k, v in sorted(skipped.items()))})" if skipped else "")
            )
        fit_par, val_par, hold_par = split_paragraphs(examples, seed)
        plan = plan_parts(fit_par, val_par, hold_par, seed)
        split_rule = (
            "seeded shuffle of the examples' passages: 20% held out, 15% of the rest validation, the rest fitting"
        )
    start = "fresh"
    if data.base_dir is None:
        from .model import WEIGHTS_DIR, load_head

        initial, _ = load_head(WEIGHTS_DIR)
        start = f"the shipped head (sha256 {file_info(WEIGHTS_DIR / HEAD_FILE)['sha256']})"

    torch.manual_seed(seed)
    report(0.05, "encoding")
    parts = encode_all(
        plan,
        progress=progress,
        on_step=lambda done, total: report(0.05 + 0.25 * done / total, f"encoding ({done}/{total})"),
    )
    prepared = Prepared.from_parts(parts[:7])
    extra = parts[7:]
    prepared.extra_fit = extra[: 2 if extra_fit else 0]
    prepared.extra_final = extra[2 if extra_fit else 0 :]

    def on_epoch(stage: str, done: int, total: int) -> None:
        lo, hi = (0.3, 0.6) if stage == "choose epochs" else (0.6, 0.9)
        report(lo + (hi - lo) * done / total, f"{stage}: epoch {done}/{total}")

    params, history, best_epochs = choose_and_fit(
        prepared, opts=opts, seed=seed, progress=progress, initial=initial, on_epoch=on_epoch
    )
    report(0.92, "evaluating")
    held_out = score_part(params, prepared.holdout)
    held_out_long = score_part(params, prepared.holdout_long)
    if data.base_dir is not None:
        fitted = [prepared.extra_fit[0]] if extra_fit else []
        fitted += [prepared.extra_final[0]] if extra_final else []
    else:
        fitted = [prepared.fit, prepared.validation]
    examples_fit = _fit_score(params, fitted)

    report(0.96, "writing the head")
    out_dir = Path(out_dir)
    head_path = save_head(out_dir, params, format="dynaforge-qa-head/1", file=HEAD_FILE)
    counts = {
        "examples": len(data.examples),
        "examples_usable": usable,
        "examples_fit": _questions(extra_fit) + _questions(extra_final)
        if base_record
        else _questions(fit_par) + _questions(val_par),
        "examples_holdout": 0 if base_record else _questions(hold_par),
        "examples_dropped": _questions(dropped),
        "examples_skipped": skipped,
    }
    weighting = (
        f"base windows 1, platform example windows (and their negatives) {example_weight}"
        if base_record and (extra_fit or extra_final)
        else "all windows 1"
    )
    metadata = {
        "format": "dynaforge-qa-head/1",
        "encoder": encoder_block(),
        "head": head_record(params, head_path, opts, best_epochs, start=start),
        "data": {
            "base": base_record,
            "examples": {
                "given": len(data.examples),
                "sha256": data.digest(),
                "sources": [dict(source) for source in data.sources],
                "usable": usable,
                "passages": len(examples),
                "skipped": skipped,
                "fit": counts["examples_fit"],
                "holdout": counts["examples_holdout"],
                "dropped_passage_held_out": counts["examples_dropped"],
            },
            "holdout_source": "base" if base_record else "examples",
            "split": split_rule,
            "negatives": "each fitting question also paired with another passage (same article when possible) and "
            "no answer",
            "long_passages": "each validation and held-out question's paragraph hidden at a seeded place among 3 "
            "other paragraphs of its part",
            "loss_weights": weighting,
            **split_record(prepared, hold_par),
        },
        "recipe": {
            "trainer": "dynaforge_qa.train:train_recipe",
            "hyperparameters": {"example_weight": example_weight, "epochs": epochs},
        },
        "seed": seed,
        "metrics": {
            "scoring": "SQuAD F1 and exact match in percent, best over each question's gold answers",
            "holdout": held_out,
            "holdout_long_passages": held_out_long,
            "validation_f1_by_epoch": history,
            "examples_fit": examples_fit,
        },
    }
    write_json_atomically(out_dir / METADATA_FILE, metadata)
    return {
        "holdout_source": "base" if base_record else "examples",
        **holdout_metrics(held_out, held_out_long),
        "holdout_paragraphs": len(hold_par),
        "epochs": best_epochs,
        "validation_f1_by_epoch": history,
        **{k: v for k, v in counts.items() if k != "examples_skipped"},
        "examples_skipped": sum(
            skipped.get(k, 0) for k in ("examples_without_passage_or_question", "examples_without_usable_answer")
        ),
        "examples_fit_f1": examples_fit["f1"],
        "examples_fit_exact_match": examples_fit["exact_match"],
    }


def main(argv: list[str] | None = None) -> int:
    return training_main(
        train,
        task="qa",
        model=MODEL_NAME,
        description="Train the qa span head on frozen MiniLM token states of SQuAD 2.0 paragraphs.",
        data_help=f"folder holding {DATA_FILE}",
        limit_help="use whole paragraphs holding about N questions",
        options=DEFAULTS,
        argv=argv,
    )


if __name__ == "__main__":
    raise SystemExit(main())
