"""Train the hate speech model on the Davidson et al. (2017) tweets: a LoRA adapter on the MiniLM encoder and a head.

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
5. with ``encoder="frozen"``: refit on the whole training part with that weight decay and fold the threshold into
   the bias. With ``encoder="lora"`` (the default): fold 0 of the cross-validation becomes the validation part; the
   head refitted on the other folds is the starting point of a LoRA adapter on the encoder (rank 8 on the
   attention's query and value matrices) trained together with the head on those folds, class-weighted like the
   logistic regression, for ``lora_epochs`` (:func:`dynaforge.tasks.training.fine_tune`; stopped after
   ``lora_time_limit_s``); the decision threshold with the best macro-F1 on the validation part, scored by the
   merged encoder, is folded into the bias;
6. report held-out accuracy, macro-F1 and per-class precision and recall next to the majority-class baseline
   (always ``not_hateful``);
7. write ``adapter.safetensors`` (with LoRA), ``head.safetensors`` (384 weights and a bias, float32) and
   ``metadata.json``.

The ``default`` training recipe (:func:`train_recipe`, declared on the task) runs the same pipeline on the
platform's accepted examples: with the base data (a folder holding ``davidson_2017.csv``) the examples join the
training part only, where each weighs ``example_weight`` tweets in the fit, in the choice of weight decay and in
the threshold, and the held-out part is exactly that of a plain ``train`` with the same seed, so its figures compare
with that run's (the shipped model's at seed 0); without base data the examples are split themselves (stratified,
20% held out).
"""

from __future__ import annotations

import csv
import hashlib
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynaforge.defaults.metrics import accuracy, macro_f1
from dynaforge.tasks.training import (
    ADAPTER_FILE,
    EmbeddingProgress,
    FineTuned,
    FineTuneSettings,
    LoraSettings,
    TrainingData,
    Tuned,
    check_encoder_options,
    embed_texts,
    encoder_record,
    example_weights,
    file_info,
    fine_tune,
    fit_logistic_regression,
    no_report,
    save_adapter,
    save_head,
    seeded_sample,
    training_main,
    write_json_atomically,
)

from .model import DEFAULT_MAX_LENGTH, EMBEDDING_DIM, HEAD_FILE, LABELS, METADATA_FILE, MODEL_NAME, normalise

if TYPE_CHECKING:
    from torch import Tensor

DATA_FILE = "davidson_2017.csv"
HATEFUL_CLASS = "0"
CLASSES = ("0", "1", "2")  # hate speech, offensive language, neither
HOLDOUT_FRACTION = 0.20
FOLDS = 5
WEIGHT_DECAYS = (0.01, 0.03, 0.1, 0.3, 1.0)
LBFGS_MAX_ITER = 500
MIN_LIMIT = 20

# The training recipe.
DEFAULT_EXAMPLE_WEIGHT = 2.0  # a platform example counts as two tweets of its label (see the README)
RECIPE_HOLDOUT_FRACTION = 0.20  # held out of the examples when there is no base data
MIN_RECIPE_EXAMPLES = 20  # examples needed without base data
MIN_RECIPE_EXAMPLES_PER_LABEL = 6  # of each label: one held out and FOLDS left for cross-validation

# Fine-tuning the encoder (the recipe's ``encoder``, ``lora_epochs`` and ``lora_time_limit_s``; see the README for
# the figures these settings give).
DEFAULT_ENCODER = "lora"
DEFAULT_LORA_EPOCHS = 4  # four passes over the 12,800 fitting tweets: about eight minutes on two CPU cores
DEFAULT_LORA_TIME_LIMIT_S = 3600.0  # a slower machine still ends with a model, its metadata saying it was cut
VALIDATION_FOLD = 0  # with LoRA: the fold that chooses the threshold, never fine-tuned on
LORA = FineTuneSettings(
    epochs=DEFAULT_LORA_EPOCHS,
    batch_size=32,
    learning_rate=2e-3,
    head_learning_rate=1e-3,
    weight_decay=0.01,
    warmup=0.06,
    max_length=DEFAULT_MAX_LENGTH,
    time_limit_s=DEFAULT_LORA_TIME_LIMIT_S,
    lora=LoraSettings(rank=8, alpha=16, dropout=0.1, target_modules=("query", "value")),
)

