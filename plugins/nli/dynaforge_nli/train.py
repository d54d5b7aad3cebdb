"""Train the NLI head on frozen MiniLM sentence-pair features of ANLI round-1 examples.

Usage (either; without ``--out`` the head becomes a new version in the model store, which the model's loader then
prefers to the weights shipped in the package)::

    dynaforge train nli --data ../shared/data/nli [--out DIR] [--limit N]
    python -m dynaforge_nli.train --data ../shared/data/nli [--out DIR] [--limit N] [--seed 0]

Steps (all seeded; no dates written):

1. read ``anli_r1_dev_annotated.csv`` (columns ``context`` = premise, ``statement`` = hypothesis, ``gold_label``
   ``e``/``n``/``c``; other columns are ignored);
2. hold out 20% of the rows, stratified by label, with all rows of one premise on the same side (an annotator
   writes several hypotheses per premise; splitting them would leak the premise);
3. embed every distinct premise and hypothesis once with the frozen encoder and build the features of
   :mod:`dynaforge_nli.model`;
4. on the training part only, choose the weight decay of the logistic regression and the scale of the
   sentence-pair block (0 means lexical cues alone; a small scale means a stronger penalty on the 1,536 embedding
   features than on the 15 scalar ones) by grouped, stratified 5-fold cross-validation: highest mean accuracy,
   ties broken by the lower log-loss;
5. refit on the whole training part, evaluate once on the held-out part next to the majority-class baseline, and
   write ``head.safetensors`` (standardisation folded in) and ``metadata.json``.

ANLI was written to fool strong models, so a small head on a frozen sentence encoder stays far below what it
scores on ordinary NLI; the held-out numbers are reported as they are.

The data file is only read; no sentence from it is written anywhere.

:func:`train_recipe` is the task's ``default`` training recipe (``NLITask.training_recipes``): the same pipeline
on the platform's examples, with this file as optional base data (see its docstring and the plugin's README).
"""

from __future__ import annotations

import csv
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dynaforge.inference.lora import (
    ADAPTER_FILE,
    FineTuned,
    FineTuneSettings,
    LoraSettings,
    check_encoder_options,
    fine_tune,
    save_adapter,
)
from dynaforge.tasks.training import (
    EmbeddingProgress,
    TrainingData,
    encoder_record,
    example_weights,
    file_info,
    fit_logistic_regression,
    log_loss,
    no_report,
    save_head,
    seeded_sample,
    training_main,
    write_json_atomically,
)

from .model import (
    EMBEDDING_DIM,
    FEATURE_DIM,
    HEAD_FILE,
    LABELS,
    MAX_LENGTH,
    METADATA_FILE,
    MODEL_NAME,
    PAIR_BLOCK_DIM,
    SCALAR_FEATURES,
)

DATA_FILE = "anli_r1_dev_annotated.csv"
LABEL_CODES = {"e": "entailment", "n": "neutral", "c": "contradiction"}
HOLDOUT_FOLDS = 5  # the held-out part is one fold of five: 20%
CV_FOLDS = 5
PAIR_BLOCK_SCALES = (0.0, 0.03, 0.1, 0.3)
WEIGHT_DECAYS = (0.03, 0.1, 0.3, 1.0)
LBFGS_MAX_ITER = 300
MIN_ROWS = 10
MIN_PREMISES = 5
MIN_EXAMPLES = 20  # without base data: the fewest platform examples the recipe splits into fit and held-out parts
MIN_GROUPED_PREMISES = 10  # without base data: fewer premises than this are split row by row
DEFAULT_EXAMPLE_WEIGHT = 2.0

