"""Train the sentiment model on SST-2: a LoRA adapter on the shared MiniLM encoder and a binary head.

Usage (either; without ``--out`` the model becomes a new version in the model store, which the model's loader
then prefers to the weights shipped in the package)::

    dynaforge train sentiment --data ../shared/data/sentiment [--out DIR] [--limit N] [--set encoder=frozen]
    python -m dynaforge_sentiment.train --data ../shared/data/sentiment [--out DIR] [--limit N] [--seed 0]

Steps (all seeded, no dates written):

1. read ``sst2_train.tsv`` and ``sst2_dev.tsv`` (tab separated, header
   ``sentence<TAB>label``, label 0 = negative, 1 = positive);
2. hold out 10% of the training rows (seeded shuffle; held-out rows whose
   exact sentence also occurs in the fitting part are dropped, to avoid
   leakage);
3. embed everything with the frozen encoder (mean pooling + L2 norm,
   ``max_length`` 64, length-sorted batches; :func:`dynaforge.tasks.training.embed_texts`);
4. fit an L2-regularised binary logistic regression (full-batch L-BFGS on
   standardised features; the standardisation is folded into the stored
   weight and bias) for each weight-decay value of a small grid and keep the
   one with the lowest held-out log-loss
   (:func:`dynaforge.tasks.training.choose_weight_decay`);
5. with ``encoder="lora"`` (the default): fine-tune a LoRA adapter on the
   encoder (rank 8 on the attention's query and value matrices) together
   with the head, starting from the head of step 4, for ``lora_epochs`` over
   the fitting part (:func:`dynaforge.tasks.training.fine_tune`; stopped
   after ``lora_time_limit_s``), then embed the held-out and dev rows again
   with the adapter merged in (what the served model computes). With
   ``encoder="frozen"`` the head of step 4 is the model;
6. neutral band: the narrowest half-width ``b`` around p = 0.5 such that
   10% of the held-out phrases satisfy ``|p - 0.5| < b``;
7. evaluate on ``sst2_dev.tsv`` and write ``adapter.safetensors`` (with
   LoRA), ``head.safetensors`` and ``metadata.json`` to the output folder.

The data files are only read; no sentence from them is written anywhere.

The ``default`` training recipe (:func:`train_recipe`, declared on the task) runs the same pipeline on the
platform's accepted examples: with the base data (a folder holding the two files above) the examples join the
fitting part only, weighted by ``example_weight``, and the held-out part and the dev file are exactly those of a
plain ``train`` with the same seed, so their figures compare with its figures (the shipped model's at seed 0);
without base data the examples are split themselves (seeded, stratified, 20% held out). Neutral examples cannot
train a positive vs negative head: they are not fitted, only counted and scored (do they fall inside the neutral
band?).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynaforge.tasks.training import (
    ADAPTER_FILE,
    EmbeddingProgress,
    FineTuned,
    FineTuneSettings,
    LoraSettings,
    TrainingData,
    Tuned,
    check_encoder_options,
    choose_weight_decay,
    embed_texts,
    encoder_record,
    example_weights,
    file_info,
    fine_tune,
    log_loss,
    no_report,
    save_adapter,
    save_head,
    seeded_sample,
    training_main,
    write_json_atomically,
)

from .model import DEFAULT_MAX_LENGTH, EMBEDDING_DIM, HEAD_FILE, LABELS, METADATA_FILE, MODEL_NAME, label_for

if TYPE_CHECKING:
    from torch import Tensor

TRAIN_FILE = "sst2_train.tsv"
DEV_FILE = "sst2_dev.tsv"
HEADER = ("sentence", "label")
HOLDOUT_FRACTION = 0.10
NEUTRAL_TARGET_SHARE = 0.10
WEIGHT_DECAYS = (1e-5, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
LBFGS_MAX_ITER = 500

# The training recipe.
DEFAULT_EXAMPLE_WEIGHT = 2.0  # a platform example counts as two base rows (see the README)
RECIPE_HOLDOUT_FRACTION = 0.20  # held out of the examples when there is no base data
MIN_RECIPE_EXAMPLES = 20  # positive and negative examples needed without base data
MIN_RECIPE_EXAMPLES_PER_LABEL = 4  # of each of positive and negative, so that both parts have both
BINARY = {"negative": 0, "positive": 1}

# Fine-tuning the encoder (the recipe's ``encoder``, ``lora_epochs`` and ``lora_time_limit_s``; see the README for
# the figures these settings give).
DEFAULT_ENCODER = "lora"
DEFAULT_LORA_EPOCHS = 1  # one pass over SST-2's 54,000 fitting phrases: about ten minutes on two CPU cores
DEFAULT_LORA_TIME_LIMIT_S = 3600.0  # a slower machine still ends with a model, its metadata saying it was cut
LORA = FineTuneSettings(
    epochs=DEFAULT_LORA_EPOCHS,
    batch_size=32,
    learning_rate=1e-3,
    head_learning_rate=1e-3,
    weight_decay=0.01,
    warmup=0.06,
    max_length=DEFAULT_MAX_LENGTH,
    time_limit_s=DEFAULT_LORA_TIME_LIMIT_S,
    lora=LoraSettings(rank=8, alpha=16, dropout=0.1, target_modules=("query", "value")),
)

#: ``report(fraction, stage)``, a recipe's progress.
Reporter = Callable[[float, str], None]


def read_tsv(path: Path) -> tuple[list[str], list[int]]:
    """Read a ``sentence<TAB>label`` file; checks the header and every label."""
    with open(path, encoding="utf-8", newline="") as fh:
        lines = fh.read().split("\n")
    header = tuple(lines[0].lstrip("\ufeff").rstrip("\r").split("\t")) if lines else ()
    if header != HEADER:
        raise ValueError(f"{path}: expected header {HEADER!r}, got {header!r}")
    texts: list[str] = []
    labels: list[int] = []
    for lineno, line in enumerate(lines[1:], start=2):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        parts = line.rsplit("\t", 1)
        if len(parts) != 2 or parts[1].strip() not in ("0", "1"):
            raise ValueError(f"{path}:{lineno}: expected 'sentence<TAB>0|1'")
        texts.append(parts[0].strip())
        labels.append(int(parts[1].strip()))
    if not texts:
        raise ValueError(f"{path}: no rows")
    return texts, labels


def choose_band(p_holdout, share: float = NEUTRAL_TARGET_SHARE) -> float:
    """Narrowest half-width b with ``share`` of the phrases inside ``|p - 0.5| < b``."""
    d = sorted(abs(float(v) - 0.5) for v in p_holdout)
    if not d:
        raise ValueError(
            "no held-out rows to choose the neutral band from: every held-out sentence also occurs in the fitting "
            "part; give more distinct sentences (or a larger --limit)"
        )
    k = max(1, math.ceil(share * len(d)))
    if k >= len(d):
        return min(0.4999, d[-1] + 1e-6)
    # strict inequality: put the boundary half-way between the k-th and (k+1)-th distance
    return min(0.4999, 0.5 * (d[k - 1] + d[k]))


def evaluate(z, y, band: float, majority_label: int) -> dict[str, Any]:
    import torch

    p = torch.sigmoid(z)
    pred = (p >= 0.5).to(torch.int64)
    yi = y.to(torch.int64)
    neutral = (p - 0.5).abs() < band
    decided = ~neutral
    n = len(yi)
    correct = pred == yi
    n_decided = int(decided.sum())
    return {
        "n": n,
        "binary_accuracy": float(correct.double().mean()),
        "three_way_accuracy": float((correct & decided).double().sum() / n),
        "neutral_share": float(neutral.double().mean()),
        "non_neutral_accuracy": (float((correct & decided).double().sum() / n_decided) if n_decided else None),
        "majority_baseline_accuracy": float((yi == majority_label).double().mean()),
        "log_loss": log_loss(z, y),
    }


# --------------------------------------------------------------------------- the pipeline both trainers share


@dataclass(frozen=True)
class BaseData:
    """The base data: SST-2's training and dev rows (label 1 = positive), as read (and subsampled)."""

    train_path: Path
    dev_path: Path
    train_texts: list[str]
    train_labels: list[int]
    dev_texts: list[str]
    dev_labels: list[int]