#: ``report(fraction, stage)``, a recipe's progress.
Reporter = Callable[[float, str], None]


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


def balanced_weights(y, weights=None):
    """Row weights that give both labels the same total: ``n / (2 n_c)`` per row, or with ``weights`` (a weight
    per row) ``weights[i] * W / (2 W_c)`` of the weighted totals."""
    import torch

    if weights is None:
        n_pos = float(y.sum())
        return torch.where(y == 1, len(y) / (2 * n_pos), len(y) / (2 * (len(y) - n_pos)))
    total, w_pos = float(weights.sum()), float((weights * y).sum())
    return weights * torch.where(y == 1, total / (2 * w_pos), total / (2 * (total - w_pos)))


def fit_logreg(x, y, weight_decay: float, weights=None):
    """Class-weighted L2 logistic regression (:func:`dynaforge.tasks.training.fit_logistic_regression`).

    Each class gets the total weight of the other (``n / (2 n_c)`` per row), so the rare hateful rows count as
    much as the rest. With ``weights`` (a weight per row: a training recipe's platform examples weigh more than a
    tweet) the same holds of the weighted totals: a row weighs ``weights[i] * W / (2 W_c)``. Returns ``(w, b)`` on
    the original features (the standardisation is folded in).
    """
    row_weight = balanced_weights(y, weights)
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


def best_threshold(z, y, weights=None) -> tuple[float, float]:
    """The threshold ``t`` (predict hateful when ``z >= t``) with the highest macro-F1, and that macro-F1.

    Exact sweep over every cut between distinct sorted scores; ``t`` is half-way between the two scores of the cut.
    With ``weights`` the confusion counts are sums of the rows' weights.
    """
    import torch

    order = torch.argsort(z, descending=True)
    zs, ys = z[order], y[order]
    n = len(ys)
    if weights is None:
        pos, total = float(ys.sum()), float(n)
        tp = torch.cumsum(ys, 0)  # predicting the top k+1 rows hateful
        k = torch.arange(1, n + 1, dtype=torch.float64)
    else:
        ws = weights[order]
        pos, total = float((ys * ws).sum()), float(ws.sum())
        tp = torch.cumsum(ys * ws, 0)
        k = torch.cumsum(ws, 0)
    fp, fn = k - tp, pos - tp
    tn = (total - pos) - fp
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


# --------------------------------------------------------------------------- the pipeline both trainers share


def read_base(data_dir: Path, *, limit: int | None, rng: random.Random) -> tuple[Path, list[str], list[int]]:
    """The base data: the path of ``davidson_2017.csv``, its tweets (normalised) and binary labels; with ``limit``
    a seeded sample of that many rows (drawn from ``rng``)."""
    data_path = Path(data_dir) / DATA_FILE
    raw, labels = read_tweets(data_path)
    if limit is not None:
        if limit < MIN_LIMIT:
            raise ValueError(f"limit must be at least {MIN_LIMIT}")
        keep = seeded_sample(len(raw), limit, rng)
        raw, labels = [raw[i] for i in keep], [labels[i] for i in keep]
    return data_path, [normalise(t) for t in raw], labels


def check_folds(y_train: Sequence[int], remedy: str = "give more data or a larger --limit") -> None:
    """Refuse a training part with fewer than ``FOLDS`` rows of a label."""
    for value, name in ((1, "hateful"), (0, "not_hateful")):
        if list(y_train).count(value) < FOLDS:
            raise ValueError(
                f"the training part has {list(y_train).count(value)} {name} rows; {FOLDS}-fold cross-validation "
                f"needs at least {FOLDS}: {remedy}"
            )