# Fine-tuning the encoder in the training recipe (its ``encoder``, ``lora_epochs`` and ``lora_time_limit_s``): a LoRA
# adapter on the shared encoder, trained with the head on the pair features (``dynaforge.inference.lora``). A head on
# frozen vectors cannot learn what adversarial examples teach; an adapter moves the vectors themselves.
DEFAULT_ENCODER = "lora"
DEFAULT_LORA_EPOCHS = 4  # a few hundred to a few thousand pairs: 4 passes take minutes on two CPU cores
DEFAULT_LORA_TIME_LIMIT_S = 1800.0  # a slower machine still ends with a model, its metadata saying it was cut
LORA = FineTuneSettings(
    epochs=DEFAULT_LORA_EPOCHS,
    batch_size=16,
    learning_rate=1e-3,
    head_learning_rate=1e-3,
    weight_decay=0.01,
    warmup=0.1,
    min_warmup_steps=20,
    max_length=MAX_LENGTH,
    time_limit_s=DEFAULT_LORA_TIME_LIMIT_S,
    lora=LoraSettings(rank=8, alpha=16, dropout=0.1, target_modules=("query", "value")),
)
HOLDOUT_RULE = "one of 5 folds (20%), stratified by label, rows of one premise kept on one side"


def read_rows(path: Path) -> list[tuple[str, str, int]]:
    """``(premise, hypothesis, label index)`` rows of an ANLI-style CSV; a clear error names a bad line."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found; pass --data a folder that holds {DATA_FILE}")
    rows: list[tuple[str, str, int]] = []
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = {"context", "statement", "gold_label"} - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{path}: missing column(s) {', '.join(sorted(missing))}")
        for record in reader:
            line = reader.line_num
            premise, hypothesis = (record["context"] or "").strip(), (record["statement"] or "").strip()
            code = (record["gold_label"] or "").strip().lower()
            if code not in LABEL_CODES:
                raise ValueError(f"{path}:{line}: gold_label must be one of e, n, c; got {record['gold_label']!r}")
            if not premise or not hypothesis:
                raise ValueError(f"{path}:{line}: context and statement must not be empty")
            rows.append((premise, hypothesis, LABELS.index(LABEL_CODES[code])))
    return rows


def group_folds(labels: Sequence[int], groups: Sequence[str], k: int, seed: int) -> list[int]:
    """Assign every row to one of ``k`` folds, keeping each group whole and each fold's label mix even.

    Groups are visited largest first (seeded order among equals) and each goes to the fold where it brings the
    label counts closest to ``total / k``; ties go to the smaller fold.
    """
    members: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    order = list(members.values())
    random.Random(seed).shuffle(order)
    order.sort(key=len, reverse=True)
    totals = Counter(labels)
    counts: list[Counter[int]] = [Counter() for _ in range(k)]
    sizes = [0] * k
    fold = [0] * len(labels)

    def added_cost(f: int, add: Counter) -> float:
        return sum(2 * add[c] * (counts[f][c] - totals[c] / k) + add[c] ** 2 for c in add)

    for rows in order:
        add = Counter(labels[i] for i in rows)
        best = min(range(k), key=lambda f: (added_cost(f, add), sizes[f], f))
        for i in rows:
            fold[i] = best
        counts[best].update(add)
        sizes[best] += len(rows)
    return fold


@contextmanager
def _one_torch_thread():
    """Run small-matrix work on one intra-op thread (restored afterwards).

    The head's matrices are tiny; synchronising torch's worker threads costs far more than it saves, and on a busy
    machine it made the cross-validation about a hundred times slower.
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def fit_head(x, y, scale: float, weight_decay: float, *, row_weights=None):
    """Multinomial logistic regression on standardised features, the pair block multiplied by ``scale``
    (:func:`dynaforge.tasks.training.fit_logistic_regression`), each row's log-loss weighted by ``row_weights``
    when given.

    Full-batch L-BFGS in float64. Returns ``(weight [D, 3], bias [3])`` on the *raw* features: standardisation
    and scale are folded in, so serving is ``softmax(x @ weight + bias)``.
    """
    import torch

    feature_scale = torch.ones(x.shape[1], dtype=torch.float64)
    feature_scale[:PAIR_BLOCK_DIM] = scale
    head = fit_logistic_regression(
        x,
        y,
        weight_decay=weight_decay,
        classes=len(LABELS),
        row_weights=row_weights,
        feature_scale=feature_scale,
        max_iter=LBFGS_MAX_ITER,
        tolerance_grad=1e-6,
        tolerance_change=1e-12,
    )
    return head.weight, head.bias


