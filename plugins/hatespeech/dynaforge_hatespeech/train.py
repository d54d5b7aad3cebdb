"""Train the hate speech head on frozen MiniLM embeddings of the Davidson et al. (2017) tweets.

Run by ``dynaforge train hatespeech --data DIR [--out DIR] [--limit N]`` or ``python -m dynaforge_hatespeech.train
--data DIR [--out DIR] [--limit N] [--seed 0]``; ``DIR`` holds ``davidson_2017.csv`` (columns include ``class`` and
``tweet``; class 0 = hate speech, 1 = offensive language, 2 = neither). Without ``--out`` the head becomes a new
version in the model store, which the model's loader then prefers to the weights shipped in the package.

Steps (all seeded; nothing from the data is written out except counts, hashes and scores):

1. read the tweets, map class 0 to ``hateful`` and classes 1 and 2 to ``not_hateful``, and :func:`normalise` them
   (the function the model applies at prediction time);
2. hold out 20% of the rows, stratified by label; held-out rows whose normalised text also occurs in the training
   part are dropped (no leakage). The held-out part is used for nothing but the final report;
3. embed every row once with the frozen shared encoder (mean pooling, L2 norm, ``max_length`` 128);
4. model selection on the training part only, by stratified 5-fold cross-validation: for each weight decay of a
   small grid, fit a class-weighted L2 logistic regression (classes weighted inversely to their frequency, since
   hate is about 6% of the tweets) on four folds and score the fifth; on the out-of-fold scores find the decision
   threshold with the best macro-F1; keep the weight decay whose best macro-F1 is highest;
5. refit on the whole training part with that weight decay, fold the threshold into the bias, and report held-out
   accuracy, macro-F1 and per-class precision and recall next to the majority-class baseline (always
   ``not_hateful``);
6. write ``head.safetensors`` (384 weights and a bias, float32) and ``metadata.json``.
"""

from __future__ import annotations

import csv
import hashlib
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dynaforge.defaults.metrics import accuracy, macro_f1
from dynaforge.tasks.training import (
    embed_texts,
    encoder_record,
    file_info,
    fit_logistic_regression,
    save_head,
    seeded_sample,
    training_main,
    write_json_atomically,
)

from .model import DEFAULT_MAX_LENGTH, EMBEDDING_DIM, HEAD_FILE, LABELS, METADATA_FILE, MODEL_NAME, normalise

DATA_FILE = "davidson_2017.csv"
HATEFUL_CLASS = "0"
CLASSES = ("0", "1", "2")  # hate speech, offensive language, neither
HOLDOUT_FRACTION = 0.20
FOLDS = 5
WEIGHT_DECAYS = (0.01, 0.03, 0.1, 0.3, 1.0)
LBFGS_MAX_ITER = 500
MIN_LIMIT = 20


def read_tweets(path: Path) -> tuple[list[str], list[int]]:
    """Read the CSV; returns the raw tweets and binary labels (1 = hateful). Checks the columns and every class."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; pass --data a folder holding {DATA_FILE}")
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = {"class", "tweet"} - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{path}: missing column(s) {sorted(missing)}; expected the Davidson et al. 2017 CSV")
        texts: list[str] = []
        labels: list[int] = []
        for row in reader:
            cls = (row["class"] or "").strip()
            if cls not in CLASSES:
                raise ValueError(f"{path}:{reader.line_num}: class must be 0, 1 or 2, got {row['class']!r}")
            texts.append(row["tweet"] or "")
            labels.append(1 if cls == HATEFUL_CLASS else 0)
    if not texts:
        raise ValueError(f"{path}: no rows")
    return texts, labels


def stratified_holdout(labels: Sequence[int], fraction: float, rng: random.Random) -> tuple[list[int], list[int]]:
    """Indices (train, held out): ``fraction`` of each label's rows, at least one, held out."""
    train, hold = [], []
    for value in (0, 1):
        rows = [i for i, y in enumerate(labels) if y == value]
        rng.shuffle(rows)
        k = max(1, round(fraction * len(rows)))
        hold += rows[:k]
        train += rows[k:]
    return sorted(train), sorted(hold)