def read_base(data_dir: Path, *, limit: int | None, rng: random.Random) -> BaseData:
    """Read ``sst2_train.tsv`` and ``sst2_dev.tsv``; with ``limit``, a seeded subsample of at most that many rows
    of each (drawn from ``rng``)."""
    train_path, dev_path = Path(data_dir) / TRAIN_FILE, Path(data_dir) / DEV_FILE
    train_texts, train_labels = read_tsv(train_path)
    dev_texts, dev_labels = read_tsv(dev_path)
    if limit is not None:
        if limit < 20:
            raise ValueError("limit must be at least 20")
        keep = seeded_sample(len(train_texts), limit, rng)
        train_texts, train_labels = [train_texts[i] for i in keep], [train_labels[i] for i in keep]
        keep = seeded_sample(len(dev_texts), limit, rng)
        dev_texts, dev_labels = [dev_texts[i] for i in keep], [dev_labels[i] for i in keep]
    return BaseData(train_path, dev_path, train_texts, train_labels, dev_texts, dev_labels)


def holdout_split(texts: Sequence[str], rng: random.Random) -> tuple[list[int], list[int], int]:
    """Seeded hold-out split of the training rows: ``(fit, held out, dropped)`` indices and count.

    ``HOLDOUT_FRACTION`` of the rows (at least 10) are held out; held-out rows whose exact sentence also occurs in
    the fitting part are dropped, to avoid leakage.
    """
    order = list(range(len(texts)))
    rng.shuffle(order)
    n_hold = max(10, int(round(HOLDOUT_FRACTION * len(order))))
    fit_idx = sorted(order[n_hold:])
    fit_set = {texts[i] for i in fit_idx}
    hold_idx = sorted(i for i in order[:n_hold] if texts[i] not in fit_set)
    return fit_idx, hold_idx, n_hold - len(hold_idx)