def score(logits, y, weights=None) -> dict[str, float]:
    """Accuracy, macro-F1 (the platform's own metrics) and log-loss of logits against gold label indices.

    With ``weights`` (one per row) each row counts that many times: accuracy and log-loss are weighted means and
    macro-F1 is computed from weighted true and false positives and false negatives.
    """
    from dynaforge.defaults.metrics import accuracy, macro_f1

    golds = [LABELS[i] for i in y.tolist()]
    preds = [LABELS[i] for i in logits.argmax(dim=1).tolist()]
    if weights is None:
        return {
            "accuracy": accuracy(golds, preds),
            "macro_f1": macro_f1(golds, preds),
            "log_loss": log_loss(logits, y),
        }
    import torch.nn.functional as F

    w = weights.tolist()
    total = sum(w)
    f1s = []
    for c in sorted(set(golds) | set(preds)):
        tp = sum(wi for g, p, wi in zip(golds, preds, w, strict=True) if g == c and p == c)
        fp = sum(wi for g, p, wi in zip(golds, preds, w, strict=True) if g != c and p == c)
        fn = sum(wi for g, p, wi in zip(golds, preds, w, strict=True) if g == c and p != c)
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
    losses = F.cross_entropy(logits, y, reduction="none")
    return {
        "accuracy": sum(wi for g, p, wi in zip(golds, preds, w, strict=True) if g == p) / total,
        "macro_f1": sum(f1s) / len(f1s),
        "log_loss": float((losses * weights).sum() / weights.sum()),
    }


def pair_matrix(
    premises: Sequence[str],
    hypotheses: Sequence[str],
    *,
    progress: bool,
    on_batch: Callable[[int, int], None] | None = None,
    encoder=None,
):
    """The float64 feature matrix ``[n, FEATURE_DIM]`` of the pairs (each distinct text embedded once) as
    ``encoder`` sees them (default: the shared frozen encoder); ``on_batch(done, total)`` hears the texts embedded
    so far."""
    from .model import embed_pairs, pair_features, shared_minilm

    encoder = encoder or shared_minilm()
    u, v = embed_pairs(encoder, premises, hypotheses, many=True, progress=progress, on_batch=on_batch)
    return pair_features(u, v, premises, hypotheses).double()


@dataclass
class FittedHead:
    """The outcome of :func:`select_and_fit`: the head on raw features, the chosen grid point and the search."""

    weight: Any
    bias: Any
    best: dict[str, Any]
    search: list[dict[str, Any]]
    n_cv: int


def select_and_fit(
    x,
    y,
    cv_folds: Sequence[int],
    n_cv: int,
    *,
    row_weights=None,
    progress: bool = False,
    on_step: Callable[[int, int], None] | None = None,
) -> FittedHead:
    """Choose the pair-block scale and weight decay by cross-validation over ``cv_folds`` (highest mean accuracy,
    ties broken by the lower log-loss), then refit on all rows.

    With ``row_weights`` every fit is weighted and every fold is scored with the same weights (weighted accuracy
    and log-loss), so the choice favours what the weighted fit is asked to get right. ``on_step(done, total)``
    after each grid point and after the final fit.
    """
    import torch
    from tqdm import tqdm

    grid = [(s, wd) for s in PAIR_BLOCK_SCALES for wd in WEIGHT_DECAYS]
    search: list[dict[str, Any]] = []
    bar = tqdm(total=len(grid) * n_cv + 1, desc="cross-validate head", unit="fit", disable=not progress)
    with bar, _one_torch_thread():
        for step, (scale, wd) in enumerate(grid, start=1):
            per_fold = []
            for k in range(n_cv):
                fit = torch.tensor([f != k for f in cv_folds])
                fit_weights = None if row_weights is None else row_weights[fit]
                w, b = fit_head(x[fit], y[fit], scale, wd, row_weights=fit_weights)
                held_weights = None if row_weights is None else row_weights[~fit]
                per_fold.append(score(x[~fit] @ w + b, y[~fit], held_weights))
                bar.update(1)
            search.append(
                {
                    "pair_block_scale": scale,
                    "weight_decay": wd,
                    **{f"cv_{m}": sum(r[m] for r in per_fold) / n_cv for m in ("accuracy", "macro_f1", "log_loss")},
                }
            )
            if on_step is not None:
                on_step(step, len(grid) + 1)
        best = max(search, key=lambda r: (r["cv_accuracy"], -r["cv_log_loss"]))
        weight, bias = fit_head(x, y, best["pair_block_scale"], best["weight_decay"], row_weights=row_weights)
        bar.update(1)
    if on_step is not None:
        on_step(len(grid) + 1, len(grid) + 1)
    return FittedHead(weight, bias, best, search, n_cv)


