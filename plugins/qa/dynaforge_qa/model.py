"""Offline target model for the qa task: an extractive span head on the frozen MiniLM encoder.

Pipeline for a batch of ``{"passage", "question"}`` inputs, in one encoder forward pass:

1. the question (cut to ``MAX_QUESTION_CHARS`` characters) and the passage are tokenised as a pair; a passage
   longer than one window is split into overlapping windows (``max_length`` tokens, ``stride`` tokens of
   overlap), every window of every input padded to the longest in the batch;
2. the shared, frozen all-MiniLM-L6-v2 encoder gives the last hidden states ``h`` of every window;
3. per token, the head sees a low-rank projection (``rank`` dimensions) of ``[h, h * q]``, ``q`` the mean
   state of the window's question tokens, next to the ``TOKEN_FEATURES`` of :func:`token_features` (the token's
   largest cosine similarity to a question token, whether its word piece is a question word, how much of the
   question lies within 3, 8 and 20 tokens and in its sentence, capitals and digits and how they suit the
   question's wh-type, word boundaries). A linear layer to ``hidden`` units (GELU), one residual 1-D
   convolution over neighbouring tokens and a linear layer give a start and an end logit;
4. a span is ``(i, j)`` with ``i <= j < i + MAX_ANSWER_TOKENS``, both passage tokens; its score is
   ``start[i] + end[j] + length_bias[j - i]``; a window also scores "no answer here" from its max-pooled hidden
   units. Each window's best span gets its probability under a softmax over the window's spans and the
   no-answer option; the most probable wins (that probability is the ``confidence``), and the tokeniser's
   character offsets map it back to the passage, so the answer text always sits at its ``start``.

The head's weights are a few hundred kilobytes of safetensors (``weights/head.safetensors``) written by
:mod:`dynaforge_qa.train`. torch and transformers are imported lazily inside functions: the API process imports
this package without them.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TASK_CODE = "qa"
MODEL_NAME = "minilm-qa-span"  # the default target model's name, and its folder in the model store
WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"  # shipped, read-only; training writes to the model store
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
HEAD_PARAMETER_NAMES = (
    "state.weight",
    "proj.weight",
    "proj.bias",
    "conv.weight",
    "conv.bias",
    "out.weight",
    "out.bias",
    "null.weight",
    "null.bias",
    "length.bias",
)


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


def encode_windows(
    encoder, questions: Sequence[str], passages: Sequence[str], *, max_length: int, stride: int
) -> Windows:
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


QUESTION_TYPES = ("how_many", "when", "who", "where", "why", "how", "what", "other")
_QUESTION_TYPE_PATTERNS = tuple(
    (name, re.compile(pattern))
    for name, pattern in (
        ("how_many", r"\bhow (many|much)\b"),
        ("when", r"\bwhen\b|\b(what|which) (year|date|time|day|month|decade|century)\b"),
        ("who", r"\bwho(m|se)?\b"),
        ("where", r"\bwhere\b"),
        ("why", r"\bwhy\b"),
        ("how", r"\bhow\b"),
        ("what", r"\b(what|which)\b"),
    )
)
TOKEN_FEATURES = (
    "max_cosine_to_question",
    "in_question",
    "in_question_rarity",
    "capitalised",
    "has_digit",
    "punctuation",
    "word_start",
    "word_end",
    "sentence_overlap",
    "sentence_overlap_vs_best",
    "sentence_share_of_question",
    "sentence_cosine",
    "sentence_cosine_vs_best",
    "overlap_within_3",
    "overlap_within_8",
    "overlap_within_20",
) + tuple(f"{qtype}_x_{cue}" for qtype in QUESTION_TYPES for cue in ("capitalised", "has_digit"))
_DENSITY_RADII = (3, 8, 20)


def question_type(question: str) -> str:
    """The question's wh-type (the first pattern that matches, in the order of ``QUESTION_TYPES``)."""
    lowered = question.lower()
    return next((name for name, pattern in _QUESTION_TYPE_PATTERNS if pattern.search(lowered)), "other")


