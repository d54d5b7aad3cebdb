"""Train the sentiment head on frozen MiniLM embeddings of SST-2.

Usage (either; without ``--out`` the head becomes a new version in the model store, which the model's loader
then prefers to the weights shipped in the package)::

    dynaforge train sentiment --data ../shared/data/sentiment [--out DIR] [--limit N]
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
5. neutral band: the narrowest half-width ``b`` around p = 0.5 such that
   10% of the held-out phrases satisfy ``|p - 0.5| < b``;
6. evaluate on ``sst2_dev.tsv`` and write ``head.safetensors`` and
   ``metadata.json`` to the output folder.

The data files are only read; no sentence from them is written anywhere.
"""

from __future__ import annotations

import math
import random
import time
from pathlib import Path
from typing import Any

from dynaforge.tasks.training import (
    choose_weight_decay,
    embed_texts,
    encoder_record,
    file_info,
    log_loss,
    save_head,
    seeded_sample,
    training_main,
    write_json_atomically,
)

from .model import DEFAULT_MAX_LENGTH, EMBEDDING_DIM, HEAD_FILE, METADATA_FILE, MODEL_NAME

TRAIN_FILE = "sst2_train.tsv"
DEV_FILE = "sst2_dev.tsv"
HEADER = ("sentence", "label")
HOLDOUT_FRACTION = 0.10
NEUTRAL_TARGET_SHARE = 0.10
WEIGHT_DECAYS = (1e-5, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
LBFGS_MAX_ITER = 500


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


def train(
    data_dir: Path,
    out_dir: Path,
    *,
    progress: bool = True,
    limit: int | None = None,
    seed: int = 0,
) -> dict:
    """Train the head, write ``head.safetensors`` + ``metadata.json``; return dev metrics."""
    import torch

    t0 = time.perf_counter()
    data_dir = Path(data_dir)
    out_dir = Path(out_dir)
    train_path, dev_path = data_dir / TRAIN_FILE, data_dir / DEV_FILE
    train_texts, train_labels = read_tsv(train_path)
    dev_texts, dev_labels = read_tsv(dev_path)

    rng = random.Random(seed)
    torch.manual_seed(seed)
    if limit is not None:
        if limit < 20:
            raise ValueError("limit must be at least 20")
        keep = seeded_sample(len(train_texts), limit, rng)
        train_texts, train_labels = [train_texts[i] for i in keep], [train_labels[i] for i in keep]
        keep = seeded_sample(len(dev_texts), limit, rng)
        dev_texts, dev_labels = [dev_texts[i] for i in keep], [dev_labels[i] for i in keep]

    # seeded hold-out split of the training rows
    order = list(range(len(train_texts)))
    rng.shuffle(order)
    n_hold = max(10, int(round(HOLDOUT_FRACTION * len(order))))
    fit_idx = sorted(order[n_hold:])
    fit_set = {train_texts[i] for i in fit_idx}
    hold_idx = sorted(i for i in order[:n_hold] if train_texts[i] not in fit_set)
    n_hold_dropped = n_hold - len(hold_idx)

    t_embed = time.perf_counter()
    emb_train = embed_texts(train_texts, max_length=DEFAULT_MAX_LENGTH, progress=progress, desc="embed train")
    emb_dev = embed_texts(dev_texts, max_length=DEFAULT_MAX_LENGTH, progress=progress, desc="embed dev")
    embed_seconds = time.perf_counter() - t_embed

    y_all = torch.tensor(train_labels, dtype=torch.float64)
    x_fit = emb_train[fit_idx].double()
    y_fit = y_all[fit_idx]
    x_hold = emb_train[hold_idx].double()
    y_hold = y_all[hold_idx]
    x_dev = emb_dev.double()
    y_dev = torch.tensor(dev_labels, dtype=torch.float64)

    t_fit = time.perf_counter()
    chosen = choose_weight_decay(
        x_fit,
        y_fit,
        x_hold,
        y_hold,
        WEIGHT_DECAYS,
        max_iter=LBFGS_MAX_ITER,
        tolerance_grad=1e-9,
        tolerance_change=1e-12,
    )
    fit_seconds = time.perf_counter() - t_fit
    best_wd, search = chosen.weight_decay, chosen.search
    w, b = chosen.head.weight, chosen.head.bias

    z_hold = x_hold @ w + b
    band = choose_band(torch.sigmoid(z_hold).tolist())
    majority_label = int(sum(train_labels) * 2 >= len(train_labels))

    holdout_metrics = evaluate(z_hold, y_hold, band, majority_label)
    dev_metrics = evaluate(x_dev @ w + b, y_dev, band, majority_label)
    train_set = set(train_texts)
    dev_overlap = sum(1 for t in dev_texts if t in train_set)

    metrics = {
        "dev_binary_accuracy": dev_metrics["binary_accuracy"],
        "dev_three_way_accuracy": dev_metrics["three_way_accuracy"],
        "dev_neutral_share": dev_metrics["neutral_share"],
        "dev_non_neutral_accuracy": dev_metrics["non_neutral_accuracy"],
        "dev_majority_baseline_accuracy": dev_metrics["majority_baseline_accuracy"],
        "dev_log_loss": dev_metrics["log_loss"],
        "dev_size": dev_metrics["n"],
        "neutral_band": band,
        "holdout_binary_accuracy": holdout_metrics["binary_accuracy"],
        "holdout_neutral_share": holdout_metrics["neutral_share"],
        "weight_decay": best_wd,
    }

    tensors = {
        "weight": w.to(torch.float32).reshape(1, EMBEDDING_DIM).contiguous(),
        "bias": b.to(torch.float32).reshape(1).contiguous(),
    }
    metadata = {
        "format": "dynaforge-sentiment-head/1",
        "encoder": {
            **encoder_record(),
            "pooling": "mean (attention-mask weighted)",
            "normalize": "l2",
            "max_length": DEFAULT_MAX_LENGTH,
            "embedding_dim": EMBEDDING_DIM,
        },
        "head": {
            "type": "binary logistic regression, p(positive) = sigmoid(weight . e + bias)",
            "file": HEAD_FILE,
            "optimizer": f"full-batch L-BFGS (strong Wolfe, max_iter {LBFGS_MAX_ITER}) "
            "on standardised features, folded into weight/bias",
            "weight_decay": best_wd,
            "weight_decay_search": search,
            "selection": "lowest held-out log-loss",
        },
        "labels": ["positive", "negative", "neutral"],
        "neutral_band": band,
        "neutral_band_rule": (
            f"narrowest half-width b such that {NEUTRAL_TARGET_SHARE:.0%} of the held-out "
            "training phrases have |p - 0.5| < b; label neutral iff |p - 0.5| < b"
        ),
        "probability_formula": (
            "softmax over logits (z/2, -z/2, t) for (positive, negative, neutral), "
            "z = head logit, t = logit(0.5 + b) / 2; neutral is the arg-max iff |p - 0.5| < b"
        ),
        "data": {
            "train": file_info(train_path),
            "dev": file_info(dev_path),
            "train_rows_used": len(train_texts),
            "dev_rows_used": len(dev_texts),
            "limit": limit,
            "subsampled": limit is not None,
            "holdout_fraction": HOLDOUT_FRACTION,
            "fit_rows": len(fit_idx),
            "holdout_rows": len(hold_idx),
            "holdout_rows_dropped_as_duplicates_of_fit": n_hold_dropped,
            "dev_rows_exactly_in_train": dev_overlap,
            "majority_label_in_train": "positive" if majority_label == 1 else "negative",
        },
        "seed": seed,
        "metrics": {"dev": dev_metrics, "holdout": holdout_metrics},
    }
    save_head(out_dir, tensors, format=metadata["format"], file=HEAD_FILE)
    write_json_atomically(out_dir / METADATA_FILE, metadata)

    metrics["embed_seconds"] = round(embed_seconds, 1)
    metrics["fit_seconds"] = round(fit_seconds, 1)
    metrics["total_seconds"] = round(time.perf_counter() - t0, 1)
    return metrics


def main(argv: list[str] | None = None) -> int:
    return training_main(
        train,
        task="sentiment",
        model=MODEL_NAME,
        description="Train the sentiment head on frozen MiniLM embeddings of SST-2.",
        data_help=f"folder with {TRAIN_FILE} and {DEV_FILE}",
        limit_help="seeded subsample of at most N rows per file (smoke tests)",
        argv=argv,
    )


if __name__ == "__main__":
    raise SystemExit(main())