def evaluate_holdout(head: FittedHead, x_hold, y_hold, fit_labels: Sequence[int]) -> dict[str, Any]:
    """Held-out accuracy, macro-F1 and log-loss next to the majority class of the fitting part, and the
    confusion counts."""
    from dynaforge.defaults.metrics import accuracy, macro_f1

    hold_logits = x_hold @ head.weight + head.bias
    holdout = score(hold_logits, y_hold)
    label_counts = Counter(fit_labels)
    majority = max(range(len(LABELS)), key=lambda c: (label_counts[c], -c))
    golds = [LABELS[i] for i in y_hold.tolist()]
    baseline = [LABELS[majority]] * len(golds)
    confusion = {gold: {pred: 0 for pred in LABELS} for gold in LABELS}
    for gold, pred in zip(golds, hold_logits.argmax(dim=1).tolist(), strict=True):
        confusion[gold][LABELS[pred]] += 1
    return {
        "n": len(golds),
        **holdout,
        "majority_label": LABELS[majority],
        "majority_baseline_accuracy": accuracy(golds, baseline),
        "majority_baseline_macro_f1": macro_f1(golds, baseline),
        "confusion_gold_to_predicted": confusion,
    }


def write_head(
    out_dir: Path,
    head: FittedHead,
    *,
    selection: str,
    data: dict[str, Any],
    seed: int,
    metrics: dict[str, Any],
    extra: dict[str, Any] | None = None,
) -> None:
    """Write ``head.safetensors`` and ``metadata.json`` (what :func:`dynaforge_nli.model.load` reads)."""
    import torch

    tensors = {
        "weight": head.weight.to(torch.float32).contiguous(),
        "bias": head.bias.to(torch.float32).contiguous(),
    }
    metadata = {
        "format": "dynaforge-nli-head/1",
        "encoder": {
            **encoder_record(),
            "pooling": "mean (attention-mask weighted), L2-normalised",
            "max_length": MAX_LENGTH,
            "embedding_dim": EMBEDDING_DIM,
        },
        "features": {
            "pair_block": "u, v, |u - v|, u * v (u: premise, v: hypothesis)",
            "pair_block_dim": PAIR_BLOCK_DIM,
            "feature_dim": FEATURE_DIM,
        },
        "scalar_features": list(SCALAR_FEATURES),
        "labels": list(LABELS),
        "head": {
            "type": "multinomial logistic regression, p = softmax(features @ weight + bias)",
            "file": HEAD_FILE,
            "optimizer": f"full-batch L-BFGS (strong Wolfe, max_iter {LBFGS_MAX_ITER}, gradient tolerance 1e-6) "
            "on standardised features; "
            "standardisation and pair-block scale folded into weight/bias",
            "pair_block_scale": head.best["pair_block_scale"],
            "weight_decay": head.best["weight_decay"],
            "selection": selection,
            "search": head.search,
        },
        "data": data,
        **(extra or {}),
        "seed": seed,
        "metrics": metrics,
    }
    save_head(out_dir, tensors, format=metadata["format"], file=HEAD_FILE)
    write_json_atomically(out_dir / METADATA_FILE, metadata)


def _summary(holdout: dict[str, Any], head: FittedHead, train_rows: int) -> dict[str, Any]:
    return {
        "holdout_n": holdout["n"],
        "holdout_accuracy": holdout["accuracy"],
        "holdout_macro_f1": holdout["macro_f1"],
        "holdout_log_loss": holdout["log_loss"],
        "majority_baseline_accuracy": holdout["majority_baseline_accuracy"],
        "majority_baseline_macro_f1": holdout["majority_baseline_macro_f1"],
        "cv_accuracy": head.best["cv_accuracy"],
        "pair_block_scale": head.best["pair_block_scale"],
        "weight_decay": head.best["weight_decay"],
        "train_rows": train_rows,
    }