def stratified_folds(labels: Sequence[int], folds: int, rng: random.Random) -> list[int]:
    """Fold number of each row, dealing each label's shuffled rows round-robin so every fold has both labels."""
    fold = [0] * len(labels)
    for value in (0, 1):
        rows = [i for i, y in enumerate(labels) if y == value]
        rng.shuffle(rows)
        for k, i in enumerate(rows):
            fold[i] = k % folds
    return fold


def fit_logreg(x, y, weight_decay: float):
    """Class-weighted L2 logistic regression (:func:`dynaforge.tasks.training.fit_logistic_regression`).

    Each class gets the total weight of the other (``n / (2 n_c)`` per row), so the rare hateful rows count as
    much as the rest. Returns ``(w, b)`` on the original features (the standardisation is folded in).
    """
    import torch

    n_pos = float(y.sum())
    row_weight = torch.where(y == 1, len(y) / (2 * n_pos), len(y) / (2 * (len(y) - n_pos)))
    head = fit_logistic_regression(
        x,
        y,
        weight_decay=weight_decay,
        row_weights=row_weight,
        max_iter=LBFGS_MAX_ITER,
        tolerance_grad=1e-6,
        tolerance_change=1e-9,
    )
    return head.weight, head.bias


def best_threshold(z, y) -> tuple[float, float]:
    """The threshold ``t`` (predict hateful when ``z >= t``) with the highest macro-F1, and that macro-F1.

    Exact sweep over every cut between distinct sorted scores; ``t`` is half-way between the two scores of the cut.
    """
    import torch

    order = torch.argsort(z, descending=True)
    zs, ys = z[order], y[order]
    pos, n = float(ys.sum()), len(ys)
    tp = torch.cumsum(ys, 0)  # predicting the top k+1 rows hateful
    k = torch.arange(1, n + 1, dtype=torch.float64)
    fp, fn = k - tp, pos - tp
    tn = (n - pos) - fp
    f1_hate = 2 * tp / (2 * tp + fp + fn)
    f1_not = torch.where(2 * tn + fn + fp > 0, 2 * tn / (2 * tn + fn + fp), torch.zeros_like(tn))
    score = (f1_hate + f1_not) / 2
    # a cut is only possible where the next score differs (ties go to the same side)
    valid = torch.ones(n, dtype=torch.bool)
    valid[:-1] = zs[:-1] > zs[1:]
    score = torch.where(valid, score, torch.full_like(score, -1.0))
    i = int(torch.argmax(score))
    t = float(zs[i] + zs[i + 1]) / 2 if i + 1 < n else float(zs[i]) - 1.0
    return t, float(score[i])


def report(golds: Sequence[str], preds: Sequence[str]) -> dict[str, Any]:
    """Accuracy, macro-F1 (the platform's own metric functions) and per-label precision and recall."""
    per_label = {}
    for label in LABELS:
        tp = sum(g == label and p == label for g, p in zip(golds, preds, strict=True))
        predicted = sum(p == label for p in preds)
        actual = sum(g == label for g in golds)
        per_label[label] = {
            "support": actual,
            "precision": tp / predicted if predicted else 0.0,
            "recall": tp / actual if actual else 0.0,
        }
    return {
        "n": len(golds),
        "accuracy": accuracy(list(golds), list(preds)),
        "macro_f1": macro_f1(list(golds), list(preds)),
        "per_label": per_label,
    }


