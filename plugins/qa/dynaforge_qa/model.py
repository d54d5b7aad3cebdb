"""Offline target model for the qa task: an extractive span head on the frozen MiniLM encoder.

Pipeline for a batch of ``{"passage", "question"}`` inputs, in one encoder forward pass:

1. the question (cut to ``MAX_QUESTION_CHARS`` characters) and the passage are tokenised as a pair; a passage
   longer than one window is split into overlapping windows (``max_length`` tokens, ``stride`` tokens of
   overlap), every window of every input padded to the longest in the batch;
2. the shared, frozen all-MiniLM-L6-v2 encoder gives the last hidden states ``h`` of every window;
3. per token, the head sees ``[h, h * q, c, m]``: ``q`` the mean state of the window's question tokens, ``c`` the
   token's largest cosine similarity to a question token, ``m`` whether its word piece occurs in the question.
   A linear projection to ``hidden`` units (GELU), one residual 1-D convolution over neighbouring tokens (so a
   token knows whether question words are near it) and a linear layer give a start and an end logit;
4. a span is ``(i, j)`` with ``i <= j < i + max_answer_tokens``, both passage tokens; its score is
   ``start[i] + end[j]``. The best span over all windows of an input wins, and the tokeniser's character offsets
   map it back to the passage, so the answer text always sits at its ``start``.

``confidence`` is ``softmax(start)[i] * softmax(end)[j]`` within the winning window.

The head's weights are a few hundred kilobytes of safetensors (``weights/head.safetensors``) written by
:mod:`dynaforge_qa.train`. torch and transformers are imported lazily inside functions: the API process imports
this package without them.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
HEAD_FILE = "head.safetensors"
METADATA_FILE = "metadata.json"
ENCODER_NAME = "sentence-transformers/all-MiniLM-L6-v2"
EMBEDDING_DIM = 384
DEFAULT_MAX_LENGTH = 384
DEFAULT_STRIDE = 128
MAX_ANSWER_TOKENS = 30
# A word piece covers at least one character, so a question of at most this many characters leaves room for
# more than ``stride`` passage tokens in every window and the tokeniser can always split the passage.
MAX_QUESTION_CHARS = 200
HEAD_PARAMETER_NAMES = ("proj.weight", "proj.bias", "conv.weight", "conv.bias", "out.weight", "out.bias")
NUM_EXTRA_FEATURES = 2  # max cosine to a question token, word piece occurs in the question


def encoder_path() -> Path:
    from dynaforge.inference.encoders import minilm_path

    return minilm_path()


def read_metadata(weights_dir: Path | str | None = None) -> dict[str, Any]:
    with open(Path(weights_dir or WEIGHTS_DIR) / METADATA_FILE, encoding="utf-8") as fh:
        return json.load(fh)


# --------------------------------------------------------------------------- windows


@dataclass
class Windows:
    """The encoded windows of a batch of (question, passage) pairs.

    ``states`` ``[W, T, D]`` token states; ``input_ids``, ``attention`` (real tokens), ``question`` and ``passage``
    (which tokens belong to which text) are ``[W, T]``; ``offsets`` ``[W, T, 2]`` character offsets into the
    passage (meaningful for passage tokens); ``sample`` ``[W]`` the input each window comes from.
    """

    states: Any
    input_ids: Any
    attention: Any
    question: Any
    passage: Any
    offsets: Any
    sample: Any


def encode_windows(encoder, questions: Sequence[str], passages: Sequence[str], *, max_length: int, stride: int) -> Windows:
    """Tokenise the pairs into overlapping passage windows and run the frozen encoder once over all of them."""
    import torch

    questions = [q[:MAX_QUESTION_CHARS] for q in questions]
    enc = encoder.tokenize(
        questions,
        passages,
        max_length=max_length,
        truncation="only_second",
        stride=stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
    )
    n_windows, n_tokens = enc["input_ids"].shape
    sequence_ids = torch.full((n_windows, n_tokens), -1, dtype=torch.long)
    for w in range(n_windows):
        sequence_ids[w] = torch.tensor([-1 if s is None else s for s in enc.sequence_ids(w)])
    states = encoder.token_states(enc).float().cpu()
    return Windows(
        states=states,
        input_ids=enc["input_ids"].cpu(),
        attention=enc["attention_mask"].cpu().bool(),
        question=sequence_ids == 0,
        passage=sequence_ids == 1,
        offsets=enc["offset_mapping"].cpu(),
        sample=enc["overflow_to_sample_mapping"].cpu(),
    )


def question_features(states, input_ids, question):
    """Head inputs that do not depend on its weights: ``(q, c, m)`` as described in the module docstring.

    ``q`` ``[W, D]`` mean question state; ``c`` ``[W, T]`` each token's largest cosine similarity to a question
    token; ``m`` ``[W, T]`` 1.0 where the token's word piece occurs among the question's.
    """
    import torch

    qmask = question.to(states.dtype)
    q = (states * qmask.unsqueeze(-1)).sum(1) / qmask.sum(1, keepdim=True).clamp(min=1.0)
    unit = torch.nn.functional.normalize(states, dim=-1)
    cosine = unit @ unit.transpose(1, 2)
    cosine = cosine.masked_fill(~question.unsqueeze(1), -1.0)
    c = cosine.max(dim=-1).values
    same = (input_ids.unsqueeze(2) == input_ids.unsqueeze(1)) & question.unsqueeze(1)
    m = same.any(dim=-1).to(states.dtype)
    return q, c, m


def head_logits(params: Mapping[str, Any], states, q, c, m, attention, passage, *, dropout: float = 0.0, training: bool = False):
    """Start and end logits ``[W, T]`` each; tokens outside the passage get a large negative logit."""
    import torch
    import torch.nn.functional as F

    features = torch.cat([states, states * q.unsqueeze(1), c.unsqueeze(-1), m.unsqueeze(-1)], dim=-1)
    x = F.gelu(F.linear(features, params["proj.weight"], params["proj.bias"]))
    x = F.dropout(x, dropout, training) * attention.unsqueeze(-1).to(x.dtype)  # padding must not leak into the conv
    kernel = params["conv.weight"].shape[-1]
    y = F.conv1d(x.transpose(1, 2), params["conv.weight"], params["conv.bias"], padding=kernel // 2).transpose(1, 2)
    x = x + F.gelu(y)
    logits = F.linear(F.dropout(x, dropout, training), params["out.weight"], params["out.bias"])
    start, end = logits.unbind(-1)
    outside = ~passage
    return start.masked_fill(outside, -1e4), end.masked_fill(outside, -1e4)


def init_head(hidden: int, kernel: int, seed: int) -> dict[str, Any]:
    """Fresh head parameters (float32, seeded), shaped as ``head_logits`` expects."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    d_in = 2 * EMBEDDING_DIM + NUM_EXTRA_FEATURES

    def uniform(shape, fan_in):
        bound = 1.0 / fan_in**0.5
        return (torch.rand(shape, generator=generator) * 2 - 1) * bound

    return {
        "proj.weight": uniform((hidden, d_in), d_in),
        "proj.bias": torch.zeros(hidden),
        "conv.weight": uniform((hidden, hidden, kernel), hidden * kernel),
        "conv.bias": torch.zeros(hidden),
        "out.weight": uniform((2, hidden), hidden),
        "out.bias": torch.zeros(2),
    }


