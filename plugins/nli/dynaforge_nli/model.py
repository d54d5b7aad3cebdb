"""Offline target model for the NLI task: a linear head on MiniLM sentence-pair features.

The encoder is the process-wide shared all-MiniLM-L6-v2 (mean pooling + L2 norm, see
``dynaforge.inference.encoders``), with a LoRA adapter merged in when the weights folder holds one
(``adapter.safetensors``, what the training recipe's ``encoder="lora"`` writes; ``dynaforge.inference.lora``);
the shipped weights are a head on the frozen encoder, trained by :mod:`dynaforge_nli.train`.

Features of a (premise, hypothesis) pair, in this order:

1. sentence-pair block (``4 * 384`` values): ``u, v, |u - v|, u * v`` where ``u`` and ``v`` are the pooled
   embeddings of the premise and of the hypothesis (the InferSent / SBERT classification recipe);
2. scalar block: the cosine ``u . v`` followed by cheap lexical cues (:data:`LEXICAL_FEATURES`): how much of the
   hypothesis is copied from the premise, negations the premise lacks, numbers and names it does not mention,
   lengths and quantifiers. On adversarial NLI these cues carry as much signal as the embeddings.

Head: multinomial logistic regression ``softmax(features @ weight + bias)`` over
(entailment, neutral, contradiction). The feature standardisation used in training is folded into ``weight`` and
``bias``, so the stored head is just a ``[D, 3]`` matrix and a ``[3]`` vector.

A batch is embedded in one forward pass: its premises and hypotheses, de-duplicated (annotators write several
hypotheses for the same premise), are padded to the longest and truncated at :data:`MAX_LENGTH` tokens.

torch and transformers are imported lazily inside functions: the API process imports this package without them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

LABELS: tuple[str, str, str] = ("entailment", "neutral", "contradiction")
TASK_CODE = "nli"
MODEL_NAME = "minilm-nli"  # the default target model's name, and its folder in the model store
WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"  # shipped, read-only; training writes to the model store
HEAD_FILE = "head.safetensors"
METADATA_FILE = "metadata.json"
MAX_LENGTH = 256
EMBEDDING_DIM = 384
ENCODER_NAME = "sentence-transformers/all-MiniLM-L6-v2"

LEXICAL_FEATURES: tuple[str, ...] = (
    "content_overlap",  # share of the hypothesis' content words that occur in the premise
    "word_overlap",  # share of all hypothesis words that occur in the premise
    "bigram_overlap",  # share of hypothesis word bigrams that occur in the premise
    "hypothesis_negations",  # number of negation words in the hypothesis
    "premise_has_negation",  # 1 when the premise has a negation word
    "new_negation",  # 1 when the hypothesis says not/never and the premise does not
    "new_number_share",  # share of the hypothesis' numbers absent from the premise
    "hypothesis_has_number",
    "new_name_share",  # share of the hypothesis' capitalised words (after the first) absent from the premise
    "hypothesis_has_name",
    "hypothesis_log_words",
    "premise_log_words",
    "log_length_ratio",  # log((1 + hypothesis words) / (1 + premise words))
    "quantifiers",  # words like only, all, every, first, more, before in the hypothesis
)
SCALAR_FEATURES: tuple[str, ...] = ("cosine",) + LEXICAL_FEATURES
PAIR_BLOCK_DIM = 4 * EMBEDDING_DIM
FEATURE_DIM = PAIR_BLOCK_DIM + len(SCALAR_FEATURES)

_WORD = re.compile(r"[a-z0-9]+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_CAPITALISED = re.compile(r"\b[A-Z][a-zA-Z]+")
_NEGATIONS = frozenset(
    ["no", "not", "never", "none", "nobody", "nothing", "neither", "nor", "without", "cannot", "nowhere"]
)
_STRONG_NEGATIONS = frozenset(("not", "never", "no"))
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "and",
        "or",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "by",
        "with",
        "as",
        "from",
        "that",
        "this",
        "these",
        "those",
        "it",
        "its",
        "his",
        "her",
        "their",
        "he",
        "she",
        "they",
        "them",
        "which",
        "who",
        "whom",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
    ]
)
_QUANTIFIERS = frozenset(
    [
        "only",
        "all",
        "every",
        "always",
        "first",
        "last",
        "most",
        "least",
        "more",
        "less",
        "before",
        "after",
        "many",
        "few",
        "several",
    ]
)


# --------------------------------------------------------------------------
# Pure-Python helpers (no torch), shared with the training script.
# --------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    """Lower-cased word tokens; "n't" becomes "not" so that negations are seen as words."""
    text = text.lower().replace("\u2019", "'").replace("n't", " not").replace("cannot", "can not")
    return _WORD.findall(text)


def lexical_features(premise: str, hypothesis: str) -> list[float]:
    """The :data:`LEXICAL_FEATURES` of a pair, in order (pure Python, no model needed)."""
    p_words, h_words = _words(premise), _words(hypothesis)
    p_set = set(p_words)
    h_content = [w for w in h_words if w not in _STOPWORDS] or h_words
    p_bigrams = set(pairwise(p_words))
    h_bigrams = list(pairwise(h_words))
    p_numbers, h_numbers = set(_NUMBER.findall(premise)), set(_NUMBER.findall(hypothesis))
    names = _CAPITALISED.findall(hypothesis)[1:]  # the first capitalised word may just start the sentence
    premise_lower = premise.lower()
    return [
        sum(w in p_set for w in h_content) / max(1, len(h_content)),
        sum(w in p_set for w in h_words) / max(1, len(h_words)),
        sum(b in p_bigrams for b in h_bigrams) / max(1, len(h_bigrams)),
        float(sum(w in _NEGATIONS for w in h_words)),
        float(any(w in _NEGATIONS for w in p_words)),
        float(any(w in _STRONG_NEGATIONS for w in h_words) and not any(w in _STRONG_NEGATIONS for w in p_words)),
        len(h_numbers - p_numbers) / max(1, len(h_numbers)),
        float(bool(h_numbers)),
        sum(n.lower() not in premise_lower for n in names) / max(1, len(names)),
        float(bool(names)),
        math.log1p(len(h_words)),
        math.log1p(len(p_words)),
        math.log((1 + len(h_words)) / (1 + len(p_words))),
        float(sum(w in _QUANTIFIERS for w in h_words)),
    ]


def read_pairs(inputs: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """Premises and hypotheses of a batch of model inputs; a clear error names the first bad item."""
    premises: list[str] = []
    hypotheses: list[str] = []
    for i, item in enumerate(inputs):
        if not isinstance(item, Mapping):
            raise TypeError(f"input {i} must be a dict with 'premise' and 'hypothesis', got {type(item).__name__}")
        premise, hypothesis = item.get("premise"), item.get("hypothesis")
        if not isinstance(premise, str) or not isinstance(hypothesis, str):
            raise ValueError(f"input {i} needs string values for both 'premise' and 'hypothesis'")
        premises.append(premise)
        hypotheses.append(hypothesis)
    return premises, hypotheses


def read_metadata(weights_dir: Path | str | None = None) -> dict[str, Any]:
    """The ``metadata.json`` written next to a trained head."""
    path = Path(weights_dir or WEIGHTS_DIR) / METADATA_FILE
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


# --------------------------------------------------------------------------
# Features (torch, lazily imported)
# --------------------------------------------------------------------------


def shared_minilm(device: str = "cpu"):
    """The process-wide MiniLM encoder (shared with the other tasks' models in this process)."""
    from dynaforge.inference.encoders import minilm_path, shared_encoder

    return shared_encoder(minilm_path(), device=device)


def pair_features(u, v, premises: Sequence[str], hypotheses: Sequence[str]):
    """Feature matrix ``[n, FEATURE_DIM]`` (float32) from the pooled embeddings ``u`` (premises) and ``v``."""
    import torch

    from dynaforge.inference.lora import pair_block

    lexical = torch.tensor(
        [lexical_features(p, h) for p, h in zip(premises, hypotheses, strict=True)], dtype=torch.float32
    )
    lexical = lexical.reshape(len(premises), len(LEXICAL_FEATURES)).to(u.device)
    return torch.cat([pair_block(u, v), lexical.to(u.dtype)], dim=1)  # the block ends with the cosine


def embed_pairs(
    encoder,
    premises: Sequence[str],
    hypotheses: Sequence[str],
    *,
    many: bool = False,
    progress: bool = False,
    on_batch: Callable[[int, int], None] | None = None,
):
    """Pooled embeddings ``(u, v)`` of premises and hypotheses; each distinct text is encoded once.

    ``many=False`` (serving) encodes the whole batch in one forward pass; ``many=True`` (training) encodes
    length-sorted batches with an optional progress bar, and ``on_batch(done, total)`` after each batch.
    """
    texts = list(dict.fromkeys([*premises, *hypotheses]))
    if many:
        emb = encoder.embed_many(
            texts, max_length=MAX_LENGTH, progress=progress, desc="embed premises+hypotheses", on_batch=on_batch
        )
    else:
        emb = encoder.embed(texts, max_length=MAX_LENGTH)
    row = {text: i for i, text in enumerate(texts)}
    u = emb[[row[p] for p in premises]]
    v = emb[[row[h] for h in hypotheses]]
    return u, v


# --------------------------------------------------------------------------
# Public model
# --------------------------------------------------------------------------


class NLIModel:
    """Three-way NLI predictor: ``predict([{"premise", "hypothesis"}, ...])`` -> label and probabilities."""

    labels = LABELS

    def __init__(self, encoder, weight, bias, metadata: dict[str, Any]) -> None:
        self.encoder = encoder
        self.weight = weight  # torch float32 [FEATURE_DIM, 3]
        self.bias = bias  # torch float32 [3]
        self.metadata = metadata

    def probabilities(self, premises: Sequence[str], hypotheses: Sequence[str]):
        """Softmax probabilities ``[n, 3]`` in :data:`LABELS` order, from one encoder forward pass."""
        import torch

        if not premises:
            return torch.empty((0, len(LABELS)))
        with torch.inference_mode():
            u, v = embed_pairs(self.encoder, premises, hypotheses)
            logits = pair_features(u, v, premises, hypotheses) @ self.weight + self.bias
            return torch.softmax(logits, dim=1).cpu()

    def predict(self, inputs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """``[{"premise": str, "hypothesis": str}, ...]`` -> ``[{"label", "probabilities"}, ...]``."""
        premises, hypotheses = read_pairs(inputs)
        outputs = []
        for row in self.probabilities(premises, hypotheses).tolist():
            best = max(range(len(LABELS)), key=row.__getitem__)
            outputs.append({"label": LABELS[best], "probabilities": dict(zip(LABELS, row, strict=True))})
        return outputs

    def length(self, model_input: Mapping[str, Any]) -> int:
        """Rough token count of an input (about four characters a token), for grouping similar lengths."""
        chars = sum(len(str(model_input.get(name) or "")) for name in ("premise", "hypothesis"))
        return chars // 4 + 3

    def __repr__(self) -> str:
        return f"NLIModel(encoder={ENCODER_NAME!r}, max_length={MAX_LENGTH}, features={FEATURE_DIM})"


def load(
    *,
    weights_dir: Path | str | None = None,
    weights_artifact: str | None = None,
    device: str = "cpu",
) -> NLIModel:
    """Load the encoder (with the weights' LoRA adapter merged in, when they have one) and the trained head.

    ``weights_dir`` defaults to the artifact ``weights_artifact`` of the model store (a digest: what a training
    recipe wrote, stored with ``ArtifactStore.add_folder``), else the model store's current version of this model
    (what ``dynaforge train nli`` wrote), else the package's own ``weights/``; ``metadata["weights"]`` says which
    was loaded.
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
        raise FileNotFoundError(
            f"no trained NLI head at {head_path}; run `dynaforge train nli --data DIR` "
            "(DIR holding anli_r1_dev_annotated.csv)"
        )
    metadata = {**read_metadata(wdir), "weights": weights.describe()}
    if tuple(metadata.get("labels", ())) != LABELS:
        raise ValueError(f"{wdir / METADATA_FILE}: labels {metadata.get('labels')} are not {list(LABELS)}")
    if tuple(metadata.get("scalar_features", ())) != SCALAR_FEATURES:
        raise ValueError(
            f"{wdir / METADATA_FILE}: the head was trained on other lexical features; retrain it with "
            "`dynaforge train nli --data DIR`"
        )
    tensors = load_file(str(head_path))
    weight = tensors["weight"].to(torch.float32)
    bias = tensors["bias"].to(torch.float32).reshape(-1)
    if tuple(weight.shape) != (FEATURE_DIM, len(LABELS)) or bias.numel() != len(LABELS):
        raise ValueError(
            f"bad head shapes in {head_path}: weight {tuple(weight.shape)} (want {(FEATURE_DIM, len(LABELS))}), "
            f"bias {tuple(bias.shape)}"
        )
    from dynaforge.inference.lora import encoder_for

    encoder = encoder_for(wdir, device=device)  # with the weights' LoRA adapter merged in, when they have one
    return NLIModel(encoder, weight.to(encoder.device), bias.to(encoder.device), metadata)