@dataclass(frozen=True)
class ChosenHead:
    """The refitted head (float64, on raw embeddings): ``weight``, ``bias`` with the threshold folded in, the
    ``untuned_bias`` without it, the chosen search record and every candidate's; with a fine-tuned encoder,
    ``tuned`` (the LoRA run) and ``validation`` (the threshold chosen on the validation fold and its macro-F1)."""

    weight: Tensor
    bias: Tensor
    untuned_bias: Tensor
    best: dict[str, float]
    search: list[dict[str, float]]
    tuned: FineTuned | None = None
    validation: dict[str, float] | None = None

    @property
    def threshold(self) -> float:
        """The decision threshold folded into ``bias``."""
        return self.validation["threshold"] if self.validation is not None else self.best["cv_threshold"]


def tune_encoder(
    head: ChosenHead,
    texts: Sequence[str],
    x_train: Tensor,
    y_train: Tensor,
    fold: Tensor,
    *,
    encoder: str,
    weights: Tensor | None,
    epochs: int,
    time_limit_s: float,
    seed: int,
    report: Reporter,
    progress: bool,
) -> Tuned[ChosenHead]:
    """Step 5 with ``encoder="lora"``: fine-tune an adapter and the head on the training part's rows outside
    ``VALIDATION_FOLD`` (class-balanced, times ``weights`` when given), starting from the logistic regression
    refitted on them with the chosen weight decay, and fold in the threshold of the best macro-F1 on the validation
    fold as the merged encoder scores it. With ``"frozen"``, ``head`` as it is."""
    import torch

    if encoder == "frozen":
        return Tuned(head, max_length=DEFAULT_MAX_LENGTH)
    fit, val = fold != VALIDATION_FOLD, fold == VALIDATION_FOLD
    fit_rows = [int(i) for i in torch.nonzero(fit).flatten()]
    val_rows = [int(i) for i in torch.nonzero(val).flatten()]
    fit_weights = None if weights is None else weights[fit]
    start_weight, start_bias = fit_logreg(x_train[fit], y_train[fit], head.best["weight_decay"], fit_weights)
    tuned = fine_tune(
        [texts[i] for i in fit_rows],
        y_train[fit].tolist(),
        row_weights=balanced_weights(y_train[fit], fit_weights).tolist(),
        head=(start_weight, start_bias),
        settings=replace(LORA, epochs=epochs, time_limit_s=time_limit_s),
        seed=seed,
        report=lambda fraction, stage: report(0.35 + 0.5 * fraction, stage),
        progress=progress,
    )
    merged = tuned.encoder()
    weight, bias = tuned.head_weight.double().reshape(-1), tuned.head_bias.double().reshape(())
    x_val = merged.embed_many([texts[i] for i in val_rows], max_length=DEFAULT_MAX_LENGTH).double()
    threshold, score = best_threshold(x_val @ weight + bias, y_train[val], None if weights is None else weights[val])
    validation = {"fold": VALIDATION_FOLD, "rows": len(val_rows), "macro_f1": score, "threshold": threshold}
    chosen = replace(head, weight=weight, bias=bias - threshold, untuned_bias=bias, tuned=tuned, validation=validation)
    return Tuned(chosen, merged, DEFAULT_MAX_LENGTH)


def select_head(x_train: Tensor, y_train: Tensor, fold: Tensor, *, weights=None, progress: bool) -> ChosenHead:
    """Steps 4 and 5: the weight decay and threshold of the best cross-validated macro-F1 (rows weighted by
    ``weights`` when given), and the head refitted on the whole training part."""
    import torch
    from tqdm import tqdm

    search = []
    bar = tqdm(total=len(WEIGHT_DECAYS) * FOLDS, desc="cross-validate", unit="fit", disable=not progress)
    try:
        for wd in WEIGHT_DECAYS:
            oof = torch.empty(len(y_train), dtype=torch.float64)
            for k in range(FOLDS):
                fit, val = fold != k, fold == k
                w, b = fit_logreg(x_train[fit], y_train[fit], wd, None if weights is None else weights[fit])
                oof[val] = x_train[val] @ w + b
                bar.update(1)
            threshold, score = best_threshold(oof, y_train, weights)
            search.append({"weight_decay": wd, "cv_macro_f1": score, "cv_threshold": threshold})
    finally:
        bar.close()
    best = max(search, key=lambda s: s["cv_macro_f1"])
    w, b = fit_logreg(x_train, y_train, best["weight_decay"], weights)
    bias = b - best["cv_threshold"]  # fold the threshold in: hateful iff weight . e + bias >= 0
    return ChosenHead(w, bias, b, best, search)