def embed(
    texts: Sequence[str], *, progress: bool, desc: str, on_batch: Callable[[int, int], None] | None = None
) -> Tensor:
    """The frozen encoder's vectors of ``texts`` at this model's ``max_length`` (float32 ``[n, 384]``)."""
    import torch

    if not texts:
        return torch.zeros((0, EMBEDDING_DIM), dtype=torch.float32)
    return embed_texts(texts, max_length=DEFAULT_MAX_LENGTH, progress=progress, desc=desc, on_batch=on_batch)


@dataclass(frozen=True)
class FittedHead:
    """The chosen binary head (float64, on raw embeddings), its weight decay and search, and the neutral band;
    ``tuned``: the LoRA run that fine-tuned the encoder and this head from the logistic regression (None: the
    encoder is frozen and the head is the logistic regression)."""

    weight: Tensor
    bias: Tensor
    weight_decay: float
    search: list[dict[str, float]]
    band: float
    tuned: FineTuned | None = None

    def logits(self, x: Tensor) -> Tensor:
        return x @ self.weight + self.bias


def fit_head(
    x_fit: Tensor, y_fit: Tensor, x_hold: Tensor, y_hold: Tensor, *, row_weights: Tensor | None = None
) -> FittedHead:
    """Steps 4 and 5: the logistic head with the weight decay of lowest held-out log-loss (fitted with
    ``row_weights`` when given), and the neutral band chosen on the held-out rows."""
    import torch

    chosen = choose_weight_decay(
        x_fit,
        y_fit,
        x_hold,
        y_hold,
        WEIGHT_DECAYS,
        max_iter=LBFGS_MAX_ITER,
        tolerance_grad=1e-9,
        tolerance_change=1e-12,
        row_weights=row_weights,
    )
    w, b = chosen.head.weight, chosen.head.bias
    band = choose_band(torch.sigmoid(x_hold @ w + b).tolist())
    return FittedHead(w, b, chosen.weight_decay, chosen.search, band)


def tune_encoder(
    head: FittedHead,
    texts: Sequence[str],
    y_fit: Tensor,
    hold_texts: Sequence[str],
    x_hold_frozen: Tensor,
    *,
    encoder: str,
    row_weights: Tensor | None,
    epochs: int,
    time_limit_s: float,
    seed: int,
    report: Reporter,
    progress: bool,
) -> Tuned[FittedHead]:
    """Step 5: with ``encoder="lora"`` fine-tune an adapter and the head together on the fitting rows (``texts``,
    weighted like the logistic regression), starting from ``head``, and choose the neutral band again on the
    held-out rows as the merged encoder sees them; with ``"frozen"`` keep ``head``."""
    import torch

    if encoder == "frozen":
        return Tuned(head, max_length=DEFAULT_MAX_LENGTH)
    tuned = fine_tune(
        list(texts),
        y_fit.tolist(),
        row_weights=row_weights.tolist() if row_weights is not None else None,
        head=(head.weight, head.bias),
        settings=replace(LORA, epochs=epochs, time_limit_s=time_limit_s),
        seed=seed,
        report=lambda fraction, stage: report(0.35 + 0.5 * fraction, stage),
        progress=progress,
    )
    merged = tuned.encoder()
    weight, bias = tuned.head_weight.double().reshape(-1), tuned.head_bias.double().reshape(())
    result = Tuned(replace(head, weight=weight, bias=bias, tuned=tuned), merged, DEFAULT_MAX_LENGTH)
    x_hold = result.vectors(hold_texts, x_hold_frozen)
    band = choose_band(torch.sigmoid(x_hold @ weight + bias).tolist())
    return Tuned(replace(result.head, band=band), merged, DEFAULT_MAX_LENGTH)


