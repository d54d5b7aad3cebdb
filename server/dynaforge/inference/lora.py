"""LoRA adapters on the shared MiniLM encoder: fine-tune a model's encoder without shipping a second encoder.

A frozen encoder with a linear head cannot learn what the sentence vectors do not already separate. Fine-tuning the
encoder itself does, and LoRA (Hu et al. 2021, through ``peft``) keeps what a model ships small: a rank-``r``
update ``W + (alpha / r) B A`` of a few attention matrices, a few hundred KB beside the 90 MB encoder every model of
an inference process already shares.

* :func:`fine_tune`: attach an adapter to a trainable copy of the encoder and train adapter and head together on
  texts and targets (binary or k-way, rows weighted), or on text pairs (the head reads the pair's SBERT-style
  features and fixed per-row ones, :func:`pair_block`), with a time limit; deterministic for a seed (the same data,
  seed and machine give the same tensors, bit for bit, unless the time limit stopped the run: the result says so);
* :func:`save_adapter` and :func:`read_adapter`: the adapter as one safetensors file (``adapter.safetensors``), its
  settings and the checksum of the encoder it was trained on in the file's header;
* :func:`adapted_encoder` and :func:`encoder_for`: the adapter merged into the weights it updates, so prediction
  costs exactly what the base encoder costs. The merged encoder shares every tensor it does not change with the
  process's shared encoder (about 7 MB more per adapter on query and value, not 90 MB), and is itself loaded once
  per process.

Training and prediction pool the same way (:func:`~dynaforge.inference.encoders.mean_pool`: attention-mask
weighted mean, L2 normalised), so a head fitted on frozen vectors is a fine starting point for fine-tuning, and a
fine-tuned head reads the merged encoder's vectors exactly as it read them in training. torch, transformers and
peft are imported inside the functions: importing this module costs nothing, and the API process never calls it.
"""

from __future__ import annotations

import copy
import json
import math
import random
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from dynaforge.inference.encoders import Encoder, mean_pool, minilm_path, shared_encoder
from dynaforge.model_store import file_sha256

if TYPE_CHECKING:
    from torch import Tensor

ADAPTER_FILE = "adapter.safetensors"
ADAPTER_FORMAT = "dynaforge-lora/1"
#: A recipe's ``encoder`` hyper-parameter: fine-tune the encoder with an adapter, or keep it frozen.
ENCODER_CHOICES = ("lora", "frozen")

_ADAPTED: dict[tuple[str, str], Encoder] = {}
_ADAPTED_LOCK = threading.Lock()


class AdapterError(ValueError):
    """An adapter file that cannot be applied to the installed encoder; the message says what to do."""


@dataclass(frozen=True)
class LoraSettings:
    """How an adapter is shaped: rank ``rank``, scale ``alpha / rank``, dropout on the adapter's input while
    training, and the names of the linear layers it updates (``query`` and ``value`` of each attention block)."""

    rank: int = 8
    alpha: int = 16
    dropout: float = 0.1
    target_modules: tuple[str, ...] = ("query", "value")

    @property
    def scaling(self) -> float:
        return self.alpha / self.rank


@dataclass(frozen=True)
class FineTuneSettings:
    """How :func:`fine_tune` trains: ``epochs`` over the rows in seeded, length-bucketed batches of
    ``batch_size``; AdamW with ``learning_rate`` for the adapter and ``head_learning_rate`` for the head, linear
    warm-up over ``warmup`` of the steps but at least ``min_warmup_steps``, then linear decay to 0; texts cut at
    ``max_length`` tokens; stopped after ``time_limit_s`` seconds (None: no limit) at the end of the step that
    passes it.

    The warm-up's floor is for small data: Adam's first steps move every weight by about the learning rate whatever
    its gradient, and a run of a few steps at full rate would leave a warm-started head worse than it found it. A
    run shorter than the floor only ever reaches a fraction of the rate, and stays near its starting head."""

    epochs: int = 1
    batch_size: int = 32
    learning_rate: float = 1e-3
    head_learning_rate: float = 1e-3
    weight_decay: float = 0.01
    warmup: float = 0.06
    min_warmup_steps: int = 100
    max_length: int = 64
    time_limit_s: float | None = None
    lora: LoraSettings = field(default_factory=LoraSettings)

    def record(self) -> dict[str, Any]:
        """These settings for a model's metadata."""
        return {
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "learning_rate": self.learning_rate,
            "head_learning_rate": self.head_learning_rate,
            "weight_decay": self.weight_decay,
            "warmup": self.warmup,
            "min_warmup_steps": self.min_warmup_steps,
            "max_length": self.max_length,
            "time_limit_s": self.time_limit_s,
            "lora": {
                "rank": self.lora.rank,
                "alpha": self.lora.alpha,
                "dropout": self.lora.dropout,
                "target_modules": list(self.lora.target_modules),
            },
        }