def train(
    data_dir: Path,
    out_dir: Path,
    *,
    progress: bool = True,
    limit: int | None = None,
    seed: int = 0,
    cache: Path | None = None,
) -> dict[str, Any]:
    """Train the head, write ``head.safetensors`` and ``metadata.json`` to ``out_dir``; return held-out metrics.

    ``limit`` trains on a seeded random sample of that many rows (smoke tests); ``cache`` is a file where the
    embeddings of exactly these texts are kept between runs (development only: re-embedding takes minutes).
    """
    import torch
    from tqdm import tqdm

    t0 = time.perf_counter()
    data_path = Path(data_dir) / DATA_FILE
    raw, labels = read_tweets(data_path)
    rng = random.Random(seed)
    if limit is not None:
        if limit < MIN_LIMIT:
            raise ValueError(f"limit must be at least {MIN_LIMIT}")
        keep = seeded_sample(len(raw), limit, rng)
        raw, labels = [raw[i] for i in keep], [labels[i] for i in keep]
    texts = [normalise(t) for t in raw]

    train_idx, hold_idx = stratified_holdout(labels, HOLDOUT_FRACTION, rng)
    seen = {texts[i] for i in train_idx}
    n_hold_drawn = len(hold_idx)
    hold_idx = [i for i in hold_idx if texts[i] not in seen]
    y_train = [labels[i] for i in train_idx]
    for value, name in ((1, "hateful"), (0, "not_hateful")):
        if y_train.count(value) < FOLDS:
            raise ValueError(
                f"the training part has {y_train.count(value)} {name} rows; {FOLDS}-fold cross-validation needs at "
                f"least {FOLDS}: give more data or a larger --limit"
            )

    t_embed = time.perf_counter()
    embeddings = _cached_embeddings(texts, cache)
    if embeddings is None:
        embeddings = embed_texts(texts, max_length=DEFAULT_MAX_LENGTH, progress=progress, desc="embed tweets")
        if cache is not None:
            torch.save({"sha256": _texts_digest(texts), "embeddings": embeddings}, cache)
    embed_seconds = time.perf_counter() - t_embed

    x_all = embeddings.double()
    y_all = torch.tensor(labels, dtype=torch.float64)
    x_train, y_tr = x_all[train_idx], y_all[train_idx]
    fold = torch.tensor(stratified_folds(y_train, FOLDS, rng))

    t_fit = time.perf_counter()
    search = []
    bar = tqdm(total=len(WEIGHT_DECAYS) * FOLDS, desc="cross-validate", unit="fit", disable=not progress)
    try:
        for wd in WEIGHT_DECAYS:
            oof = torch.empty(len(train_idx), dtype=torch.float64)
            for k in range(FOLDS):
                fit, val = fold != k, fold == k
                w, b = fit_logreg(x_train[fit], y_tr[fit], wd)
                oof[val] = x_train[val] @ w + b
                bar.update(1)
            threshold, score = best_threshold(oof, y_tr)
            search.append({"weight_decay": wd, "cv_macro_f1": score, "cv_threshold": threshold})
    finally:
        bar.close()
    best = max(search, key=lambda s: s["cv_macro_f1"])
    w, b = fit_logreg(x_train, y_tr, best["weight_decay"])
    bias = b - best["cv_threshold"]  # fold the threshold in: hateful iff weight . e + bias >= 0
    fit_seconds = time.perf_counter() - t_fit

    x_hold = x_all[hold_idx]
    z_hold = x_hold @ w + bias
    golds = [LABELS[0] if labels[i] else LABELS[1] for i in hold_idx]
    holdout = report(golds, [LABELS[0] if z >= 0 else LABELS[1] for z in z_hold.tolist()])
    untuned = report(golds, [LABELS[0] if z >= 0 else LABELS[1] for z in (x_hold @ w + b).tolist()])
    baseline = report(golds, [LABELS[1]] * len(golds))

    tensors = {
        "weight": w.to(torch.float32).reshape(1, EMBEDDING_DIM).contiguous(),
        "bias": bias.to(torch.float32).reshape(1).contiguous(),
    }
    metadata = {
        "format": "dynaforge-hatespeech-head/1",
        "encoder": {
            **encoder_record(),
            "pooling": "mean (attention-mask weighted)",
            "normalize": "l2",
            "max_length": DEFAULT_MAX_LENGTH,
            "embedding_dim": EMBEDDING_DIM,
        },
        "text_normalisation": "dynaforge_hatespeech.model.normalise: HTML entities decoded, URLs -> http, "
        "mentions -> @user, RT dropped, # dropped from hashtags, whitespace collapsed",
        "labels": list(LABELS),
        "label_mapping": {
            "hateful": "class 0 (hate speech)",
            "not_hateful": "class 1 (offensive language) and class 2 (neither)",
        },
        "head": {
            "type": "logistic regression; hateful iff weight . e + bias >= 0; p(hateful) = sigmoid(weight . e + bias)",
            "file": HEAD_FILE,
            "optimizer": f"full-batch L-BFGS (strong Wolfe, max_iter {LBFGS_MAX_ITER}) on standardised features, "
            "folded into weight and bias",
            "class_weighting": "each row weighted n / (2 n_label): both labels carry the same total weight",
            "weight_decay": best["weight_decay"],
            "decision_threshold": best["cv_threshold"],
            "decision_threshold_note": "chosen for macro-F1 on out-of-fold scores and subtracted from the stored "
            "bias, so 0.5 is the decision boundary of p(hateful)",
            "selection": f"highest {FOLDS}-fold cross-validated macro-F1 (at its best threshold) on the training part",
            "search": search,
        },
        "data": {
            **file_info(data_path),
            "rows_used": len(texts),
            "limit": limit,
            "hateful_share": sum(labels) / len(labels),
            "holdout_fraction": HOLDOUT_FRACTION,
            "train_rows": len(train_idx),
            "holdout_rows": len(hold_idx),
            "holdout_rows_dropped_as_duplicates_of_train": n_hold_drawn - len(hold_idx),
        },
        "seed": seed,
        "metrics": {
            "holdout": holdout,
            "holdout_without_threshold_tuning": untuned,
            "holdout_majority_baseline": {"predicts": LABELS[1], **baseline},
        },
    }
    save_head(out_dir, tensors, format=metadata["format"], file=HEAD_FILE)
    write_json_atomically(Path(out_dir) / METADATA_FILE, metadata)

    return {
        "holdout_n": holdout["n"],
        "holdout_accuracy": holdout["accuracy"],
        "holdout_macro_f1": holdout["macro_f1"],
        "holdout_hateful_recall": holdout["per_label"]["hateful"]["recall"],
        "holdout_hateful_precision": holdout["per_label"]["hateful"]["precision"],
        "baseline_accuracy": baseline["accuracy"],
        "baseline_macro_f1": baseline["macro_f1"],
        "cv_macro_f1": best["cv_macro_f1"],
        "weight_decay": best["weight_decay"],
        "decision_threshold": best["cv_threshold"],
        "embed_seconds": round(embed_seconds, 1),
        "fit_seconds": round(fit_seconds, 1),
        "total_seconds": round(time.perf_counter() - t0, 1),
    }


def _texts_digest(texts: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(texts).encode("utf-8")).hexdigest()


def _cached_embeddings(texts: Sequence[str], cache: Path | None):
    """Embeddings from ``cache`` when it holds those of exactly ``texts`` (same normalised texts, same order)."""
    import torch

    if cache is None or not Path(cache).is_file():
        return None
    stored = torch.load(cache)
    return stored["embeddings"] if stored.get("sha256") == _texts_digest(texts) else None


def main(argv: list[str] | None = None) -> int:
    return training_main(
        train,
        task="hatespeech",
        model=MODEL_NAME,
        description="Train the hate speech head on frozen MiniLM embeddings of the Davidson et al. (2017) tweets.",
        data_help=f"folder with {DATA_FILE}",
        argv=argv,
    )


if __name__ == "__main__":
    raise SystemExit(main())