def head_metadata(
    head: FittedHead,
    *,
    data: dict[str, Any],
    seed: int,
    metrics: dict[str, Any],
    training: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``metadata.json``: the encoder (and its adapter), the head and how it was chosen, the neutral band, ``data``
    (what it was trained on: counts and hashes, no text), ``training`` (a recipe's settings), seed and metrics."""
    encoder = {
        **encoder_record(),
        "pooling": "mean (attention-mask weighted)",
        "normalize": "l2",
        "max_length": DEFAULT_MAX_LENGTH,
        "embedding_dim": EMBEDDING_DIM,
        "fine_tuned": head.tuned is not None,
    }
    if head.tuned is not None:
        encoder["adapter"] = {"file": ADAPTER_FILE, **head.tuned.record()}
    return {
        "format": "dynaforge-sentiment-head/1",
        "encoder": encoder,
        "head": {
            "type": "binary logistic regression, p(positive) = sigmoid(weight . e + bias)",
            "file": HEAD_FILE,
            "optimizer": f"full-batch L-BFGS (strong Wolfe, max_iter {LBFGS_MAX_ITER}) "
            "on standardised features, folded into weight/bias"
            + ("; then trained with the encoder's adapter (AdamW), starting there" if head.tuned else ""),
            "weight_decay": head.weight_decay,
            "weight_decay_search": head.search,
            "selection": "lowest held-out log-loss",
        },
        "labels": ["positive", "negative", "neutral"],
        "neutral_band": head.band,
        "neutral_band_rule": (
            f"narrowest half-width b such that {NEUTRAL_TARGET_SHARE:.0%} of the held-out "
            "training phrases have |p - 0.5| < b; label neutral iff |p - 0.5| < b"
        ),
        "probability_formula": (
            "softmax over logits (z/2, -z/2, t) for (positive, negative, neutral), "
            "z = head logit, t = logit(0.5 + b) / 2; neutral is the arg-max iff |p - 0.5| < b"
        ),
        "data": data,
        **({"training": training} if training is not None else {}),
        "seed": seed,
        "metrics": metrics,
    }


def write_head(out_dir: Path, head: FittedHead, metadata: dict[str, Any]) -> None:
    """Write ``adapter.safetensors`` (when the encoder was fine-tuned), ``head.safetensors`` (float32 weight
    ``[1, 384]`` and bias ``[1]``) and ``metadata.json``."""
    import torch

    if head.tuned is not None:
        save_adapter(out_dir, head.tuned.adapter)
    tensors = {
        "weight": head.weight.to(torch.float32).reshape(1, EMBEDDING_DIM).contiguous(),
        "bias": head.bias.to(torch.float32).reshape(1).contiguous(),
    }
    save_head(out_dir, tensors, format=metadata["format"], file=HEAD_FILE)
    write_json_atomically(Path(out_dir) / METADATA_FILE, metadata)


def _encoder_summary(encoder: str, head: FittedHead) -> dict[str, Any]:
    """How the encoder was trained, for the returned metrics (deterministic: no times)."""
    if head.tuned is None:
        return {"encoder": encoder}
    return {
        "encoder": encoder,
        "lora_steps": head.tuned.steps,
        "lora_stopped_by_time_limit": head.tuned.stopped_early,
    }


def _summary(prefix: str, figures: dict[str, Any]) -> dict[str, Any]:
    """The headline figures of :func:`evaluate` under ``prefix``."""
    keys = ("binary_accuracy", "three_way_accuracy", "neutral_share", "non_neutral_accuracy")
    return {f"{prefix}_{key}": figures[key] for key in keys}


# --------------------------------------------------------------------------- dynaforge train sentiment


def train(
    data_dir: Path,
    out_dir: Path,
    *,
    progress: bool = True,
    limit: int | None = None,
    seed: int = 0,
    encoder: str = DEFAULT_ENCODER,
    lora_epochs: int = DEFAULT_LORA_EPOCHS,
    lora_time_limit_s: float = DEFAULT_LORA_TIME_LIMIT_S,
) -> dict:
    """Train the model (the adapter with ``encoder="lora"``, and the head), write ``adapter.safetensors``,
    ``head.safetensors`` and ``metadata.json``; return dev and held-out metrics with the time each step took."""
    import torch

    check_encoder_options(encoder, lora_epochs, lora_time_limit_s)
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    rng = random.Random(seed)
    torch.manual_seed(seed)
    base = read_base(Path(data_dir), limit=limit, rng=rng)
    fit_idx, hold_idx, n_hold_dropped = holdout_split(base.train_texts, rng)

    t_embed = time.perf_counter()
    emb_train = embed(base.train_texts, progress=progress, desc="embed train")
    emb_dev = embed(base.dev_texts, progress=progress, desc="embed dev")
    embed_seconds = time.perf_counter() - t_embed

    y_all = torch.tensor(base.train_labels, dtype=torch.float64)
    x_hold, y_hold = emb_train[hold_idx].double(), y_all[hold_idx]
    t_fit = time.perf_counter()
    head = fit_head(emb_train[fit_idx].double(), y_all[fit_idx], x_hold, y_hold)
    fit_seconds = time.perf_counter() - t_fit

    t_tune = time.perf_counter()
    hold_texts = [base.train_texts[i] for i in hold_idx]
    model = tune_encoder(
        head,
        [base.train_texts[i] for i in fit_idx],
        y_all[fit_idx],
        hold_texts,
        x_hold,
        encoder=encoder,
        row_weights=None,
        epochs=lora_epochs,
        time_limit_s=lora_time_limit_s,
        seed=seed,
        report=no_report,
        progress=progress,
    )
    head = model.head
    x_hold = model.vectors(hold_texts, x_hold)
    x_dev = model.vectors(base.dev_texts, emb_dev)
    tune_seconds = time.perf_counter() - t_tune

    majority_label = int(sum(base.train_labels) * 2 >= len(base.train_labels))
    holdout_metrics = evaluate(head.logits(x_hold), y_hold, head.band, majority_label)
    y_dev = torch.tensor(base.dev_labels, dtype=torch.float64)
    dev_metrics = evaluate(head.logits(x_dev), y_dev, head.band, majority_label)
    train_set = set(base.train_texts)
    dev_overlap = sum(1 for t in base.dev_texts if t in train_set)

    metrics = {
        "dev_binary_accuracy": dev_metrics["binary_accuracy"],
        "dev_three_way_accuracy": dev_metrics["three_way_accuracy"],
        "dev_neutral_share": dev_metrics["neutral_share"],
        "dev_non_neutral_accuracy": dev_metrics["non_neutral_accuracy"],
        "dev_majority_baseline_accuracy": dev_metrics["majority_baseline_accuracy"],
        "dev_log_loss": dev_metrics["log_loss"],
        "dev_size": dev_metrics["n"],
        "neutral_band": head.band,
        "holdout_binary_accuracy": holdout_metrics["binary_accuracy"],
        "holdout_three_way_accuracy": holdout_metrics["three_way_accuracy"],
        "holdout_neutral_share": holdout_metrics["neutral_share"],
        "weight_decay": head.weight_decay,
        **_encoder_summary(encoder, head),
    }
    data = {
        "train": file_info(base.train_path),
        "dev": file_info(base.dev_path),
        "train_rows_used": len(base.train_texts),
        "dev_rows_used": len(base.dev_texts),
        "limit": limit,
        "subsampled": limit is not None,
        "holdout_fraction": HOLDOUT_FRACTION,
        "fit_rows": len(fit_idx),
        "holdout_rows": len(hold_idx),
        "holdout_rows_dropped_as_duplicates_of_fit": n_hold_dropped,
        "dev_rows_exactly_in_train": dev_overlap,
        "majority_label_in_train": "positive" if majority_label == 1 else "negative",
    }
    metadata = head_metadata(head, data=data, seed=seed, metrics={"dev": dev_metrics, "holdout": holdout_metrics})
    write_head(out_dir, head, metadata)

    metrics["embed_seconds"] = round(embed_seconds, 1)
    metrics["fit_seconds"] = round(fit_seconds, 1)
    metrics["fine_tune_seconds"] = round(tune_seconds, 1)
    metrics["total_seconds"] = round(time.perf_counter() - t0, 1)
    return metrics


# --------------------------------------------------------------------------- the training recipe


def example_rows(examples: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """The statements and gold labels of the platform's examples (the task's field values), in order."""
    texts: list[str] = []
    labels: list[str] = []
    for i, example in enumerate(examples):
        statement, label = example.get("statement"), example.get("label")
        if not isinstance(statement, str) or not statement.strip():
            raise ValueError(f"example {i} has no statement")
        if label not in LABELS:
            raise ValueError(f"example {i}: the label must be one of {', '.join(LABELS)}, not {label!r}")
        texts.append(statement.strip())
        labels.append(label)
    return texts, labels


def stratified_split(
    indices: Sequence[int], labels: Sequence[int], fraction: float, rng: random.Random
) -> tuple[list[int], list[int]]:
    """``(fit, held out)`` of ``indices``: ``fraction`` of each label's rows (at least one) held out, seeded."""
    fit: list[int] = []
    hold: list[int] = []
    for value in (0, 1):
        rows = [i for i, y in zip(indices, labels, strict=True) if y == value]
        rng.shuffle(rows)
        k = max(1, round(fraction * len(rows)))
        hold += rows[:k]
        fit += rows[k:]
    return sorted(fit), sorted(hold)


def train_recipe(
    data: TrainingData,
    out_dir: Path,
    *,
    seed: int = 0,
    report: Reporter | None = None,
    progress: bool = False,
    example_weight: float = DEFAULT_EXAMPLE_WEIGHT,
    encoder: str = DEFAULT_ENCODER,
    lora_epochs: int = DEFAULT_LORA_EPOCHS,
    lora_time_limit_s: float = DEFAULT_LORA_TIME_LIMIT_S,
) -> dict[str, Any]:
    """The task's ``default`` training recipe: the model from the platform's examples, with the SST-2 base data
    when ``data.base_dir`` is given. Writes ``adapter.safetensors`` (``encoder="lora"``), ``head.safetensors`` and
    ``metadata.json`` to ``out_dir``; returns held-out figures and the new model's figures on the examples.

    ``encoder="lora"`` fine-tunes a LoRA adapter on the encoder with the head (step 5 of the module docstring),
    ``lora_epochs`` passes over the fitting rows, stopped after ``lora_time_limit_s`` seconds (the metrics say
    whether it was); ``"frozen"`` fits the head alone, in seconds.

    With base data: the base rows are read, split (held-out part) and fitted exactly as by :func:`train` with the
    same seed; the positive and negative examples join the fitting part only, each weighing ``example_weight``
    base rows in the log-loss (an example whose statement is a held-out or dev sentence is left out: it would be
    trained on and scored at once). The held-out and dev figures then compare with the shipped model's.

    Without: the positive and negative examples (at least ``MIN_RECIPE_EXAMPLES``, ``MIN_RECIPE_EXAMPLES_PER_LABEL``
    of each) are split, seeded and stratified, ``RECIPE_HOLDOUT_FRACTION`` held out; ``example_weight`` changes
    nothing then (every row weighs the same).

    Neutral examples are never fitted (the head is positive vs negative; neutral is the band around p = 0.5); they
    are counted and scored. Deterministic for a seed: the same data gives the same files.
    """
    import torch

    report = report or no_report
    if not example_weight > 0:
        raise ValueError(f"example_weight must be positive, got {example_weight!r}")
    check_encoder_options(encoder, lora_epochs, lora_time_limit_s)
    out_dir = Path(out_dir)
    report(0.02, "reading")
    texts, labels = example_rows(data.examples)
    binary = [i for i, label in enumerate(labels) if label in BINARY]
    counts = {label: labels.count(label) for label in LABELS}
    rng = random.Random(seed)
    torch.manual_seed(seed)

    base: BaseData | None = None
    if data.base_dir is not None:
        base = read_base(Path(data.base_dir), limit=None, rng=rng)
        fit_idx, hold_idx, n_hold_dropped = holdout_split(base.train_texts, rng)
        evaluated = {base.train_texts[i] for i in hold_idx} | set(base.dev_texts)
        fitted = [i for i in binary if texts[i] not in evaluated]
        held_out: list[int] = []
        n_dropped = len(binary) - len(fitted)
    else:
        pos, neg = counts["positive"], counts["negative"]
        if len(binary) < MIN_RECIPE_EXAMPLES or min(pos, neg) < MIN_RECIPE_EXAMPLES_PER_LABEL:
            raise ValueError(
                f"training without the base data needs at least {MIN_RECIPE_EXAMPLES} positive or negative "
                f"examples, at least {MIN_RECIPE_EXAMPLES_PER_LABEL} of each; got {pos} positive and {neg} negative "
                f"({counts['neutral']} neutral examples cannot train the head). Add examples, or train with the "
                "base data"
            )
        fitted, drawn = stratified_split(binary, [BINARY[labels[i]] for i in binary], RECIPE_HOLDOUT_FRACTION, rng)
        fitted_texts = {texts[i] for i in fitted}
        held_out = [i for i in drawn if texts[i] not in fitted_texts]
        n_dropped = len(drawn) - len(held_out)
        if not held_out:
            raise ValueError(
                "every held-out example's statement also occurs among the fitted ones; give more distinct examples"
            )

    report(0.05, "embedding")
    embedding = EmbeddingProgress(
        report,
        len(texts) + (len(base.train_texts) + len(base.dev_texts) if base is not None else 0),
        start=0.05,
        end=0.3,
    )
    emb_examples = embed(texts, progress=progress, desc="embed examples", on_batch=embedding.part()).double()
    y_examples = torch.tensor([float(BINARY.get(label, 0)) for label in labels], dtype=torch.float64)
    if base is not None:
        emb_train = embed(base.train_texts, progress=progress, desc="embed train", on_batch=embedding.part())
        emb_dev = embed(base.dev_texts, progress=progress, desc="embed dev", on_batch=embedding.part())
        y_all = torch.tensor(base.train_labels, dtype=torch.float64)
        x_fit = torch.cat([emb_train[fit_idx].double(), emb_examples[fitted]])
        y_fit = torch.cat([y_all[fit_idx], y_examples[fitted]])
        fit_texts = [base.train_texts[i] for i in fit_idx] + [texts[i] for i in fitted]
        weights = example_weights(len(fit_idx), len(fitted), example_weight=example_weight) if fitted else None
        x_hold, y_hold = emb_train[hold_idx].double(), y_all[hold_idx]
        hold_texts = [base.train_texts[i] for i in hold_idx]
        majority_label = int(sum(base.train_labels) * 2 >= len(base.train_labels))
    else:
        x_fit, y_fit = emb_examples[fitted], y_examples[fitted]
        fit_texts = [texts[i] for i in fitted]
        weights = None
        x_hold, y_hold = emb_examples[held_out], y_examples[held_out]
        hold_texts = [texts[i] for i in held_out]
        majority_label = int(counts["positive"] >= counts["negative"])

    report(0.3, "fitting")
    row_weights = torch.tensor(weights, dtype=torch.float64) if weights is not None else None
    head = fit_head(x_fit, y_fit, x_hold, y_hold, row_weights=row_weights)
    if encoder == "lora":
        report(0.35, "fine-tuning")
    model = tune_encoder(
        head,
        fit_texts,
        y_fit,
        hold_texts,
        x_hold,
        encoder=encoder,
        row_weights=row_weights,
        epochs=lora_epochs,
        time_limit_s=lora_time_limit_s,
        seed=seed,
        report=report,
        progress=progress,
    )
    head = model.head

    report(0.9, "evaluating")
    x_hold = model.vectors(hold_texts, x_hold)
    emb_examples = model.vectors(texts, emb_examples)
    holdout_metrics = evaluate(head.logits(x_hold), y_hold, head.band, majority_label)
    z_examples = head.logits(emb_examples).tolist()
    predicted = [label_for(z, head.band) for z in z_examples]
    right = [p == g for p, g in zip(predicted, labels, strict=True)]
    fit_right = [(z_examples[i] >= 0) == (labels[i] == "positive") for i in fitted]
    neutral = [i for i, label in enumerate(labels) if label == "neutral"]
    examples_metrics = {
        "examples": len(labels),
        "examples_positive": counts["positive"],
        "examples_negative": counts["negative"],
        "examples_neutral": counts["neutral"],
        "examples_fitted": len(fitted),
        "examples_held_out": len(held_out),
        "examples_accuracy": sum(right) / len(right) if right else None,
        "examples_fit_binary_accuracy": sum(fit_right) / len(fit_right) if fit_right else None,
        "examples_neutral_recall": sum(right[i] for i in neutral) / len(neutral) if neutral else None,
    }
    metrics_record: dict[str, Any] = {"holdout": holdout_metrics}
    if base is not None:
        dev_metrics = evaluate(
            head.logits(model.vectors(base.dev_texts, emb_dev)),
            torch.tensor(base.dev_labels, dtype=torch.float64),
            head.band,
            majority_label,
        )
        metrics_record = {"dev": dev_metrics, "holdout": holdout_metrics}
        metrics = {
            **_summary("dev", dev_metrics),
            "dev_majority_baseline_accuracy": dev_metrics["majority_baseline_accuracy"],
            "dev_log_loss": dev_metrics["log_loss"],
            "dev_size": dev_metrics["n"],
            **_summary("holdout", holdout_metrics),
            "holdout_log_loss": holdout_metrics["log_loss"],
            "holdout_size": holdout_metrics["n"],
            "examples_dropped_as_evaluation_rows": n_dropped,
        }
        data_record: dict[str, Any] = {
            "base": {
                "train": file_info(base.train_path),
                "dev": file_info(base.dev_path),
                "train_rows_used": len(base.train_texts),
                "dev_rows_used": len(base.dev_texts),
                "holdout_fraction": HOLDOUT_FRACTION,
                "fit_rows": len(fit_idx),
                "holdout_rows": len(hold_idx),
                "holdout_rows_dropped_as_duplicates_of_fit": n_hold_dropped,
                "majority_label_in_train": "positive" if majority_label == 1 else "negative",
            }
        }
    else:
        metrics = {
            **_summary("holdout", holdout_metrics),
            "holdout_majority_baseline_accuracy": holdout_metrics["majority_baseline_accuracy"],
            "holdout_log_loss": holdout_metrics["log_loss"],
            "holdout_size": holdout_metrics["n"],
        }
        data_record = {"base": None}
    metrics.update(
        neutral_band=head.band, weight_decay=head.weight_decay, **_encoder_summary(encoder, head), **examples_metrics
    )
    data_record["examples"] = {
        "count": len(labels),
        "sha256": data.digest(),
        "sources": [dict(source) for source in data.sources],
        "labels": counts,
        "fitted": len(fitted),
        "held_out": len(held_out),
        "neutral_not_fitted": counts["neutral"],
        **(
            {"dropped_as_evaluation_rows": n_dropped}
            if base is not None
            else {"holdout_fraction": RECIPE_HOLDOUT_FRACTION, "held_out_dropped_as_duplicates_of_fit": n_dropped}
        ),
    }
    training = {
        "trainer": f"{__name__}:train_recipe",
        "example_weight": example_weight,
        "encoder": encoder,
        "lora_epochs": lora_epochs,
        "lora_time_limit_s": lora_time_limit_s,
        "row_weights": (
            "base rows 1, platform examples example_weight, in the fitting log-loss"
            if base is not None
            else "none: the examples are all the data, each weighs the same"
        ),
    }
    metadata = head_metadata(
        head,
        data=data_record,
        seed=seed,
        metrics={**metrics_record, "examples": examples_metrics},
        training=training,
    )
    report(0.95, "writing")
    write_head(out_dir, head, metadata)
    return metrics


def main(argv: list[str] | None = None) -> int:
    return training_main(
        train,
        task="sentiment",
        model=MODEL_NAME,
        description="Train the sentiment model on SST-2: a LoRA adapter on the MiniLM encoder and a binary head.",
        data_help=f"folder with {TRAIN_FILE} and {DEV_FILE}",
        limit_help="seeded subsample of at most N rows per file (smoke tests)",
        options={
            "encoder": DEFAULT_ENCODER,
            "lora_epochs": DEFAULT_LORA_EPOCHS,
            "lora_time_limit_s": DEFAULT_LORA_TIME_LIMIT_S,
        },
        argv=argv,
    )


if __name__ == "__main__":
    raise SystemExit(main())
