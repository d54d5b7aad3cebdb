"""A kit for the training commands of task plugins (``Task.train``, ``dynaforge train``, ``python -m PKG.train``).

What the bundled trainers share, for any task author to reuse:

* :class:`TrainingData` and :func:`run_recipe`: what a task's :class:`~dynaforge.tasks.base.TrainingRecipe` is
  given (the platform's accepted examples, optionally the plugin's base data folder) and the one path that runs a
  recipe, for training jobs and ``dynaforge train`` alike; :func:`tune_recipe` runs it once per combination of the
  recipe's ``tuning`` values and keeps the most accurate on a development set; :func:`example_weights` weighs the
  platform's examples against the base data;
* :func:`run_training` runs a plugin's ``train(data_dir, out_dir, ...)`` into the model store (or into a folder the
  caller names); :func:`training_main` is the whole ``main()`` of a training script (``--data --out --limit --seed
  --no-progress``, metrics printed as JSON);
* :func:`embed_texts` and :func:`encoder_record`: sentence vectors from the frozen MiniLM encoder that every model of
  an inference process shares, and the record of that encoder for a model's metadata;
* :func:`fine_tune`, :class:`FineTuneSettings`, :class:`LoraSettings`, :func:`save_adapter`, :func:`encoder_for`
  (from :mod:`dynaforge.inference.lora`): fine-tune that encoder itself with a small LoRA adapter and a head, save
  the adapter (``adapter.safetensors``), and, in a model loader, the encoder a weights folder runs on (the adapter
  merged in, or the shared frozen one); :func:`check_encoder_options` and :class:`Tuned` for a recipe's
  ``encoder`` (``lora`` or ``frozen``), ``lora_epochs`` and ``lora_time_limit_s``;
* :func:`fit_logistic_regression`, :func:`choose_weight_decay`, :func:`log_loss`: an L2-regularised logistic
  regression (binary or multinomial) fitted by full-batch L-BFGS on standardised features, the standardisation
  folded into the returned weight and bias, and a weight-decay grid chosen on held-out log-loss;
* :func:`seeded_sample`, :func:`file_info`, :func:`save_head`, :func:`write_json_atomically`: a seeded subset for
  ``--limit``, which data a model was trained on, and writing the head and its metadata;
* :class:`ModelStore`, :func:`resolve_weights` (from :mod:`dynaforge.model_store`): where trained weights go, and
  which weights a model loader reads.

Nothing here imports torch when the module is imported (the API process imports task plugins but never torch);
the functions that need it import it themselves.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynaforge.inference.lora import (
    ADAPTER_FILE,
    ENCODER_CHOICES,
    AdapterError,
    FineTuned,
    FineTuneSettings,
    LoraSettings,
    Tuned,
    check_encoder_options,
    encoder_for,
    fine_tune,
    pair_block,
    read_adapter,
    save_adapter,
)
from dynaforge.model_store import (
    ModelStore,
    ModelVersion,
    ModelWeights,
    file_sha256,
    resolve_weights,
    write_json_atomically,
)

if TYPE_CHECKING:
    from torch import Tensor

__all__ = [
    "ADAPTER_FILE",
    "ENCODER_CHOICES",
    "AdapterError",
    "FineTuneSettings",
    "FineTuned",
    "LoraSettings",
    "Tuned",
    "check_encoder_options",
    "encoder_for",
    "fine_tune",
    "read_adapter",
    "save_adapter",
    "HEAD_FILE",
    "TrainingData",
    "example_weights",
    "read_examples_jsonl",
    "run_recipe",
    "METADATA_FILE",
    "LinearHead",
    "ModelStore",
    "ModelVersion",
    "ModelWeights",
    "TrainFunction",
    "WeightDecaySearch",
    "choose_weight_decay",
    "EmbeddingProgress",
    "embed_texts",
    "encoder_record",
    "file_info",
    "fit_logistic_regression",
    "log_loss",
    "no_report",
    "pair_block",
    "resolve_weights",
    "run_training",
    "save_head",
    "seeded_sample",
    "training_main",
    "tune_recipe",
    "write_json_atomically",
]

HEAD_FILE = "head.safetensors"
METADATA_FILE = "metadata.json"
TRAINING_FILE = "training.json"

#: A plugin's training function: ``train(data_dir, out_dir, *, progress, **options) -> metrics``. It writes the
#: trained artifact (weights and metadata) into ``out_dir`` and returns held-out metrics, JSON-serialisable.
TrainFunction = Callable[..., dict[str, Any]]


# --------------------------------------------------------------------------- recipes: the platform's examples


@dataclass(frozen=True)
class TrainingData:
    """What a training recipe learns from.

    ``examples``: the platform's examples, each the task's field values (context and example fields, with the gold
    target as validated: an owner's correction replaces the annotator's value), in a fixed order. ``sources``: one
    record per data set they came from (``name``, ``id``, ``size``, ``sha256`` of its examples), for the model's
    metadata. ``base_dir``: a folder with the plugin's own base data (the recipe's ``base_data`` says what it holds),
    or None when the recipe is to learn from the examples alone.
    """

    examples: tuple[dict[str, Any], ...] = ()
    sources: tuple[dict[str, Any], ...] = ()
    base_dir: Path | None = None

    def digest(self) -> str:
        """SHA-256 of the examples (canonical JSON, one per line, in order): which data a model was trained on."""
        return examples_digest(self.examples)

    def describe(self) -> dict[str, Any]:
        """The record of this data for a model's metadata (no example text)."""
        return {
            "examples": len(self.examples),
            "examples_sha256": self.digest(),
            "sources": [dict(source) for source in self.sources],
            "base_data": self.base_dir is not None,
        }