def best_spans(start, end, passage, max_answer_tokens: int = MAX_ANSWER_TOKENS):
    """Per window, the best span ``(i, j)``, its score ``start[i] + end[j]`` and its confidence.

    Returns tensors ``i, j, score, confidence`` of shape ``[W]``. Valid spans lie in the passage with
    ``i <= j < i + max_answer_tokens``.
    """
    import torch

    n_tokens = start.shape[1]
    scores = start.unsqueeze(2) + end.unsqueeze(1)  # [W, i, j]
    idx = torch.arange(n_tokens)
    band = (idx.unsqueeze(0) >= idx.unsqueeze(1)) & (idx.unsqueeze(0) < idx.unsqueeze(1) + max_answer_tokens)
    valid = band.unsqueeze(0) & passage.unsqueeze(2) & passage.unsqueeze(1)
    scores = scores.masked_fill(~valid, float("-inf"))
    flat = scores.flatten(1).argmax(dim=1)
    i, j = flat // n_tokens, flat % n_tokens
    rows = torch.arange(start.shape[0])
    p_start = torch.softmax(start, dim=1)[rows, i]
    p_end = torch.softmax(end, dim=1)[rows, j]
    return i, j, start[rows, i] + end[rows, j], p_start * p_end


def choose_answers(windows: Windows, start, end, passages: Sequence[str], max_answer_tokens: int = MAX_ANSWER_TOKENS) -> list[dict[str, Any]]:
    """The best span over all windows of each input, as ``{"answer": {"text", "start"}, "confidence"}``."""
    i, j, score, confidence = best_spans(start, end, windows.passage, max_answer_tokens)
    best: dict[int, int] = {}
    for w, s in enumerate(windows.sample.tolist()):
        if s not in best or float(score[w]) > float(score[best[s]]):
            best[s] = w
    outputs = []
    for s, passage in enumerate(passages):
        w = best[s]
        char_start = int(windows.offsets[w, i[w], 0])
        char_end = int(windows.offsets[w, j[w], 1])
        outputs.append(
            {"answer": {"text": passage[char_start:char_end], "start": char_start}, "confidence": float(confidence[w])}
        )
    return outputs