def train(
    data_dir: Path,
    out_dir: Path,
    *,
    progress: bool = True,
    limit: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Train the head, write ``head.safetensors`` + ``metadata.json`` to ``out_dir``; return held-out metrics."""
    import torch

    t0 = time.perf_counter()
    data_path = Path(data_dir) / DATA_FILE
    out_dir = Path(out_dir)
    rows = read_rows(data_path)
    rows_in_file = len(rows)
    rng = random.Random(seed)
    torch.manual_seed(seed)
    if limit is not None:
        if limit < MIN_ROWS:
            raise ValueError(f"limit must be at least {MIN_ROWS}")
        rows = [rows[i] for i in seeded_sample(len(rows), limit, rng)]
    premises = [r[0] for r in rows]
    hypotheses = [r[1] for r in rows]
    labels = [r[2] for r in rows]
    if len(rows) < MIN_ROWS or len(set(premises)) < MIN_PREMISES:
        raise ValueError(
            f"{data_path}: need at least {MIN_ROWS} rows and {MIN_PREMISES} distinct premises to hold some out; "
            f"got {len(rows)} rows and {len(set(premises))} premises"
        )

    folds = group_folds(labels, premises, HOLDOUT_FOLDS, seed)
    train_idx = [i for i, f in enumerate(folds) if f != 0]
    hold_idx = [i for i, f in enumerate(folds) if f == 0]
    n_cv = min(CV_FOLDS, len({premises[i] for i in train_idx}))
    cv_folds = group_folds([labels[i] for i in train_idx], [premises[i] for i in train_idx], n_cv, seed + 1)

    t_embed = time.perf_counter()
    x_all = pair_matrix(premises, hypotheses, progress=progress)
    embed_seconds = time.perf_counter() - t_embed
    y_all = torch.tensor(labels, dtype=torch.long)

    t_fit = time.perf_counter()
    head = select_and_fit(x_all[train_idx], y_all[train_idx], cv_folds, n_cv, progress=progress)
    fit_seconds = time.perf_counter() - t_fit

    holdout = evaluate_holdout(head, x_all[hold_idx], y_all[hold_idx], [labels[i] for i in train_idx])
    write_head(
        out_dir,
        head,
        selection=f"highest mean accuracy over {n_cv} grouped, stratified folds of the training part "
        "(ties: lower log-loss)",
        data={
            "file": DATA_FILE,
            "sha256": file_info(data_path)["sha256"],
            "rows_in_file": rows_in_file,
            "rows_used": len(rows),
            "limit": limit,
            "train_rows": len(train_idx),
            "holdout_rows": len(hold_idx),
            "holdout_rule": HOLDOUT_RULE,
            "premises_in_both_parts": len({premises[i] for i in train_idx} & {premises[i] for i in hold_idx}),
        },
        seed=seed,
        metrics={"holdout": holdout, "cv_best": head.best},
    )
    return {
        **_summary(holdout, head, len(train_idx)),
        "embed_seconds": round(embed_seconds, 1),
        "fit_seconds": round(fit_seconds, 1),
        "total_seconds": round(time.perf_counter() - t0, 1),
    }


# --------------------------------------------------------------------------- the training recipe


def example_rows(examples: Sequence[Mapping[str, Any]]) -> tuple[list[tuple[str, str, int]], int]:
    """``(premise, hypothesis, label index)`` rows of the platform's examples (the task's field values), and how
    many were skipped because a premise or hypothesis is missing or the label is not one of :data:`LABELS`."""
    rows: list[tuple[str, str, int]] = []
    skipped = 0
    for example in examples:
        premise, hypothesis, label = example.get("premise"), example.get("hypothesis"), example.get("label")
        if (
            not isinstance(premise, str)
            or not isinstance(hypothesis, str)
            or not premise.strip()
            or not hypothesis.strip()
            or label not in LABELS
        ):
            skipped += 1
            continue
        rows.append((premise.strip(), hypothesis.strip(), LABELS.index(label)))
    return rows, skipped


def train_recipe(
    data: TrainingData,
    out_dir: Path,
    *,
    seed: int = 0,
    report: Callable[[float, str], None] | None = None,
    progress: bool = False,
    example_weight: float = DEFAULT_EXAMPLE_WEIGHT,
    encoder: str = DEFAULT_ENCODER,
    lora_epochs: int = DEFAULT_LORA_EPOCHS,
    lora_time_limit_s: float = DEFAULT_LORA_TIME_LIMIT_S,
) -> dict[str, Any]:
    """The ``default`` training recipe: the model on the base data (when ``data.base_dir`` is given) and the
    platform's examples; writes ``adapter.safetensors`` (``encoder="lora"``), ``head.safetensors`` and
    ``metadata.json`` to ``out_dir`` and returns held-out metrics.

    ``encoder="frozen"`` fits the logistic-regression head on the frozen encoder's pair features (below).
    ``encoder="lora"`` (the default) then fine-tunes a LoRA adapter on the encoder together with that head, on the
    same fitting rows with the same row weights, starting from the fitted head (:func:`dynaforge.inference.lora.
    fine_tune` with pairs: the premise's and the hypothesis' vectors come from the adapted encoder, the lexical cues
    stay as they are), ``lora_epochs`` passes, stopped after ``lora_time_limit_s`` seconds (the metadata says
    whether it was); the held-out figures are the tuned model's, read through the merged encoder as the model's
    loader reads it.

    With base data, its rows are split as :func:`train` splits them (one premise-grouped fold of five held out) and
    the platform's examples join the fitting part only, each weighing ``example_weight`` against a base row's 1, so
    that the held-out figures stay those of the base data's held-out part. An example whose premise is a held-out
    premise is dropped (counted in ``examples_dropped``): keeping it would put that premise on both sides.

    Without base data, the examples are split alone: one fold of five held out, stratified by label, rows of one
    premise kept together when there are at least :data:`MIN_GROUPED_PREMISES` premises (else row by row, which
    the metadata records). At least :data:`MIN_EXAMPLES` usable examples with two labels are needed.

    The weight decay and pair-block scale are chosen by grouped cross-validation on the fitting part, rows weighted
    as in the fit. Deterministic for a seed; no example text is written.
    """
    import torch

    report = report or no_report
    if example_weight <= 0:
        raise ValueError(f"example_weight must be positive, got {example_weight}")
    check_encoder_options(encoder, lora_epochs, lora_time_limit_s)
    report(0.02, "reading data")
    examples, skipped = example_rows(data.examples)
    torch.manual_seed(seed)
    base_record: dict[str, Any] | None = None
    base_fit: list[tuple[str, str, int]] = []
    base_hold: list[tuple[str, str, int]] = []
    ex_fit: list[tuple[str, str, int]] = []
    ex_hold: list[tuple[str, str, int]] = []
    dropped = 0
    grouped = True
    if data.base_dir is not None:
        data_path = Path(data.base_dir) / DATA_FILE
        base = read_rows(data_path)
        premises = [r[0] for r in base]
        if len(base) < MIN_ROWS or len(set(premises)) < MIN_PREMISES:
            raise ValueError(
                f"{data_path}: need at least {MIN_ROWS} rows and {MIN_PREMISES} distinct premises to hold some "
                f"out; got {len(base)} rows and {len(set(premises))} premises"
            )
        folds = group_folds([r[2] for r in base], premises, HOLDOUT_FOLDS, seed)
        base_fit = [r for r, f in zip(base, folds, strict=True) if f != 0]
        base_hold = [r for r, f in zip(base, folds, strict=True) if f == 0]
        held_premises = {r[0] for r in base_hold}
        ex_fit = [r for r in examples if r[0] not in held_premises]
        dropped = len(examples) - len(ex_fit)
        base_record = {
            "file": DATA_FILE,
            "sha256": file_info(data_path)["sha256"],
            "rows_in_file": len(base),
            "fit_rows": len(base_fit),
            "holdout_rows": len(base_hold),
        }
        holdout_rule = f"{HOLDOUT_RULE} of the base data; platform examples in the fitting part only"
    else:
        labels = {r[2] for r in examples}
        if len(examples) < MIN_EXAMPLES or len(labels) < 2:
            raise ValueError(
                f"without base data the recipe needs at least {MIN_EXAMPLES} usable examples with at least 2 "
                f"different labels, to hold some out; got {len(examples)} examples"
                + (f" ({skipped} more skipped: no premise, no hypothesis or an unknown label)" if skipped else "")
                + f" with {len(labels)} label(s)"
            )
        grouped = len({r[0] for r in examples}) >= MIN_GROUPED_PREMISES
        groups = [r[0] for r in examples] if grouped else [str(i) for i in range(len(examples))]
        folds = group_folds([r[2] for r in examples], groups, HOLDOUT_FOLDS, seed)
        ex_fit = [r for r, f in zip(examples, folds, strict=True) if f != 0]
        ex_hold = [r for r, f in zip(examples, folds, strict=True) if f == 0]
        holdout_rule = "one of 5 folds (20%) of the platform examples, stratified by label, " + (
            "rows of one premise kept on one side"
            if grouped
            else "row by row (fewer than "
            f"{MIN_GROUPED_PREMISES} premises: hypotheses on one premise may sit on both sides)"
        )

    fit_rows, hold_rows = base_fit + ex_fit, base_hold + ex_hold
    fit_groups = [r[0] for r in fit_rows] if grouped else [str(i) for i in range(len(fit_rows))]
    n_cv = min(CV_FOLDS, len(set(fit_groups)))
    if n_cv < 2 or not hold_rows:
        raise ValueError("too little data to cross-validate and hold some out; give more examples or base data")
    cv_folds = group_folds([r[2] for r in fit_rows], fit_groups, n_cv, seed + 1)
    row_weights = None
    if base_fit and ex_fit:
        weights = example_weights(len(base_fit), len(ex_fit), example_weight=example_weight)
        row_weights = torch.tensor(weights, dtype=torch.float64)

    report(0.05, "embedding")
    rows = fit_rows + hold_rows

    embedding = EmbeddingProgress(report, len({t for r in rows for t in r[:2]}), start=0.05, end=0.2)
    x_all = pair_matrix([r[0] for r in rows], [r[1] for r in rows], progress=progress, on_batch=embedding.part())
    y_all = torch.tensor([r[2] for r in rows], dtype=torch.long)
    n_fit = len(fit_rows)
    x_fit, y_fit = x_all[:n_fit], y_all[:n_fit]

    cv_end = 0.9 if encoder == "frozen" else 0.35

    def on_step(done: int, total: int) -> None:
        report(0.2 + (cv_end - 0.2) * done / total, f"cross-validating the head ({done}/{total})")

    report(0.2, "cross-validating the head")
    head = select_and_fit(x_fit, y_fit, cv_folds, n_cv, row_weights=row_weights, progress=progress, on_step=on_step)
    tuned: FineTuned | None = None
    if encoder == "lora":
        report(cv_end, "fine-tuning the encoder")
        tuned, x_all = tune_encoder(
            rows,
            x_fit,
            y_fit,
            head,
            row_weights=row_weights,
            settings=replace(LORA, epochs=lora_epochs, time_limit_s=lora_time_limit_s),
            seed=seed,
            report=report,
            progress=progress,
        )
        x_fit = x_all[:n_fit]
        head = replace(head, weight=tuned.head_weight.T.double(), bias=tuned.head_bias.double())

    report(0.92, "evaluating")
    holdout = evaluate_holdout(head, x_all[n_fit:], y_all[n_fit:], [r[2] for r in fit_rows])
    examples_fit: dict[str, Any] | None = None
    if ex_fit:
        at = len(base_fit)
        examples_fit = score(x_fit[at:] @ head.weight + head.bias, y_fit[at:])
    premises_in_both = len({r[0] for r in fit_rows} & {r[0] for r in hold_rows})
    weighting = (
        f"base rows 1, platform examples {example_weight} (in the fit and in the CV scores)"
        if row_weights is not None
        else "all rows 1"
    )
    report(0.96, "writing the model")
    if tuned is not None:
        save_adapter(Path(out_dir), tuned.adapter)
    write_head(
        Path(out_dir),
        head,
        selection=f"highest mean {'weighted ' if row_weights is not None else ''}accuracy over {n_cv} grouped, "
        "stratified folds of the fitting part (ties: lower log-loss)",
        data={
            "base": base_record,
            "examples": {
                "given": len(data.examples),
                "sha256": data.digest(),
                "sources": [dict(source) for source in data.sources],
                "usable": len(examples),
                "skipped_invalid": skipped,
                "dropped_premise_held_out": dropped,
                "fit": len(ex_fit),
                "holdout": len(ex_hold),
            },
            "fit_rows": n_fit,
            "holdout_rows": len(hold_rows),
            "holdout_source": "base" if base_record else "examples",
            "holdout_rule": holdout_rule,
            "premises_in_both_parts": premises_in_both,
            "row_weights": weighting,
        },
        extra={
            "recipe": {
                "trainer": "dynaforge_nli.train:train_recipe",
                "hyperparameters": {
                    "example_weight": example_weight,
                    "encoder": encoder,
                    "lora_epochs": lora_epochs,
                    "lora_time_limit_s": lora_time_limit_s,
                },
            },
            "encoder_tuning": None if tuned is None else {**tuned.record(), "adapter_file": ADAPTER_FILE},
        },
        seed=seed,
        metrics={"holdout": holdout, "cv_best": head.best, "examples_fit": examples_fit},
    )
    return {
        **_summary(holdout, head, n_fit),
        "holdout_source": "base" if base_record else "examples",
        "base_fit_rows": len(base_fit),
        "examples": len(data.examples),
        "examples_fit": len(ex_fit),
        "examples_holdout": len(ex_hold),
        "examples_skipped": skipped,
        "examples_dropped": dropped,
        "examples_fit_accuracy": None if examples_fit is None else examples_fit["accuracy"],
        "encoder": encoder,
        "lora_steps": None if tuned is None else tuned.steps,
        "lora_stopped_by_time_limit": None if tuned is None else tuned.stopped_early,
    }


def tune_encoder(
    rows: Sequence[tuple[str, str, int]],
    x_fit,
    y_fit,
    head: FittedHead,
    *,
    row_weights,
    settings: FineTuneSettings,
    seed: int,
    report: Callable[[float, str], None],
    progress: bool,
):
    """Fine-tune a LoRA adapter and ``head`` together on the fitting rows (the first ``len(x_fit)`` of ``rows``),
    the lexical cues of ``x_fit`` fixed; then the feature matrix of all ``rows`` through the merged encoder.
    Returns ``(FineTuned, x_all)``."""
    n_fit = len(x_fit)
    fit_rows = rows[:n_fit]
    tuned = fine_tune(
        [r[0] for r in fit_rows],
        y_fit.tolist(),
        second_texts=[r[1] for r in fit_rows],
        extra_features=x_fit[:, PAIR_BLOCK_DIM + 1 :].float(),
        classes=len(LABELS),
        row_weights=None if row_weights is None else row_weights.tolist(),
        head=(head.weight.float(), head.bias.float()),
        settings=settings,
        seed=seed,
        report=lambda fraction, stage: report(0.35 + 0.45 * fraction, stage),
        progress=progress,
    )
    report(0.8, "embedding with the tuned encoder")
    embedding = EmbeddingProgress(report, len({t for r in rows for t in r[:2]}), start=0.8, end=0.9)
    x_all = pair_matrix(
        [r[0] for r in rows],
        [r[1] for r in rows],
        progress=progress,
        on_batch=embedding.part(),
        encoder=tuned.encoder(),
    )
    return tuned, x_all


def main(argv: list[str] | None = None) -> int:
    return training_main(
        train,
        task="nli",
        model=MODEL_NAME,
        description="Train the NLI head on frozen MiniLM features of ANLI round-1 examples.",
        data_help=f"folder with {DATA_FILE}",
        limit_help="seeded subsample of at most N rows (smoke tests)",
        argv=argv,
    )


if __name__ == "__main__":
    raise SystemExit(main())