@dataclass(frozen=True)
class Adapter:
    """A trained adapter: ``tensors`` maps ``<module path>.lora_A`` (``[rank, in]``) and ``.lora_B`` (``[out,
    rank]``) for each updated linear layer of the encoder, float32; ``scaling`` is ``alpha / rank``."""

    tensors: Mapping[str, Tensor]
    rank: int
    alpha: float
    target_modules: tuple[str, ...]
    base_sha256: str

    @property
    def scaling(self) -> float:
        return self.alpha / self.rank

    def modules(self) -> list[str]:
        """The module paths the adapter updates, sorted."""
        return sorted({key.rsplit(".", 1)[0] for key in self.tensors})

    def parameters(self) -> int:
        return sum(int(t.numel()) for t in self.tensors.values())


@dataclass(frozen=True)
class FineTuned:
    """What :func:`fine_tune` returns: the ``adapter``, the head (``head_weight`` ``[outputs, dim]``,
    ``head_bias`` ``[outputs]``, float32; one output for a binary head) and how the run went."""

    adapter: Adapter
    head_weight: Tensor
    head_bias: Tensor
    settings: FineTuneSettings
    steps: int
    planned_steps: int
    seconds: float
    final_loss: float

    @property
    def stopped_early(self) -> bool:
        """Whether the time limit stopped the run before its planned steps (its result then depends on the
        machine's speed, not on the seed alone)."""
        return self.steps < self.planned_steps

    def encoder(self, *, device: str = "cpu") -> Encoder:
        """The merged encoder, built as a model loader builds it (for held-out figures that are the served
        model's)."""
        return merge_adapter(shared_encoder(minilm_path(), device=device), self.adapter)

    def record(self) -> dict[str, Any]:
        """The run for a model's metadata."""
        return {
            "method": "LoRA (peft) on the shared encoder, adapter and head trained together, merged for inference",
            "settings": self.settings.record(),
            "adapter_parameters": self.adapter.parameters(),
            "adapter_modules": len(self.adapter.modules()),
            "steps": self.steps,
            "planned_steps": self.planned_steps,
            "stopped_by_time_limit": self.stopped_early,
            "final_loss": self.final_loss,
        }


def check_encoder_options(encoder: str, lora_epochs: int, lora_time_limit_s: float) -> None:
    """Refuse a recipe's unknown ``encoder`` or a LoRA run that cannot take a step, saying what is accepted."""
    if encoder not in ENCODER_CHOICES:
        raise ValueError(f"encoder must be one of {', '.join(ENCODER_CHOICES)}, not {encoder!r}")
    if lora_epochs < 1:
        raise ValueError(f"lora_epochs must be at least 1, got {lora_epochs!r}")
    if not lora_time_limit_s > 0:
        raise ValueError(f"lora_time_limit_s must be positive, got {lora_time_limit_s!r}")


H = TypeVar("H")