# --------------------------------------------------------------------------- public model


def _pairs(inputs: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    questions, passages = [], []
    for n, item in enumerate(inputs):
        if not isinstance(item, Mapping):
            raise TypeError(f"input {n} must be a dict with 'passage' and 'question', got {type(item).__name__}")
        question, passage = item.get("question"), item.get("passage")
        if not isinstance(question, str) or not question.strip():
            raise ValueError(f"input {n} needs a non-empty string 'question'")
        if not isinstance(passage, str) or not passage.strip():
            raise ValueError(f"input {n} needs a non-empty string 'passage'")
        questions.append(question.strip())
        passages.append(passage)
    return questions, passages


class QAModel:
    """Extractive QA predictor: ``predict([{"passage", "question"}]) -> [{"answer", "confidence"}]``."""

    def __init__(self, encoder, params: dict[str, Any], metadata: dict[str, Any], *, max_length: int, stride: int) -> None:
        if stride >= max_length - MAX_QUESTION_CHARS - 3:
            raise ValueError(
                f"stride {stride} leaves no room for a {MAX_QUESTION_CHARS}-character question in a "
                f"{max_length}-token window; use a smaller stride or a larger max_length"
            )
        self.encoder = encoder
        self.params = params
        self.metadata = metadata
        self.max_length = max_length
        self.stride = stride
        self.max_answer_tokens = int(metadata.get("head", {}).get("max_answer_tokens", MAX_ANSWER_TOKENS))
        self._lock = threading.Lock()

    def length(self, model_input: Mapping[str, Any]) -> int:
        """Cheap token-count estimate (about four characters a token) for grouping requests of similar size."""
        text = f"{model_input.get('question') or ''} {model_input.get('passage') or ''}"
        return len(text) // 4 + 3

    def predict(self, inputs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Answer every input with a span of its passage, all windows of the batch in one forward pass."""
        import torch

        questions, passages = _pairs(inputs)
        if not questions:
            return []
        with self._lock, torch.inference_mode():
            windows = encode_windows(self.encoder, questions, passages, max_length=self.max_length, stride=self.stride)
            q, c, m = question_features(windows.states, windows.input_ids, windows.question)
            start, end = head_logits(self.params, windows.states, q, c, m, windows.attention, windows.passage)
            return choose_answers(windows, start, end, passages, self.max_answer_tokens)

    def __repr__(self) -> str:
        return f"QAModel(encoder={ENCODER_NAME!r}, max_length={self.max_length}, stride={self.stride})"


def load_head(weights_dir: Path | str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The trained head's parameters and its metadata; clear errors when they are missing or malformed."""
    from safetensors.torch import load_file

    wdir = Path(weights_dir) if weights_dir is not None else WEIGHTS_DIR
    head_path = wdir / HEAD_FILE
    if not head_path.is_file():
        raise FileNotFoundError(
            f"no trained QA head at {head_path}; run `dynaforge train qa --data DIR` "
            "(DIR holding squad_v2_dev_sample.json)"
        )
    params = {k: v.float() for k, v in load_file(str(head_path)).items()}
    missing = set(HEAD_PARAMETER_NAMES) - set(params)
    if missing:
        raise ValueError(f"{head_path} lacks the tensors {sorted(missing)}; retrain the head")
    expected_in = 2 * EMBEDDING_DIM + NUM_EXTRA_FEATURES
    if params["proj.weight"].shape[1] != expected_in or params["out.weight"].shape[0] != 2:
        raise ValueError(f"{head_path} has shapes that do not fit a {EMBEDDING_DIM}-dim encoder; retrain the head")
    return params, read_metadata(wdir)


def load(
    *,
    weights_dir: Path | str | None = None,
    max_length: int = DEFAULT_MAX_LENGTH,
    stride: int = DEFAULT_STRIDE,
    device: str = "cpu",
) -> QAModel:
    """Factory for the ``python`` backend: the shared MiniLM encoder and the trained span head."""
    from dynaforge.inference.encoders import shared_encoder

    params, metadata = load_head(weights_dir)
    encoder = shared_encoder(encoder_path(), device=device)
    return QAModel(encoder, params, metadata, max_length=max_length, stride=stride)