def predictions(z: Tensor) -> list[str]:
    """The label of each head score (``z >= 0``: hateful)."""
    return [LABELS[0] if v >= 0 else LABELS[1] for v in z.tolist()]


def label_report(golds: Sequence[str], preds: Sequence[str]) -> dict[str, Any]:
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


#: The old name of :func:`label_report`.
report = label_report


def evaluate(z: Tensor, untuned_z: Tensor, golds: Sequence[str]) -> dict[str, Any]:
    """The held-out figures: with the tuned threshold, without it, and of the majority-class baseline."""
    return {
        "holdout": label_report(golds, predictions(z)),
        "holdout_without_threshold_tuning": label_report(golds, predictions(untuned_z)),
        "holdout_majority_baseline": {"predicts": LABELS[1], **label_report(golds, [LABELS[1]] * len(golds))},
    }


def head_metadata(
    head: ChosenHead,
    *,
    data: dict[str, Any],
    seed: int,
    metrics: dict[str, Any],
    training: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``metadata.json``: the encoder (and its adapter), the normalisation, the labels, the head and how it was
    chosen, ``data`` (what it was trained on: counts and hashes, no text), ``training`` (a recipe's settings), seed
    and metrics."""
    encoder = {
        **encoder_record(),
        "pooling": "mean (attention-mask weighted)",
        "normalize": "l2",
        "max_length": DEFAULT_MAX_LENGTH,
        "embedding_dim": EMBEDDING_DIM,
        "fine_tuned": head.tuned is not None,
    }
    if head.tuned is not None:
        encoder["adapter"] = {
            "file": ADAPTER_FILE,
            "fitting_rows": f"the training part outside cross-validation fold {VALIDATION_FOLD}",
            **head.tuned.record(),
        }
    tuned_note = (
        f"; then trained with the encoder's adapter (AdamW) from the same fit on the folds other than "
        f"{VALIDATION_FOLD}, and the threshold chosen for macro-F1 on fold {VALIDATION_FOLD} as the merged encoder "
        "scores it"
        if head.tuned is not None
        else ""
    )
    return {
        "format": "dynaforge-hatespeech-head/1",
        "encoder": encoder,
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
            "folded into weight and bias" + tuned_note,
            "class_weighting": "each row weighted n / (2 n_label): both labels carry the same total weight",
            "weight_decay": head.best["weight_decay"],
            "decision_threshold": head.threshold,
            "decision_threshold_note": (
                f"chosen for macro-F1 on the validation fold {VALIDATION_FOLD}"
                if head.validation is not None
                else "chosen for macro-F1 on out-of-fold scores"
            )
            + " and subtracted from the stored bias, so 0.5 is the decision boundary of p(hateful)",
            "selection": f"highest {FOLDS}-fold cross-validated macro-F1 (at its best threshold) on the training part",
            "search": head.search,
            **({"validation": head.validation} if head.validation is not None else {}),
        },
        "data": data,
        **({"training": training} if training is not None else {}),
        "seed": seed,
        "metrics": metrics,
    }


def write_head(out_dir: Path, head: ChosenHead, metadata: dict[str, Any]) -> None:
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


def holdout_summary(figures: dict[str, Any], head: ChosenHead, encoder: str) -> dict[str, Any]:
    """The headline metrics of :func:`evaluate`'s figures, the chosen head and how the encoder was trained (no
    times: a recipe's metrics are deterministic)."""
    holdout, baseline = figures["holdout"], figures["holdout_majority_baseline"]
    tuned: dict[str, Any] = {"encoder": encoder}
    if head.tuned is not None and head.validation is not None:
        tuned.update(
            lora_steps=head.tuned.steps,
            lora_stopped_by_time_limit=head.tuned.stopped_early,
            validation_macro_f1=head.validation["macro_f1"],
        )
    return {
        "holdout_n": holdout["n"],
        "holdout_accuracy": holdout["accuracy"],
        "holdout_macro_f1": holdout["macro_f1"],
        "holdout_hateful_recall": holdout["per_label"]["hateful"]["recall"],
        "holdout_hateful_precision": holdout["per_label"]["hateful"]["precision"],
        "baseline_accuracy": baseline["accuracy"],
        "baseline_macro_f1": baseline["macro_f1"],
        "cv_macro_f1": head.best["cv_macro_f1"],
        "weight_decay": head.best["weight_decay"],
        "decision_threshold": head.threshold,
        **tuned,
    }


# --------------------------------------------------------------------------- dynaforge train hatespeech


def train(
    data_dir: Path,
    out_dir: Path,
    *,
    progress: bool = True,
    limit: int | None = None,
    seed: int = 0,
    cache: Path | None = None,
    encoder: str = DEFAULT_ENCODER,
    lora_epochs: int = DEFAULT_LORA_EPOCHS,
    lora_time_limit_s: float = DEFAULT_LORA_TIME_LIMIT_S,
) -> dict[str, Any]:
    """Train the model (the adapter with ``encoder="lora"``, and the head), write ``adapter.safetensors``,
    ``head.safetensors`` and ``metadata.json`` to ``out_dir``; return held-out metrics with the time each step took.

    ``limit`` trains on a seeded random sample of that many rows (smoke tests); ``cache`` is a file where the
    frozen encoder's embeddings of exactly these texts are kept between runs (development only: re-embedding takes
    minutes).
    """
    import torch

    check_encoder_options(encoder, lora_epochs, lora_time_limit_s)
    t0 = time.perf_counter()
    rng = random.Random(seed)
    data_path, texts, labels = read_base(Path(data_dir), limit=limit, rng=rng)

    train_idx, hold_idx = stratified_holdout(labels, HOLDOUT_FRACTION, rng)
    seen = {texts[i] for i in train_idx}
    n_hold_drawn = len(hold_idx)
    hold_idx = [i for i in hold_idx if texts[i] not in seen]
    y_train = [labels[i] for i in train_idx]
    check_folds(y_train)

    t_embed = time.perf_counter()
    embeddings = _cached_embeddings(texts, cache)
    if embeddings is None:
        embeddings = embed_texts(texts, max_length=DEFAULT_MAX_LENGTH, progress=progress, desc="embed tweets")
        if cache is not None:
            torch.save({"sha256": _texts_digest(texts), "embeddings": embeddings}, cache)
    embed_seconds = time.perf_counter() - t_embed

    x_all = embeddings.double()
    y_all = torch.tensor(labels, dtype=torch.float64)
    fold = torch.tensor(stratified_folds(y_train, FOLDS, rng))
    t_fit = time.perf_counter()
    head = select_head(x_all[train_idx], y_all[train_idx], fold, progress=progress)
    fit_seconds = time.perf_counter() - t_fit

    t_tune = time.perf_counter()
    model = tune_encoder(
        head,
        [texts[i] for i in train_idx],
        x_all[train_idx],
        y_all[train_idx],
        fold,
        encoder=encoder,
        weights=None,
        epochs=lora_epochs,
        time_limit_s=lora_time_limit_s,
        seed=seed,
        report=no_report,
        progress=progress,
    )
    head = model.head
    x_hold = model.vectors([texts[i] for i in hold_idx], x_all[hold_idx])
    tune_seconds = time.perf_counter() - t_tune
    golds = [LABELS[0] if labels[i] else LABELS[1] for i in hold_idx]
    figures = evaluate(x_hold @ head.weight + head.bias, x_hold @ head.weight + head.untuned_bias, golds)
    data = {
        **file_info(data_path),
        "rows_used": len(texts),
        "limit": limit,
        "hateful_share": sum(labels) / len(labels),
        "holdout_fraction": HOLDOUT_FRACTION,
        "train_rows": len(train_idx),
        "holdout_rows": len(hold_idx),
        "holdout_rows_dropped_as_duplicates_of_train": n_hold_drawn - len(hold_idx),
    }
    write_head(Path(out_dir), head, head_metadata(head, data=data, seed=seed, metrics=figures))

    return {
        **holdout_summary(figures, head, encoder),
        "embed_seconds": round(embed_seconds, 1),
        "fit_seconds": round(fit_seconds, 1),
        "fine_tune_seconds": round(tune_seconds, 1),
        "total_seconds": round(time.perf_counter() - t0, 1),
    }


# --------------------------------------------------------------------------- the training recipe


def example_rows(examples: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[int]]:
    """The platform's examples (the task's field values) as normalised statements and binary labels (1 =
    hateful), in order; the metadata fields (target group, type of hate) are not used."""
    texts: list[str] = []
    labels: list[int] = []
    for i, example in enumerate(examples):
        statement, label = example.get("statement"), example.get("label")
        if not isinstance(statement, str) or not statement.strip():
            raise ValueError(f"example {i} has no statement")
        if label not in LABELS:
            raise ValueError(f"example {i}: the label must be one of {', '.join(LABELS)}, not {label!r}")
        texts.append(normalise(statement))
        labels.append(1 if label == LABELS[0] else 0)
    return texts, labels


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
    """The task's ``default`` training recipe: the model from the platform's examples, with the Davidson et al.
    base data when ``data.base_dir`` is given. Writes ``adapter.safetensors`` (``encoder="lora"``),
    ``head.safetensors`` and ``metadata.json`` to ``out_dir``; returns held-out figures and the new model's figures
    on the examples.

    ``encoder="lora"`` fine-tunes a LoRA adapter on the encoder with the head (step 5 of the module docstring: the
    validation fold is that of the cross-validation, examples included), ``lora_epochs`` passes, stopped after
    ``lora_time_limit_s`` seconds (the metrics say whether it was); ``"frozen"`` fits the head alone.

    With base data: the tweets are read and split exactly as by :func:`train` with the same seed (the same held-out
    part); the examples join the training part only (an example whose normalised statement is a held-out tweet is
    left out: it would be trained on and scored at once), dealt into the cross-validation folds by label, and each
    weighs ``example_weight`` tweets: in the class-weighted fit, and in the confusion counts from which the
    threshold and the weight decay are chosen.

    Without: the examples (at least ``MIN_RECIPE_EXAMPLES``, ``MIN_RECIPE_EXAMPLES_PER_LABEL`` of each label) are
    split, seeded and stratified, ``RECIPE_HOLDOUT_FRACTION`` held out, then cross-validated and fitted like the
    tweets; ``example_weight`` changes nothing then. Deterministic for a seed: the same data gives the same files.
    """
    import torch

    progress_report = report or no_report
    if not example_weight > 0:
        raise ValueError(f"example_weight must be positive, got {example_weight!r}")
    check_encoder_options(encoder, lora_epochs, lora_time_limit_s)
    progress_report(0.02, "reading")
    ex_texts, ex_labels = example_rows(data.examples)
    n_hateful = sum(ex_labels)
    rng = random.Random(seed)

    if data.base_dir is not None:
        data_path, texts, labels = read_base(Path(data.base_dir), limit=None, rng=rng)
        train_idx, hold_idx = stratified_holdout(labels, HOLDOUT_FRACTION, rng)
        seen = {texts[i] for i in train_idx}
        n_hold_drawn = len(hold_idx)
        hold_idx = [i for i in hold_idx if texts[i] not in seen]
        held_texts = {texts[i] for i in hold_idx}
        fitted = [i for i in range(len(ex_texts)) if ex_texts[i] not in held_texts]
        held_out: list[int] = []
        n_dropped = len(ex_texts) - len(fitted)
        y_base = [labels[i] for i in train_idx]
        y_fitted = [ex_labels[i] for i in fitted]
        check_folds(y_base + y_fitted, remedy="give more data")
        # the tweets' folds are drawn as by train(); the examples are dealt into folds after them
        folds = stratified_folds(y_base, FOLDS, rng) + stratified_folds(y_fitted, FOLDS, rng)
        weights = example_weights(len(train_idx), len(fitted), example_weight=example_weight) if fitted else None
    else:
        n_not = len(ex_labels) - n_hateful
        if len(ex_labels) < MIN_RECIPE_EXAMPLES or min(n_hateful, n_not) < MIN_RECIPE_EXAMPLES_PER_LABEL:
            raise ValueError(
                f"training without the base data needs at least {MIN_RECIPE_EXAMPLES} examples, at least "
                f"{MIN_RECIPE_EXAMPLES_PER_LABEL} of each label; got {n_hateful} hateful and {n_not} not_hateful. "
                "Add examples, or train with the base data"
            )
        fitted, drawn = stratified_holdout(ex_labels, RECIPE_HOLDOUT_FRACTION, rng)
        seen = {ex_texts[i] for i in fitted}
        held_out = [i for i in drawn if ex_texts[i] not in seen]
        n_dropped = len(drawn) - len(held_out)
        if not held_out:
            raise ValueError(
                "every held-out example's statement also occurs among the fitted ones; give more distinct examples"
            )
        folds = stratified_folds([ex_labels[i] for i in fitted], FOLDS, rng)
        weights = None

    progress_report(0.05, "embedding")
    embedding = EmbeddingProgress(
        progress_report, len(ex_texts) + (len(texts) if data.base_dir is not None else 0), start=0.05, end=0.3
    )
    x_examples = (
        embed_texts(
            ex_texts,
            max_length=DEFAULT_MAX_LENGTH,
            progress=progress,
            desc="embed examples",
            on_batch=embedding.part(),
        ).double()
        if ex_texts
        else torch.zeros((0, EMBEDDING_DIM), dtype=torch.float64)
    )
    y_examples = torch.tensor(ex_labels, dtype=torch.float64)
    if data.base_dir is not None:
        x_all = embed_texts(
            texts, max_length=DEFAULT_MAX_LENGTH, progress=progress, desc="embed tweets", on_batch=embedding.part()
        ).double()
        y_all = torch.tensor(labels, dtype=torch.float64)
        x_train = torch.cat([x_all[train_idx], x_examples[fitted]])
        y_train = torch.cat([y_all[train_idx], y_examples[fitted]])
        train_texts = [texts[i] for i in train_idx] + [ex_texts[i] for i in fitted]
        x_hold = x_all[hold_idx]
        hold_texts = [texts[i] for i in hold_idx]
        golds = [LABELS[0] if labels[i] else LABELS[1] for i in hold_idx]
    else:
        x_train, y_train = x_examples[fitted], y_examples[fitted]
        train_texts = [ex_texts[i] for i in fitted]
        x_hold = x_examples[held_out]
        hold_texts = [ex_texts[i] for i in held_out]
        golds = [LABELS[0] if ex_labels[i] else LABELS[1] for i in held_out]

    progress_report(0.3, "fitting")
    row_weights = torch.tensor(weights, dtype=torch.float64) if weights is not None else None
    fold = torch.tensor(folds)
    head = select_head(x_train, y_train, fold, weights=row_weights, progress=progress)
    if encoder == "lora":
        progress_report(0.35, "fine-tuning")
    model = tune_encoder(
        head,
        train_texts,
        x_train,
        y_train,
        fold,
        encoder=encoder,
        weights=row_weights,
        epochs=lora_epochs,
        time_limit_s=lora_time_limit_s,
        seed=seed,
        report=progress_report,
        progress=progress,
    )
    head = model.head

    progress_report(0.9, "evaluating")
    x_hold = model.vectors(hold_texts, x_hold)
    x_examples = model.vectors(ex_texts, x_examples)
    figures = evaluate(x_hold @ head.weight + head.bias, x_hold @ head.weight + head.untuned_bias, golds)
    ex_golds = [LABELS[0] if y else LABELS[1] for y in ex_labels]
    ex_preds = predictions(x_examples @ head.weight + head.bias)
    on_examples = label_report(ex_golds, ex_preds) if ex_golds else None
    on_fitted = label_report([ex_golds[i] for i in fitted], [ex_preds[i] for i in fitted]) if fitted else None
    metrics = {
        **holdout_summary(figures, head, encoder),
        "examples": len(ex_labels),
        "examples_hateful": n_hateful,
        "examples_not_hateful": len(ex_labels) - n_hateful,
        "examples_fitted": len(fitted),
        "examples_held_out": len(held_out),
        "examples_accuracy": on_examples["accuracy"] if on_examples else None,
        "examples_macro_f1": on_examples["macro_f1"] if on_examples else None,
        "examples_hateful_recall": on_examples["per_label"]["hateful"]["recall"] if on_examples else None,
        "examples_fit_accuracy": on_fitted["accuracy"] if on_fitted else None,
    }
    examples_record: dict[str, Any] = {
        "count": len(ex_labels),
        "sha256": data.digest(),
        "sources": [dict(source) for source in data.sources],
        "labels": {LABELS[0]: n_hateful, LABELS[1]: len(ex_labels) - n_hateful},
        "fitted": len(fitted),
        "held_out": len(held_out),
    }
    if data.base_dir is not None:
        metrics["examples_dropped_as_holdout_rows"] = n_dropped
        examples_record["dropped_as_holdout_rows"] = n_dropped
        record: dict[str, Any] = {
            "base": {
                **file_info(data_path),
                "rows_used": len(texts),
                "hateful_share": sum(labels) / len(labels),
                "holdout_fraction": HOLDOUT_FRACTION,
                "train_rows": len(train_idx),
                "holdout_rows": len(hold_idx),
                "holdout_rows_dropped_as_duplicates_of_train": n_hold_drawn - len(hold_idx),
            }
        }
    else:
        examples_record.update(
            holdout_fraction=RECIPE_HOLDOUT_FRACTION, held_out_dropped_as_duplicates_of_fit=n_dropped
        )
        record = {"base": None}
    record["examples"] = examples_record
    training = {
        "trainer": f"{__name__}:train_recipe",
        "example_weight": example_weight,
        "encoder": encoder,
        "lora_epochs": lora_epochs,
        "lora_time_limit_s": lora_time_limit_s,
        "row_weights": (
            "tweets 1, platform examples example_weight, then class-balanced over the weighted totals; the "
            "cross-validated threshold and macro-F1 count rows by the same weights"
            if weights is not None
            else "class-balanced only: every row of a label weighs the same"
        ),
    }
    metadata = head_metadata(
        head,
        data=record,
        seed=seed,
        metrics={**figures, "examples": on_examples, "fitted_examples": on_fitted},
        training=training,
    )
    progress_report(0.95, "writing")
    write_head(Path(out_dir), head, metadata)
    return metrics


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
        description="Train the hate speech model on the Davidson et al. (2017) tweets: a LoRA adapter on the MiniLM "
        "encoder and a head.",
        data_help=f"folder with {DATA_FILE}",
        options={
            "encoder": DEFAULT_ENCODER,
            "lora_epochs": DEFAULT_LORA_EPOCHS,
            "lora_time_limit_s": DEFAULT_LORA_TIME_LIMIT_S,
        },
        argv=argv,
    )


if __name__ == "__main__":
    raise SystemExit(main())