def examples_digest(examples: Sequence[Mapping[str, Any]]) -> str:
    """SHA-256 of examples as canonical JSON lines (sorted keys, no spaces), in the order given."""
    import hashlib

    digest = hashlib.sha256()
    for example in examples:
        digest.update(json.dumps(example, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def read_examples_jsonl(path: Path | str) -> list[dict[str, Any]]:
    """Examples from a JSON-lines file: one object per line, either the field values themselves or an export row
    with them under ``fields`` (what ``dynaforge export`` writes in its ``jsonl`` format)."""
    examples = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"{path}:{lineno}: not JSON ({exc})") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{lineno}: expected a JSON object")
            fields = row.get("fields")
            examples.append(dict(fields) if isinstance(fields, dict) else dict(row))
    return examples


def example_weights(n_base: int, n_examples: int, *, example_weight: float) -> list[float]:
    """Row weights for ``n_base`` base rows followed by ``n_examples`` platform examples: each base row weighs 1 and
    each platform example ``example_weight`` (adversarial examples are few beside a base corpus; a weight above 1
    makes them count)."""
    if example_weight <= 0:
        raise ValueError("example_weight must be positive")
    return [1.0] * n_base + [float(example_weight)] * n_examples


#: ``report(fraction, stage)``: a recipe's progress, ``fraction`` in [0, 1].
Reporter = Callable[[float, str], None]


def no_report(fraction: float, stage: str) -> None:
    """A :data:`Reporter` that says nothing (a trainer's default when no one listens)."""
    return None


def run_recipe(
    recipe: Any,
    data: TrainingData,
    out_dir: Path | str,
    *,
    seed: int = 0,
    hyperparameters: Mapping[str, Any] | None = None,
    report: Reporter | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Run a :class:`~dynaforge.tasks.base.TrainingRecipe` into ``out_dir`` (created) and return its metrics.

    The hyper-parameters are checked against the recipe's (``ValueError`` naming each problem). Afterwards
    ``out_dir/training.json`` records the recipe, hyper-parameters, seed, data (counts and hashes, no text) and
    metrics, so that the artifact itself says how it was made. ``report(fraction, stage)`` is called at the start
    and the end besides whatever the trainer reports.
    """
    from dynaforge.defaults.backends.common import import_object

    values, errors = recipe.check_hyperparameters(dict(hyperparameters or {}))
    if errors:
        raise ValueError("; ".join(f"{e.field}: {e.message}" for e in errors))
    if data.base_dir is None and not data.examples:
        raise ValueError("nothing to train on: give examples (data sets) or the base data")
    if data.base_dir is not None and not Path(data.base_dir).is_dir():
        raise ValueError(f"the base data folder {data.base_dir} does not exist")
    report = report or no_report
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report(0.0, "starting")
    trainer = import_object(recipe.trainer)
    metrics = trainer(data, out, seed=seed, report=report, progress=progress, **values)
    record = {
        "format": "dynaforge-training/1",
        "recipe": recipe.name,
        "model": recipe.model,
        "hyperparameters": values,
        "seed": seed,
        "data": data.describe(),
        "metrics": metrics,
    }
    write_json_atomically(out / TRAINING_FILE, record)
    report(1.0, "done")
    return dict(metrics)


def tune_recipe(
    recipe: Any,
    task: Any,
    data: TrainingData,
    dev_examples: Sequence[Mapping[str, Any]],
    out_dir: Path | str,
    *,
    grid: Sequence[Mapping[str, Any]],
    seed: int = 0,
    hyperparameters: Mapping[str, Any] | None = None,
    dev_source: Mapping[str, Any] | None = None,
    report: Reporter | None = None,
) -> dict[str, Any]:
    """Run ``recipe`` once per combination of ``grid`` (each overriding ``hyperparameters``), score each trained
    model on ``dev_examples`` (a development set's field values: accuracy, every target field equal to the gold),
    and keep the most accurate in ``out_dir`` (ties: the earlier combination, the defaults' first in
    :meth:`~dynaforge.tasks.base.TrainingRecipe.tuning_grid`). Each trial is loaded as a served model is, by the
    recipe's ``factory`` with ``weights_dir``. Returns the kept trial's metrics with ``tuning``: the set, each
    trial's hyper-parameters and development accuracy, and the ``chosen`` values; ``training.json`` records it too.
    The development set only chooses: nothing is trained on it."""
    import inspect
    import shutil

    from dynaforge.defaults.backends.common import import_object
    from dynaforge.tasks.fields import Role

    if not grid:
        raise ValueError("tune_recipe needs at least one combination of hyper-parameters")
    if not dev_examples:
        raise ValueError("the development set to tune on has no items")
    report = report or no_report
    out = Path(out_dir)
    trials_root = out.parent / f"{out.name}-trials"
    factory = import_object(recipe.factory)
    if "weights_dir" not in inspect.signature(factory).parameters:
        raise ValueError(
            f"recipe {recipe.name}'s factory {recipe.factory} takes no weights_dir, so its trials cannot be scored; "
            "give it one (TrainingRecipe.tuning says why) or train without tuneOn"
        )
    targets = task.field_names(Role.TARGET)
    rows = [dict(r) for r in dev_examples]
    inputs = [task.build_model_input(*task.split_fields(r)) for r in rows]
    trials: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    n = len(grid)
    for k, combo in enumerate(grid):
        low, high = k / n, (k + 1) / n
        label = ", ".join(f"{name}={value}" for name, value in combo.items()) or "defaults"

        def sub(
            fraction: float, stage: str, low: float = low, high: float = high, label: str = label, k: int = k
        ) -> None:
            report(low + (high - low) * 0.9 * fraction, f"trial {k + 1}/{n} ({label}): {stage}")

        folder = trials_root / f"trial-{k}"
        values = {**(hyperparameters or {}), **combo}
        metrics = run_recipe(recipe, data, folder, seed=seed, hyperparameters=values, report=sub)
        report(low + (high - low) * 0.9, f"trial {k + 1}/{n} ({label}): scoring on the development set")
        model = factory(weights_dir=folder)
        right = 0
        for start in range(0, len(inputs), 64):
            outputs = model.predict(inputs[start : start + 64])
            for gold, output in zip(rows[start : start + 64], outputs, strict=True):
                try:
                    read = task.read_model_output(output)
                except (TypeError, ValueError):
                    continue
                right += all(read.get(name) == gold.get(name) for name in targets)
        trials.append({"hyperparameters": dict(combo), "dev_accuracy": right / len(rows), "dev_n": len(rows)})
        results.append(metrics)
    best = max(range(n), key=lambda i: (trials[i]["dev_accuracy"], -i))
    if out.exists():
        shutil.rmtree(out)
    shutil.move(str(trials_root / f"trial-{best}"), str(out))
    shutil.rmtree(trials_root, ignore_errors=True)
    tuning = {
        "dataset": dict(dev_source) if dev_source else None,
        "metric": "accuracy",
        "trials": trials,
        "chosen": dict(grid[best]),
    }
    record = json.loads((out / TRAINING_FILE).read_text(encoding="utf-8"))
    record["tuning"] = tuning
    write_json_atomically(out / TRAINING_FILE, record)
    report(1.0, "done")
    return {**results[best], "tuning": tuning}


# --------------------------------------------------------------------------- running a trainer


def run_training(
    train: TrainFunction,
    data_dir: Path | str,
    out_dir: Path | str | None = None,
    *,
    task: str,
    model: str,
    progress: bool = True,
    store: ModelStore | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Run ``train(data_dir, folder, progress=..., **options)`` and return its metrics.

    With ``out_dir`` the artifact goes there (the folder is created) and nothing else happens. Without it,
    ``train`` writes into a staging folder of the model store (``store``, default the configured one:
    ``DYNAFORGE_DATA_DIR/models``), which then becomes a new version of ``task``/``model`` and the current one, so
    the model's loader picks it up; the metrics gain ``weights_dir`` and ``weights_version``. A failed training
    leaves nothing behind in the store.
    """
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        return train(Path(data_dir), Path(out_dir), progress=progress, **options)
    store = store or ModelStore.from_settings()
    with store.staging(task, model) as staging:
        metrics = train(Path(data_dir), staging, progress=progress, **options)
        stored = store.add(task, model, staging)
    return {**metrics, "weights_dir": str(stored.path), "weights_version": stored.version}


def training_main(
    train: TrainFunction,
    *,
    task: str,
    model: str,
    description: str,
    data_help: str,
    limit_help: str = "seeded subsample of at most N rows (smoke tests)",
    options: Mapping[str, int | float | str] | None = None,
    argv: Sequence[str] | None = None,
) -> int:
    """The ``main()`` of a plugin's training script (``python -m PKG.train``).

    Arguments: ``--data DIR`` (required), ``--out DIR`` (default: a new version in the model store), ``--limit N``,
    ``--seed S`` (default 0), ``--no-progress``, and one ``--NAME`` per entry of ``options`` (its default value
    gives the type). Hub downloads are off unless the environment turns them on. Prints the metrics as JSON.
    """
    parser = argparse.ArgumentParser(prog=f"python -m {train.__module__}", description=description)
    parser.add_argument("--data", type=Path, required=True, help=data_help)
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"output folder (default: a new version of {task}/{model} in the model store, DYNAFORGE_DATA_DIR/models)",
    )
    parser.add_argument("--limit", type=int, default=None, help=limit_help)
    parser.add_argument("--seed", type=int, default=0)
    for name, value in (options or {}).items():
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, type=type(value), default=value)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    extra = {name: getattr(args, name) for name in options or {}}
    metrics = run_training(
        train,
        args.data,
        args.out,
        task=task,
        model=model,
        progress=not args.no_progress,
        limit=args.limit,
        seed=args.seed,
        **extra,
    )
    json.dump(metrics, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


# --------------------------------------------------------------------------- data and what a trainer writes


def seeded_sample(n: int, limit: int | None, rng: random.Random) -> list[int]:
    """Sorted indices of a seeded random subset of ``limit`` of ``n`` rows; all rows (``rng`` untouched) when
    ``limit`` is None or not smaller than ``n``."""
    if limit is None or limit >= n:
        return list(range(n))
    return sorted(rng.sample(range(n), limit))


def file_info(path: Path) -> dict[str, Any]:
    """Name, size and sha256 of a file, so that a model's metadata says exactly which data it was trained on."""
    path = Path(path)
    return {"file": path.name, "bytes": path.stat().st_size, "sha256": file_sha256(path)}


def save_head(out_dir: Path, tensors: Mapping[str, Tensor], *, format: str, file: str = HEAD_FILE) -> Path:
    """Write ``tensors`` as safetensors to ``out_dir/file`` (the folder is created), recording ``format`` in the
    file's header; readable by everyone like the rest of a package. Returns the file's path."""
    from safetensors.torch import save_file

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / file
    save_file(dict(tensors), str(path), metadata={"format": format})
    os.chmod(path, 0o644)  # safetensors creates it owner-only
    return path


# --------------------------------------------------------------------------- the shared frozen encoder


def embed_texts(
    texts: Sequence[str],
    *,
    max_length: int,
    batch_size: int = 128,
    progress: bool = False,
    desc: str = "embedding",
    device: str = "cpu",
    on_batch: Callable[[int, int], None] | None = None,
) -> Tensor:
    """Mean-pooled, L2-normalised MiniLM vectors ``[n, 384]`` (float32) of ``texts``, in length-sorted batches;
    rows keep the input order. The encoder is the process-wide shared one (what the served models use).
    ``on_batch(done, total)`` hears the texts embedded so far after each batch (for a recipe's ``report``)."""
    from dynaforge.inference.encoders import minilm_path, shared_encoder

    encoder = shared_encoder(minilm_path(), device=device)
    vectors: Tensor = encoder.embed_many(
        texts, max_length=max_length, batch_size=batch_size, progress=progress, desc=desc, on_batch=on_batch
    )
    return vectors


class EmbeddingProgress:
    """A recipe's progress while it embeds, over one or more :func:`embed_texts` calls of ``total`` texts in all:
    ``on_batch=progress.part()`` for each call, and ``report(fraction, "embedding (done/total texts)")`` moves from
    ``start`` to ``end`` as batches finish, so a job's progress never sits still through a long embedding."""

    def __init__(self, report: Callable[[float, str], None], total: int, *, start: float, end: float):
        self.report, self.total, self.start, self.end = report, max(1, total), start, end
        self.done = 0

    def part(self) -> Callable[[int, int], None]:
        offset = self.done

        def on_batch(done: int, of: int) -> None:
            self.done = offset + done
            fraction = self.start + (self.end - self.start) * min(1.0, self.done / self.total)
            self.report(fraction, f"embedding ({self.done}/{self.total} texts)")

        return on_batch


def encoder_record() -> dict[str, Any]:
    """Name, package and weights checksum of the shared MiniLM encoder, for a model's metadata (add how it is
    used: pooling, ``max_length``, ...)."""
    from dynaforge.inference.encoders import MINILM_NAME, MINILM_PACKAGE, minilm_path

    return {
        "name": MINILM_NAME,
        "package": MINILM_PACKAGE,
        "model_safetensors_sha256": file_sha256(minilm_path() / "model.safetensors"),
    }


# --------------------------------------------------------------------------- the logistic head


@dataclass(frozen=True)
class LinearHead:
    """A linear head on raw features: ``logits = x @ weight + bias``.

    Binary: ``weight`` ``[features]``, ``bias`` a scalar, ``p(positive) = sigmoid(logits)``. Multinomial: ``weight``
    ``[features, classes]``, ``bias`` ``[classes]``, ``p = softmax(logits)``. Both float64.
    """

    weight: Tensor
    bias: Tensor

    def logits(self, x: Tensor) -> Tensor:
        return x @ self.weight + self.bias


def fit_logistic_regression(
    x: Tensor,
    y: Tensor,
    *,
    weight_decay: float,
    classes: int | None = None,
    row_weights: Tensor | None = None,
    feature_scale: Tensor | None = None,
    max_iter: int = 500,
    tolerance_grad: float = 1e-6,
    tolerance_change: float = 1e-9,
) -> LinearHead:
    """L2-regularised logistic regression by full-batch L-BFGS (strong Wolfe line search) in float64.

    ``x`` ``[n, features]`` (float64); ``y``: 0/1 floats (binary, ``classes`` None) or class indices (int64,
    ``classes`` = k for a k-way softmax). The features are standardised on ``x`` (mean 0, standard deviation 1;
    constant features are left unscaled), then multiplied by ``feature_scale`` when given (a smaller scale means a
    stronger penalty on those features). The loss is the mean log-loss (weighted by ``row_weights`` when given) plus
    ``weight_decay / 2 * |w|^2``. The standardisation and scale are folded into the returned head, which applies to
    raw features.
    """
    import torch
    import torch.nn.functional as F

    mean = x.mean(dim=0)
    std = x.std(dim=0).nan_to_num(1.0).clamp(min=1e-6)
    if feature_scale is None:
        factor = None
        xs = (x - mean) / std
    else:
        factor = feature_scale.to(x.dtype) / std
        xs = (x - mean) * factor
    features = x.shape[1]
    w = torch.zeros((features, classes) if classes else features, dtype=torch.float64, requires_grad=True)
    b = torch.zeros((classes,) if classes else (), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS(
        [w, b],
        lr=1.0,
        max_iter=max_iter,
        tolerance_grad=tolerance_grad,
        tolerance_change=tolerance_change,
        history_size=20,
        line_search_fn="strong_wolfe",
    )

    def data_loss(logits: Tensor) -> Tensor:
        if row_weights is None:
            return F.cross_entropy(logits, y) if classes else F.binary_cross_entropy_with_logits(logits, y)
        losses = (
            F.cross_entropy(logits, y, reduction="none")
            if classes
            else F.binary_cross_entropy_with_logits(logits, y, reduction="none")
        )
        return (losses * row_weights).sum() / row_weights.sum()

    def closure() -> Tensor:
        opt.zero_grad()
        loss = data_loss(xs @ w + b) + 0.5 * weight_decay * (w * w).sum()
        loss.backward()  # type: ignore[no-untyped-call]
        return loss

    opt.step(closure)  # type: ignore[no-untyped-call]
    w, b = w.detach(), b.detach()
    if factor is not None:
        scale = factor[:, None] if classes else factor
        return LinearHead(w * scale, b - (mean * factor) @ w)
    weight = w / (std[:, None] if classes else std)
    return LinearHead(weight, b - (weight * mean).sum() if not classes else b - mean @ weight)


def log_loss(logits: Tensor, y: Tensor) -> float:
    """Mean log-loss: binary (``logits`` ``[n]``, ``y`` 0/1 floats) or multinomial (``[n, k]``, class indices)."""
    import torch.nn.functional as F

    if logits.dim() == 1:
        return float(F.binary_cross_entropy_with_logits(logits, y))
    return float(F.cross_entropy(logits, y))


def _accuracy(logits: Tensor, y: Tensor) -> float:
    if logits.dim() == 1:
        return float(((logits >= 0).double() == y).double().mean())
    return float((logits.argmax(dim=1) == y).double().mean())


@dataclass(frozen=True)
class WeightDecaySearch:
    """The outcome of :func:`choose_weight_decay`: the chosen head and weight decay, and one record per candidate
    (``weight_decay``, ``holdout_log_loss``, ``holdout_accuracy``) for the model's metadata."""

    head: LinearHead
    weight_decay: float
    search: list[dict[str, float]]


def choose_weight_decay(
    x_fit: Tensor,
    y_fit: Tensor,
    x_holdout: Tensor,
    y_holdout: Tensor,
    weight_decays: Sequence[float],
    **fit_options: Any,
) -> WeightDecaySearch:
    """Fit :func:`fit_logistic_regression` on the fitting part for each weight decay and keep the head with the
    lowest held-out log-loss (the first of equals). ``fit_options`` go to :func:`fit_logistic_regression`."""
    if not weight_decays:
        raise ValueError("weight_decays is empty: give at least one value to try")
    search: list[dict[str, float]] = []
    best: tuple[float, float, LinearHead] | None = None
    for weight_decay in weight_decays:
        head = fit_logistic_regression(x_fit, y_fit, weight_decay=weight_decay, **fit_options)
        logits = head.logits(x_holdout)
        loss = log_loss(logits, y_holdout)
        search.append(
            {"weight_decay": weight_decay, "holdout_log_loss": loss, "holdout_accuracy": _accuracy(logits, y_holdout)}
        )
        if best is None or loss < best[0]:
            best = (loss, weight_decay, head)
    assert best is not None
    return WeightDecaySearch(best[2], best[1], search)