def token_features(windows: Windows, questions: Sequence[str], passages: Sequence[str]):
    """Head inputs that do not depend on its weights: the mean question state ``q`` ``[W, D]`` and the
    ``TOKEN_FEATURES`` of every token ``[W, T, F]`` (zero outside the passage).

    They give the head what a frozen sentence encoder's states convey poorly: where the question's words are
    (weighted by their rarity in the window, so that "the" counts little), how well each sentence matches the
    question (word overlap and the cosine of mean token states), the token's surface (capitals and digits, lost by
    the uncased tokeniser; word boundaries), and which surface suits the question's wh-type.
    """
    import torch
    import torch.nn.functional as F

    states, ids, in_q, in_p = windows.states, windows.input_ids, windows.question, windows.passage
    n_windows, n_tokens, _ = states.shape
    qmask = in_q.to(states.dtype)
    q = (states * qmask.unsqueeze(-1)).sum(1) / qmask.sum(1, keepdim=True).clamp(min=1.0)
    unit = F.normalize(states, dim=-1)
    q_unit = F.normalize(q, dim=-1)
    cosine = (unit @ unit.transpose(1, 2)).masked_fill(~in_q.unsqueeze(1), -1.0).max(dim=-1).values

    feats = torch.zeros(n_windows, n_tokens, len(TOKEN_FEATURES))
    column = {name: k for k, name in enumerate(TOKEN_FEATURES)}
    for w in range(n_windows):
        passage, question = passages[int(windows.sample[w])], questions[int(windows.sample[w])]
        offsets = windows.offsets[w].tolist()
        token_ids = ids[w].tolist()
        q_tokens = in_q[w].nonzero().flatten().tolist()
        p_tokens = in_p[w].nonzero().flatten().tolist()
        if not p_tokens:
            continue
        q_words = {
            token_ids[t] for t in q_tokens if any(ch.isalnum() for ch in question[offsets[t][0] : offsets[t][1]])
        }
        counts = Counter(token_ids[t] for t in p_tokens)
        rarity = {u: math.log(1.0 + 1.0 / counts[u]) for u in q_words if u in counts}
        total_rarity = sum(rarity.values()) or 1.0
        qtype = question_type(question)
        sentence_of: list[int] = []
        sentence = 0
        for t in p_tokens:
            a, b = offsets[t]
            text = passage[a:b]
            f = feats[w, t]
            f[column["max_cosine_to_question"]] = cosine[w, t]
            if token_ids[t] in rarity:
                f[column["in_question"]] = 1.0
                f[column["in_question_rarity"]] = rarity[token_ids[t]]
            cap, digit = text[:1].isupper(), any(ch.isdigit() for ch in text)
            f[column["capitalised"]] = float(cap)
            f[column["has_digit"]] = float(digit)
            f[column["punctuation"]] = float(not any(ch.isalnum() for ch in text))
            f[column["word_start"]] = float(a == 0 or not passage[a - 1].isalnum())
            f[column["word_end"]] = float(b >= len(passage) or not passage[b].isalnum())
            f[column[f"{qtype}_x_capitalised"]] = float(cap)
            f[column[f"{qtype}_x_has_digit"]] = float(digit)
            sentence_of.append(sentence)
            if text in (".", "!", "?") and passage[b : b + 1].isspace():
                sentence += 1
        # sentence-level match: rarity-weighted share of the question's words, and cosine of mean states
        n_sentences = sentence_of[-1] + 1
        member = torch.zeros(n_sentences, n_tokens)
        member[torch.tensor(sentence_of), torch.tensor(p_tokens)] = 1.0
        overlap, share = [], []
        for s in range(n_sentences):
            words = {token_ids[t] for t, sid in zip(p_tokens, sentence_of, strict=True) if sid == s} & rarity.keys()
            overlap.append(sum(rarity[u] for u in words) / total_rarity)
            share.append(len(words) / max(1, len(q_words)))
        mean_state = F.normalize(member @ states[w] / member.sum(1, keepdim=True).clamp(min=1.0), dim=-1)
        sentence_cosine = (mean_state @ q_unit[w]).tolist()
        best_overlap, best_cosine = max(overlap) or 1.0, max(sentence_cosine)
        for t, s in zip(p_tokens, sentence_of, strict=True):
            f = feats[w, t]
            f[column["sentence_overlap"]] = overlap[s]
            f[column["sentence_overlap_vs_best"]] = overlap[s] / best_overlap
            f[column["sentence_share_of_question"]] = share[s]
            f[column["sentence_cosine"]] = sentence_cosine[s]
            f[column["sentence_cosine_vs_best"]] = sentence_cosine[s] - best_cosine
        feats[w, :, column["in_question_rarity"]] /= total_rarity
    # how much of the question's (rarity-weighted) words lie within r tokens
    matches = feats[:, :, column["in_question_rarity"]].unsqueeze(1)
    for r in _DENSITY_RADII:
        box = torch.ones(1, 1, 2 * r + 1)
        feats[:, :, column[f"overlap_within_{r}"]] = F.conv1d(matches, box, padding=r).squeeze(1) * in_p
    return q, feats