@dataclass(frozen=True)
class Tuned(Generic[H]):
    """A trained model's ``head`` and the encoder it reads: ``encoder`` merged with its adapter, or None when the
    encoder stayed frozen. ``vectors(texts, frozen)`` are the sentence vectors the model reads (float64, cut at
    ``max_length`` tokens): ``frozen`` (the frozen encoder's, already computed) when there is no adapter."""

    head: H
    encoder: Encoder | None = None
    max_length: int = 64

    def vectors(self, texts: Sequence[str], frozen: Tensor) -> Tensor:
        if self.encoder is None:
            return frozen.double()
        return self.encoder.embed_many(list(texts), max_length=self.max_length).double()


# --------------------------------------------------------------------------- the encoder adapters belong to


def base_sha256() -> str:
    """Checksum of the installed encoder's weights (what an adapter records and is checked against)."""
    return file_sha256(minilm_path() / "model.safetensors")


# --------------------------------------------------------------------------- training


def _batches(lengths: Sequence[int], batch_size: int, rng: random.Random) -> list[list[int]]:
    """One epoch's batches: rows shuffled, sorted by length within chunks of 50 batches (little padding), the
    batches shuffled again; seeded by ``rng``."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    chunk = batch_size * 50
    batches: list[list[int]] = []
    for start in range(0, len(order), chunk):
        part = sorted(order[start : start + chunk], key=lengths.__getitem__)
        batches += [part[i : i + batch_size] for i in range(0, len(part), batch_size)]
    rng.shuffle(batches)
    return batches


def _collate(ids: Sequence[Sequence[int]], pad_id: int) -> tuple[Tensor, Tensor]:
    import torch

    width = max(len(row) for row in ids)
    input_ids = torch.full((len(ids), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for i, row in enumerate(ids):
        input_ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    return input_ids, mask


def pair_block(u: Tensor, v: Tensor) -> Tensor:
    """The features of text pairs from their pooled vectors ``u`` and ``v`` (``[n, dim]`` each): ``u, v,
    |u - v|, u * v`` (the InferSent / SBERT pair classifier's block, ``4 * dim`` values) and the cosine ``u . v``
    (one more; the vectors are L2-normalised). What :func:`fine_tune` computes with ``second_texts``."""
    import torch

    return torch.cat([u, v, (u - v).abs(), u * v, (u * v).sum(dim=1, keepdim=True)], dim=1)


def fine_tune(
    texts: Sequence[str],
    targets: Sequence[float] | Sequence[int],
    *,
    second_texts: Sequence[str] | None = None,
    extra_features: Tensor | None = None,
    classes: int | None = None,
    row_weights: Sequence[float] | None = None,
    head: tuple[Tensor, Tensor] | None = None,
    settings: FineTuneSettings | None = None,
    seed: int = 0,
    report: Callable[[float, str], None] | None = None,
    progress: bool = False,
) -> FineTuned:
    """Fine-tune a LoRA adapter on the shared encoder and a linear head on its pooled vectors, together.

    ``targets``: 0/1 (or soft, in [0, 1]) for a binary head (``classes`` None: ``sigmoid(w . e + b)`` is the
    probability of 1) or class indices for a ``classes``-way softmax head. ``row_weights`` weigh each row's loss
    (normalised to mean 1: they set the rows' shares, not the learning rate). ``head``: a starting head, ``(weight,
    bias)`` as ``[dim]`` and scalar (binary) or ``[dim, classes]`` and ``[classes]``, e.g. a logistic regression
    fitted on the frozen vectors; zeros without it.

    Pairs: with ``second_texts`` (one per text) the head reads :func:`pair_block` of the two texts' vectors followed
    by ``extra_features`` (``[n, k]``, fixed per row: cues computed from the texts, say), so ``head`` is
    ``[4 * dim + 1 + k, outputs]``; each distinct text of a batch is encoded once (a text often recurs in several
    pairs).

    ``report(fraction, stage)`` hears the progress now and then (fraction of the planned steps). The encoder's
    dropout and the adapter's are on while training; everything random is drawn from ``seed``.
    """
    import torch
    import torch.nn.functional as F

    try:
        from peft import LoraConfig, get_peft_model
    except ImportError as exc:  # pragma: no cover - the models extra installs it
        raise RuntimeError("fine-tuning the encoder needs peft: pip install 'dynaforge[models]'") from exc

    settings = settings or FineTuneSettings()
    if len(texts) != len(targets) or not texts:
        raise ValueError(
            f"fine_tune needs as many targets as texts, and some texts; got {len(texts)} and {len(targets)}"
        )
    if row_weights is not None and len(row_weights) != len(texts):
        raise ValueError("row_weights needs one weight per text")
    if second_texts is not None and len(second_texts) != len(texts):
        raise ValueError(f"fine_tune pairs {len(texts)} texts with {len(second_texts)} second texts; give one each")
    if extra_features is not None and (second_texts is None or int(extra_features.shape[0]) != len(texts)):
        raise ValueError("extra_features go with second_texts, one row per pair")
    if settings.epochs < 1 or settings.batch_size < 1:
        raise ValueError("epochs and batch_size must be at least 1")
    started = time.perf_counter()
    torch.manual_seed(seed)
    rng = random.Random(seed)

    base = shared_encoder(minilm_path())
    trainable = copy.deepcopy(base.model).to(torch.device("cpu"))
    config = LoraConfig(
        r=settings.lora.rank,
        lora_alpha=settings.lora.alpha,
        lora_dropout=settings.lora.dropout,
        target_modules=list(settings.lora.target_modules),
        bias="none",
    )
    with warnings.catch_warnings():  # peft asks transformers a question transformers has renamed
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        peft_model = get_peft_model(trainable, config)
    dim = base.dim
    if second_texts is not None:
        extra = torch.zeros((len(texts), 0)) if extra_features is None else extra_features.to(torch.float32).cpu()
        dim = 4 * base.dim + 1 + int(extra.shape[1])
    outputs = 1 if classes is None else int(classes)
    linear = torch.nn.Linear(dim, outputs)
    with torch.no_grad():
        if head is None:
            linear.weight.zero_()
            linear.bias.zero_()
        else:
            weight, bias = head
            linear.weight.copy_(weight.to(torch.float32).reshape(dim, outputs).T)
            linear.bias.copy_(bias.to(torch.float32).reshape(outputs))

    # every distinct text tokenized once; a row is one text, or a pair of them
    distinct = list(dict.fromkeys([*texts, *(second_texts or ())]))
    tokens = base.tokenizer(distinct, truncation=True, max_length=settings.max_length)["input_ids"]
    slot = {text: i for i, text in enumerate(distinct)}
    firsts = [slot[t] for t in texts]
    seconds = None if second_texts is None else [slot[t] for t in second_texts]
    lengths = [len(tokens[i]) + (0 if seconds is None else len(tokens[seconds[r]])) for r, i in enumerate(firsts)]
    y = torch.tensor(list(targets), dtype=torch.float32 if classes is None else torch.long)
    if row_weights is None:
        w = torch.ones(len(texts), dtype=torch.float32)
    else:
        w = torch.tensor(list(row_weights), dtype=torch.float32)
        if not bool((w >= 0).all()) or float(w.sum()) <= 0:
            raise ValueError("row_weights must be non-negative with a positive sum")
        w = w * (len(w) / w.sum())
    epochs = [_batches(lengths, settings.batch_size, rng) for _ in range(settings.epochs)]
    planned = sum(len(batches) for batches in epochs)

    adapter_params = [p for p in peft_model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(
        [
            {"params": adapter_params, "lr": settings.learning_rate, "weight_decay": settings.weight_decay},
            {"params": list(linear.parameters()), "lr": settings.head_learning_rate, "weight_decay": 0.0},
        ]
    )
    warmup = max(1, settings.min_warmup_steps, int(settings.warmup * planned))

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (planned - step) / max(1, planned - warmup))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    pad_id = int(base.tokenizer.pad_token_id or 0)
    report = report or (lambda fraction, stage: None)
    every = max(1, planned // 50)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=planned, desc="fine-tune", unit="step")
    peft_model.train()
    steps, loss_value = 0, math.nan
    try:
        for batches in epochs:
            for rows in batches:
                index = torch.tensor(rows)
                if seconds is None:
                    input_ids, mask = _collate([tokens[firsts[i]] for i in rows], pad_id)
                    hidden = peft_model(input_ids=input_ids, attention_mask=mask).last_hidden_state
                    logits = linear(mean_pool(hidden, mask))
                else:
                    needed = list(dict.fromkeys([*(firsts[i] for i in rows), *(seconds[i] for i in rows)]))
                    at = {text: j for j, text in enumerate(needed)}
                    input_ids, mask = _collate([tokens[t] for t in needed], pad_id)
                    hidden = peft_model(input_ids=input_ids, attention_mask=mask).last_hidden_state
                    pooled = mean_pool(hidden, mask)
                    u = pooled[[at[firsts[i]] for i in rows]]
                    v = pooled[[at[seconds[i]] for i in rows]]
                    logits = linear(torch.cat([pair_block(u, v), extra[index]], dim=1))
                if classes is None:
                    losses = F.binary_cross_entropy_with_logits(logits.squeeze(1), y[index], reduction="none")
                else:
                    losses = F.cross_entropy(logits, y[index], reduction="none")
                loss = (losses * w[index]).sum() / len(rows)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                scheduler.step()
                steps += 1
                loss_value = float(loss.detach())
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(loss=f"{loss_value:.3f}", refresh=False)
                if steps % every == 0:
                    report(steps / planned, "fine-tuning")
                limit = settings.time_limit_s
                if limit is not None and time.perf_counter() - started > limit:
                    break
            else:
                continue
            break
    finally:
        if bar is not None:
            bar.close()

    tensors: dict[str, Tensor] = {}
    for name, module in peft_model.named_modules():
        # peft's LoRA layers hold their matrices in ModuleDicts keyed by adapter name
        lora_a: Any = getattr(module, "lora_A", None)
        lora_b: Any = getattr(module, "lora_B", None)
        if not isinstance(lora_a, torch.nn.ModuleDict) or "default" not in lora_a or lora_b is None:
            continue
        path = name.removeprefix("base_model.model.")
        pair: list[tuple[str, Any]] = [("lora_A", lora_a), ("lora_B", lora_b)]
        for key, layers in pair:
            tensors[f"{path}.{key}"] = layers["default"].weight.detach().to(torch.float32).clone().contiguous()
    adapter = Adapter(
        tensors=tensors,
        rank=settings.lora.rank,
        alpha=float(settings.lora.alpha),
        target_modules=tuple(settings.lora.target_modules),
        base_sha256=base_sha256(),
    )
    return FineTuned(
        adapter=adapter,
        head_weight=linear.weight.detach().clone(),
        head_bias=linear.bias.detach().clone(),
        settings=settings,
        steps=steps,
        planned_steps=planned,
        seconds=time.perf_counter() - started,
        final_loss=loss_value,
    )


# --------------------------------------------------------------------------- the adapter file


def save_adapter(out_dir: Path | str, adapter: Adapter, *, file: str = ADAPTER_FILE) -> Path:
    """Write ``adapter`` as safetensors to ``out_dir/file`` (the folder is created); the header's ``format`` entry
    is ``dynaforge-lora/1`` and a JSON object of the rank, alpha, the updated layers and the encoder's checksum.
    The same adapter gives the same bytes. Readable by everyone, like a package's files. Returns the file's
    path."""
    import os

    from safetensors.torch import save_file

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / file
    settings = {
        "rank": adapter.rank,
        "alpha": float(adapter.alpha),
        "target_modules": list(adapter.target_modules),
        "base_model_safetensors_sha256": adapter.base_sha256,
    }
    # one header entry: safetensors writes its header's entries in no fixed order, and the same adapter must give
    # the same bytes (a model store version is a digest)
    header = {"format": ADAPTER_FORMAT + " " + json.dumps(settings, sort_keys=True, separators=(",", ":"))}
    save_file({k: v.contiguous() for k, v in sorted(adapter.tensors.items())}, str(path), metadata=header)
    os.chmod(path, 0o644)  # safetensors creates it owner-only
    return path


def read_adapter(path: Path | str) -> Adapter:
    """The adapter in a file :func:`save_adapter` wrote; :class:`AdapterError` when it is not one."""
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    try:
        with safe_open(str(path), framework="pt") as fh:
            header = fh.metadata() or {}
            tensors = {key: fh.get_tensor(key) for key in fh.keys()}  # noqa: SIM118 - safe_open has no __iter__
    except (OSError, SafetensorError) as exc:
        raise AdapterError(f"{path} is not a readable safetensors file ({exc}); train the model again") from exc
    kind, _, settings = header.get("format", "").partition(" ")
    if kind != ADAPTER_FORMAT:
        raise AdapterError(f"{path} is not a {ADAPTER_FORMAT} adapter (format {kind!r})")
    try:
        values = json.loads(settings)
        return Adapter(
            tensors=tensors,
            rank=int(values["rank"]),
            alpha=float(values["alpha"]),
            target_modules=tuple(values["target_modules"]),
            base_sha256=str(values["base_model_safetensors_sha256"]),
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise AdapterError(f"{path}: incomplete adapter header ({exc}); train the model again") from exc


# --------------------------------------------------------------------------- merging for inference


def merge_adapter(base: Encoder, adapter: Adapter) -> Encoder:
    """A new :class:`Encoder` whose updated layers hold ``W + scaling * B @ A``; every other tensor is the one
    ``base`` holds (not copied). ``base`` is left as it was."""
    import torch

    if adapter.base_sha256 != base_sha256():
        raise AdapterError(
            "the adapter was trained on another version of the encoder "
            f"(model.safetensors sha256 {adapter.base_sha256[:12]}..., installed {base_sha256()[:12]}...); "
            "retrain the model with the installed encoder"
        )
    shared = {id(t): t for t in (*base.model.parameters(), *base.model.buffers())}
    model = copy.deepcopy(base.model, memo=dict(shared))  # a new module tree over the same tensors
    modules = dict(model.named_modules())
    for path in adapter.modules():
        module = modules.get(path)
        a, b = adapter.tensors.get(f"{path}.lora_A"), adapter.tensors.get(f"{path}.lora_B")
        if not isinstance(module, torch.nn.Linear) or a is None or b is None:
            raise AdapterError(f"the adapter updates {path!r}, which the encoder has no linear layer for")
        weight = module.weight
        if tuple(b.shape) != (weight.shape[0], adapter.rank) or tuple(a.shape) != (adapter.rank, weight.shape[1]):
            raise AdapterError(f"the adapter's {path} has shapes {tuple(a.shape)} and {tuple(b.shape)}")
        with torch.no_grad():
            merged = weight + adapter.scaling * (b.to(weight) @ a.to(weight))
        module.weight = torch.nn.Parameter(merged, requires_grad=False)
    model.eval()
    return Encoder.from_model(base, model)


def adapted_encoder(adapter_path: Path | str, *, device: str = "cpu") -> Encoder:
    """The shared encoder with the adapter of ``adapter_path`` merged in; one per adapter file contents and device
    in this process."""
    path = Path(adapter_path)
    key = (file_sha256(path), device)
    with _ADAPTED_LOCK:
        encoder = _ADAPTED.get(key)
        if encoder is None:
            encoder = _ADAPTED[key] = merge_adapter(shared_encoder(minilm_path(), device=device), read_adapter(path))
        return encoder


def encoder_for(weights_dir: Path | str, *, device: str = "cpu") -> Encoder:
    """The encoder a model whose weights are in ``weights_dir`` runs on: the adapted one when the folder holds an
    ``adapter.safetensors``, else the process-wide shared frozen encoder."""
    adapter = Path(weights_dir) / ADAPTER_FILE
    if adapter.is_file():
        return adapted_encoder(adapter, device=device)
    return shared_encoder(minilm_path(), device=device)