def head_logits(
    params: Mapping[str, Any],
    states,
    q,
    feats,
    attention,
    passage,
    *,
    dropout: float = 0.0,
    state_dropout: float = 0.0,
    training: bool = False,
):
    """Start and end logits ``[W, T]`` (a large negative logit outside the passage) and the no-answer logit ``[W]``.

    The token states enter through a low-rank bottleneck (``state.weight``, a few dimensions, heavily dropped out
    in training): with a few hundred training questions, a full-width layer over 768 state inputs overfits. The
    no-answer logit reads the window's hidden units, max-pooled over its passage tokens: it is what makes the
    windows of one long passage comparable (a window without the answer should prefer "no answer here").
    """
    import torch
    import torch.nn.functional as F

    state_inputs = F.dropout(torch.cat([states, states * q.unsqueeze(1)], dim=-1), state_dropout, training)
    features = torch.cat([F.linear(state_inputs, params["state.weight"]), feats], dim=-1)
    x = F.gelu(F.linear(features, params["proj.weight"], params["proj.bias"]))
    x = F.dropout(x, dropout, training) * attention.unsqueeze(-1).to(x.dtype)  # padding must not leak into the conv
    kernel = params["conv.weight"].shape[-1]
    y = F.conv1d(x.transpose(1, 2), params["conv.weight"], params["conv.bias"], padding=kernel // 2).transpose(1, 2)
    x = x + F.gelu(y)
    logits = F.linear(F.dropout(x, dropout, training), params["out.weight"], params["out.bias"])
    start, end = logits.unbind(-1)
    outside = ~passage
    pooled = x.masked_fill(outside.unsqueeze(-1), -1e4).max(dim=1).values
    null = F.linear(pooled, params["null.weight"], params["null.bias"]).squeeze(-1)
    return start.masked_fill(outside, -1e4), end.masked_fill(outside, -1e4), null


def init_head(
    *, rank: int, hidden: int, kernel: int, seed: int, max_answer_tokens: int = MAX_ANSWER_TOKENS
) -> dict[str, Any]:
    """Fresh head parameters (float32, seeded), shaped as ``head_logits`` and ``span_scores`` expect."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    d_in = rank + len(TOKEN_FEATURES)

    def uniform(shape, fan_in):
        bound = 1.0 / fan_in**0.5
        return (torch.rand(shape, generator=generator) * 2 - 1) * bound

    return {
        "state.weight": uniform((rank, 2 * EMBEDDING_DIM), 2 * EMBEDDING_DIM),
        "proj.weight": uniform((hidden, d_in), d_in),
        "proj.bias": torch.zeros(hidden),
        "conv.weight": uniform((hidden, hidden, kernel), hidden * kernel),
        "conv.bias": torch.zeros(hidden),
        "out.weight": uniform((2, hidden), hidden),
        "out.bias": torch.zeros(2),
        "null.weight": uniform((1, hidden), hidden),
        "null.bias": torch.zeros(1),
        "length.bias": torch.zeros(max_answer_tokens),
    }


def span_scores(start, end, passage, length_bias):
    """Scores ``[W, i, j]`` of every span: ``start[i] + end[j] + length_bias[j - i]``; -inf where invalid.

    A span is valid when both ends are passage tokens and ``0 <= j - i < len(length_bias)``.
    """
    import torch

    n_tokens, max_len = start.shape[1], length_bias.shape[0]
    idx = torch.arange(n_tokens)
    width = idx.unsqueeze(0) - idx.unsqueeze(1)  # [i, j] -> j - i
    band = (width >= 0) & (width < max_len)
    bias = length_bias[width.clamp(0, max_len - 1)].masked_fill(~band, 0.0)
    valid = band.unsqueeze(0) & passage.unsqueeze(2) & passage.unsqueeze(1)
    scores = start.unsqueeze(2) + end.unsqueeze(1) + bias.unsqueeze(0)
    return scores.masked_fill(~valid, float("-inf"))


def best_spans(start, end, null, passage, length_bias):
    """Per window, the best span ``(i, j)`` and its probability under a softmax over the window's valid spans and
    the no-answer option. Returns tensors ``i, j, confidence`` of shape ``[W]``."""
    import torch

    n_tokens = start.shape[1]
    scores = torch.cat([span_scores(start, end, passage, length_bias).flatten(1), null.unsqueeze(1)], dim=1)
    best = scores[:, :-1].argmax(dim=1)
    confidence = torch.softmax(scores, dim=1)[torch.arange(start.shape[0]), best]
    return best // n_tokens, best % n_tokens, confidence


def choose_answers(windows: Windows, start, end, null, passages: Sequence[str], length_bias) -> list[dict[str, Any]]:
    """Each input's answer: the best span of the window most confident in its best span, as
    ``{"answer": {"text", "start"}, "confidence"}``."""
    i, j, confidence = best_spans(start, end, null, windows.passage, length_bias)
    best: dict[int, int] = {}
    for w, s in enumerate(windows.sample.tolist()):
        if s not in best or float(confidence[w]) > float(confidence[best[s]]):
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

    def __init__(
        self, encoder, params: dict[str, Any], metadata: dict[str, Any], *, max_length: int, stride: int
    ) -> None:
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
            q, feats = token_features(windows, questions, passages)
            start, end, null = head_logits(self.params, windows.states, q, feats, windows.attention, windows.passage)
            return choose_answers(windows, start, end, null, passages, self.params["length.bias"])

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
    rank = params["state.weight"].shape[0]
    if (
        params["state.weight"].shape[1] != 2 * EMBEDDING_DIM
        or params["proj.weight"].shape[1] != rank + len(TOKEN_FEATURES)
        or params["out.weight"].shape[0] != 2
    ):
        raise ValueError(
            f"{head_path} does not fit this model ({EMBEDDING_DIM}-dim encoder, {len(TOKEN_FEATURES)} token "
            "features); retrain the head"
        )
    return params, read_metadata(wdir)


def load(
    *,
    weights_dir: Path | str | None = None,
    weights_artifact: str | None = None,
    max_length: int = DEFAULT_MAX_LENGTH,
    stride: int = DEFAULT_STRIDE,
    device: str = "cpu",
) -> QAModel:
    """Factory for the ``python`` backend: the shared MiniLM encoder and the trained span head.

    ``weights_dir`` defaults to the artifact ``weights_artifact`` of the model store (a digest: what a training
    recipe wrote, stored with ``ArtifactStore.add_folder``), else the model store's current version of this model
    (what ``dynaforge train qa`` wrote), else the package's own ``weights/``; ``metadata["weights"]`` says which
    was loaded.
    """
    from dynaforge.inference.encoders import shared_encoder
    from dynaforge.model_store import resolve_weights

    weights = resolve_weights(
        TASK_CODE, MODEL_NAME, WEIGHTS_DIR, weights_dir=weights_dir, weights_artifact=weights_artifact
    )
    params, metadata = load_head(weights.path)
    metadata = {**metadata, "weights": weights.describe()}
    encoder = shared_encoder(encoder_path(), device=device)
    return QAModel(encoder, params, metadata, max_length=max_length, stride=stride)
