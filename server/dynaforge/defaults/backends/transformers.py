"""The ``transformers`` backend: sequence classification and extractive question answering from a Hugging Face
model folder (or hub id). torch and transformers are imported when a model loads, never when the backend is
registered."""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dynaforge.defaults.backends.common import estimate_tokens, is_int, is_name, unknown_keys
from dynaforge.hookspecs import hookimpl
from dynaforge.inference.backends import ModelBackend, Predictor
from dynaforge.model_artifacts import ArtifactStore, is_digest

CLASSIFICATION = "sequence-classification"
QUESTION_ANSWERING = "question-answering"
_COMMON_KEYS = {"path", "artifact", "revision", "task", "local_files_only", "target_field", "max_length"}
#: Keys that say where a hub model or a folder comes from: an uploaded artifact is in the model store.
_LOCATION_KEYS = ("revision", "local_files_only")
# A hub id (owner/name) and a commit: what non-admins may name, so that the weights cannot change under a round.
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_TASK_KEYS = {
    CLASSIFICATION: {"label_map", "text_fields"},
    QUESTION_ANSWERING: {"question_field", "context_field", "doc_stride", "max_answer_tokens"},
}
_DEFAULTS = {
    CLASSIFICATION: {"target_field": "label", "max_length": 128},
    QUESTION_ANSWERING: {
        "target_field": "answer",
        "max_length": 384,
        "question_field": "question",
        "context_field": "passage",
        "doc_stride": 128,
        "max_answer_tokens": 30,
    },
}


@dataclass(frozen=True)
class _Source:
    """Where a model is read from: ``path`` for ``from_pretrained``, ``shown`` in errors (an artifact by its digest,
    not by the server's folder), and the keywords every load passes (a hub commit) or the model's weights need (an
    artifact: safetensors only)."""

    path: str
    shown: str
    local_only: bool
    pinned: dict[str, Any] = field(default_factory=dict)
    weights: dict[str, Any] = field(default_factory=dict)


def _source(config: dict[str, Any]) -> _Source:
    if "artifact" in config:
        # The stored copy, hashed again before it is read: what was checked when it was uploaded.
        folder = ArtifactStore.from_settings().folder(config["artifact"])
        return _Source(str(folder), f"artifact {config['artifact'][:12]}", True, weights={"use_safetensors": True})
    pinned = {"revision": config["revision"]} if config.get("revision") else {}
    return _Source(config["path"], repr(config["path"]), bool(config.get("local_files_only", True)), pinned)


def _load_pretrained(loader: Any, source: _Source, what: str, **kwargs: Any) -> Any:
    """``loader.from_pretrained`` without remote code, with an error that says which model failed and how to fix
    it."""
    path = source.path
    try:
        return loader.from_pretrained(
            path, local_files_only=source.local_only, trust_remote_code=False, **source.pinned, **kwargs
        )
    except OSError as exc:
        if not Path(path).expanduser().exists():
            if source.local_only:
                raise FileNotFoundError(
                    f'no model folder at {path!r}, and hub downloads are off: fix "path", or set '
                    '"local_files_only": false in the config to download it as a hub id'
                ) from exc
            raise FileNotFoundError(f"no model folder at {path!r}, and no hub id to download: {exc}") from exc
        raise OSError(f"could not load the {what} from {source.shown}: {exc}") from exc


def _pick_task(config: dict[str, Any], architectures: list[str], shown: str) -> str:
    """The configured task, else the one the saved architecture names (``…ForQuestionAnswering`` or not)."""
    task = config.get("task")
    if task is None:
        is_qa_model = any(a.endswith("ForQuestionAnswering") for a in architectures)
        task = QUESTION_ANSWERING if is_qa_model else CLASSIFICATION
    else:
        expected = "ForQuestionAnswering" if task == QUESTION_ANSWERING else "ForSequenceClassification"
        if architectures and not any(a.endswith(expected) for a in architectures):
            raise ValueError(
                f"the model at {shown} is a {', '.join(architectures)}, not a …{expected} model, so it "
                f'cannot do "task": "{task}"; use a matching model or change "task"'
            )
    other = (_TASK_KEYS[CLASSIFICATION] | _TASK_KEYS[QUESTION_ANSWERING]) - _TASK_KEYS[task]
    misplaced = sorted(other & set(config))
    if misplaced:
        raise ValueError(f"config key(s) {', '.join(misplaced)} do not apply to a {task} model")
    return task


class _TransformersPredictor:
    """What both transformers predictors share: loading, settings with task defaults, one forward at a time."""

    task: str

    def __init__(self, config: dict[str, Any], model_config: Any, auto_model: Any, source: _Source):
        import torch  # lazily: only where inference runs
        from transformers import AutoTokenizer

        self._torch = torch
        self.path: str = source.shown
        self.settings = {**_DEFAULTS[self.task], **config}
        self.tokenizer = _load_pretrained(AutoTokenizer, source, "tokenizer")
        self.model = _load_pretrained(auto_model, source, "model", config=model_config, **source.weights)
        self.model.eval()
        self.target_field: str = self.settings["target_field"]
        self.max_length = int(self.settings["max_length"])
        # Fast tokenizers are not safe to call from two threads at once ("Already borrowed").
        self._lock = threading.Lock()

    def _forward(self, encoded: Any) -> Any:
        """One forward pass over a tokenised batch, without gradients."""
        inputs = {k: encoded[k] for k in self.tokenizer.model_input_names if k in encoded}
        with self._torch.inference_mode():
            return self.model(**inputs)


class TransformersClassifier(_TransformersPredictor):
    """A sequence-classification model; outputs ``{target_field: label, "probabilities": {label: p}}``.

    Model labels (``id2label``) are renamed by ``label_map``; several model labels mapped to one task label share it
    and their probabilities add up (a three-way model serving a two-way task).
    """

    task = CLASSIFICATION

    def __init__(self, config: dict[str, Any], model_config: Any, source: _Source):
        from transformers import AutoModelForSequenceClassification

        super().__init__(config, model_config, AutoModelForSequenceClassification, source)
        self.text_fields: list[str] | None = self.settings.get("text_fields")
        id2label = {int(k): str(v) for k, v in self.model.config.id2label.items()}
        label_map: dict[str, str] = self.settings.get("label_map") or {}
        unknown = sorted(set(label_map) - set(id2label.values()))
        if unknown:
            raise ValueError(
                f"label_map names {', '.join(map(repr, unknown))}, which the model at {self.path} does not have; "
                f"its labels are {', '.join(map(repr, id2label.values()))}"
            )
        self.model_labels = [label_map.get(id2label[i], id2label[i]) for i in range(len(id2label))]
        self.labels = list(dict.fromkeys(self.model_labels))

    def _texts(self, item: dict[str, Any], index: int) -> list[str]:
        if self.text_fields:
            missing = [n for n in self.text_fields if not isinstance(item.get(n), str)]
            if missing:
                raise ValueError(f"input {index} has no text field {missing[0]!r} (text_fields: {self.text_fields})")
            return [item[n] for n in self.text_fields]
        texts = [v for v in item.values() if isinstance(v, str)]
        if not 1 <= len(texts) <= 2:
            raise ValueError(
                f'input {index} has {len(texts)} text fields; set "text_fields" to the one or two fields to encode'
            )
        return texts

    def length(self, model_input: dict[str, Any]) -> int:
        texts = [model_input.get(n) for n in self.text_fields] if self.text_fields else list(model_input.values())
        return min(estimate_tokens(texts), self.max_length)

    def predict(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not inputs:
            return []
        texts = [self._texts(item, i) for i, item in enumerate(inputs)]
        if len({len(t) for t in texts}) > 1:
            raise ValueError('inputs of one batch mix single texts and pairs; set "text_fields"')
        first = [t[0] for t in texts]
        second = [t[1] for t in texts] if len(texts[0]) == 2 else None
        with self._lock:
            encoded = self.tokenizer(
                first, second, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
            )
            probabilities = self._forward(encoded).logits.float().softmax(-1).tolist()
        outputs = []
        for row in probabilities:
            by_label = dict.fromkeys(self.labels, 0.0)
            for label, p in zip(self.model_labels, row, strict=False):
                by_label[label] += p
            outputs.append(
                {self.target_field: max(by_label.items(), key=lambda kv: kv[1])[0], "probabilities": by_label}
            )
        return outputs


def best_spans(
    start_logits: Any, end_logits: Any, context_mask: Any, window_owner: list[int], n_inputs: int, max_tokens: int
) -> list[tuple[int, int, int, float] | None]:
    """The best answer span of each input over all of its windows.

    ``start_logits``/``end_logits``/``context_mask`` are ``[windows, tokens]`` tensors (the mask is true on context
    tokens); ``window_owner[w]`` is the input window ``w`` was cut from. A span starts and ends on context tokens of
    one window, with ``start <= end < start + max_tokens``; it is scored by ``start + end`` logit. Its confidence is
    ``p(start) * p(end)`` under a softmax over the context tokens of all the input's windows. Returns
    ``(window, start_token, end_token, confidence)`` per input, or None for an input without context tokens.
    """
    import torch

    minus_inf = torch.tensor(float("-inf"))
    start = torch.where(context_mask, start_logits.float(), minus_inf)
    end = torch.where(context_mask, end_logits.float(), minus_inf)
    windows, tokens = start.shape
    span = max(1, min(max_tokens, tokens))
    # scores[w, i, d]: start at token i, end at token i + d (ends past the window read -inf padding)
    padded_end = torch.cat([end, minus_inf.expand(windows, span - 1)], dim=1)
    scores = start[:, :, None] + padded_end.unfold(1, span, 1)
    owner = torch.tensor(window_owner)
    results: list[tuple[int, int, int, float] | None] = []
    for k in range(n_inputs):
        rows = (owner == k).nonzero().flatten()
        flat = scores[rows].flatten()
        best = int(flat.argmax()) if flat.numel() else 0
        if not flat.numel() or flat[best] == float("-inf"):
            results.append(None)
            continue
        row, rest = divmod(best, tokens * span)
        first, length = divmod(rest, span)
        log_p = flat[best] - torch.logsumexp(start[rows].flatten(), 0) - torch.logsumexp(end[rows].flatten(), 0)
        results.append((int(rows[row]), first, first + length, float(log_p.exp())))
    return results


class TransformersQuestionAnswerer(_TransformersPredictor):
    """An extractive question-answering model; outputs ``{target_field: {"text", "start"}, "confidence": p}``.

    A long context is cut into windows of ``max_length`` tokens overlapping by ``doc_stride``; all windows of a
    batch go through one forward pass and the best span over an input's windows wins. ``start`` is a character
    offset into the context, so ``context[start:start + len(text)] == text``. An input whose context has no tokens
    gets an empty answer with confidence 0.
    """

    task = QUESTION_ANSWERING

    def __init__(self, config: dict[str, Any], model_config: Any, source: _Source):
        from transformers import AutoModelForQuestionAnswering

        super().__init__(config, model_config, AutoModelForQuestionAnswering, source)
        if not getattr(self.tokenizer, "is_fast", False):
            raise ValueError(
                f"the tokenizer at {self.path} is not a fast tokenizer (no tokenizer.json); question answering "
                "needs character offsets, which only fast tokenizers give"
            )
        self.question_field: str = self.settings["question_field"]
        self.context_field: str = self.settings["context_field"]
        self.doc_stride = int(self.settings["doc_stride"])
        self.max_answer_tokens = int(self.settings["max_answer_tokens"])
        if self.doc_stride >= self.max_length // 2:
            raise ValueError(
                f'"doc_stride" ({self.doc_stride}) must be less than half of "max_length" ({self.max_length}); '
                'lower "doc_stride"'
            )
        special = self.tokenizer.num_special_tokens_to_add(pair=True)
        # A long question is cut so that every window keeps at least half of its non-overlapping room for context.
        self.max_question_tokens = max(1, (self.max_length - special - self.doc_stride) // 2)

    def length(self, model_input: dict[str, Any]) -> int:
        return estimate_tokens([model_input.get(self.question_field), model_input.get(self.context_field)])

    def _fields(self, inputs: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
        for i, item in enumerate(inputs):
            for name in (self.question_field, self.context_field):
                if not isinstance(item.get(name), str):
                    raise ValueError(
                        f"input {i} has no text field {name!r} (question_field: {self.question_field!r}, "
                        f"context_field: {self.context_field!r})"
                    )
        return [item[self.question_field] for item in inputs], [item[self.context_field] for item in inputs]

    def _cut_questions(self, questions: list[str]) -> list[str]:
        """Questions cut to ``max_question_tokens`` (a question longer than a window cannot be encoded)."""
        encoded = self.tokenizer(questions, add_special_tokens=False, return_offsets_mapping=True)
        return [
            q if len(offsets) <= self.max_question_tokens else q[: offsets[self.max_question_tokens - 1][1]]
            for q, offsets in zip(questions, encoded["offset_mapping"], strict=True)
        ]

    def predict(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not inputs:
            return []
        questions, contexts = self._fields(inputs)
        with self._lock:
            encoded = self.tokenizer(
                self._cut_questions(questions),
                contexts,
                truncation="only_second",
                max_length=self.max_length,
                stride=self.doc_stride,
                return_overflowing_tokens=True,
                return_offsets_mapping=True,
                padding=True,
                return_tensors="pt",
            )
            output = self._forward(encoded)
            windows = encoded["input_ids"].shape[0]
            mask = self._torch.tensor(
                [[sid == 1 for sid in encoded.sequence_ids(w)] for w in range(windows)], dtype=self._torch.bool
            )
        offsets = encoded["offset_mapping"].tolist()
        owners = encoded["overflow_to_sample_mapping"].tolist()
        spans = best_spans(output.start_logits, output.end_logits, mask, owners, len(inputs), self.max_answer_tokens)
        return [self._answer(context, offsets, span) for context, span in zip(contexts, spans, strict=True)]

    def _answer(
        self, context: str, offsets: list[list[list[int]]], span: tuple[int, int, int, float] | None
    ) -> dict[str, Any]:
        """The span as text at a character offset, trimmed of surrounding white space."""
        if span is not None:
            window, first, last, confidence = span
            begin, stop = offsets[window][first][0], offsets[window][last][1]
            text = context[begin:stop]
            begin += len(text) - len(text.lstrip())
            text = text.strip()
            if text:
                return {self.target_field: {"text": text, "start": begin}, "confidence": confidence}
        return {self.target_field: {"text": "", "start": 0}, "confidence": 0.0}


class TransformersBackend(ModelBackend):
    """A Hugging Face model folder (or hub id, or uploaded artifact): sequence classification or extractive question
    answering.

    Common config: ``path`` or ``artifact`` (the digest of a model uploaded into the model store), ``task``
    (``"sequence-classification"`` or ``"question-answering"``; default: read from the saved architecture),
    ``target_field``, ``max_length``, ``local_files_only`` (default true: nothing is downloaded unless you ask; an
    artifact is always local, safetensors only). Classification: ``label_map`` (model label -> task label),
    ``text_fields`` (one or a pair). Question answering: ``question_field``, ``context_field``, ``doc_stride``,
    ``max_answer_tokens``.
    """

    name = "transformers"
    description = "Hugging Face transformers sequence classification or extractive question answering."

    config_schema = {
        "type": "object",
        "oneOf": [
            {"required": ["path"]},
            {"required": ["artifact"], "not": {"anyOf": [{"required": [k]} for k in _LOCATION_KEYS]}},
        ],
        "additionalProperties": False,
        "properties": {
            "path": {
                "type": "string",
                "minLength": 1,
                "description": "A hub id (owner/name; with revision) or, for admins, a local model folder.",
            },
            "artifact": {
                "type": "string",
                "pattern": "^[0-9a-f]{64}$",
                "description": "Instead of path: the SHA-256 digest of a model uploaded with uploadModel.",
            },
            "revision": {
                "type": "string",
                "minLength": 1,
                "description": "The hub commit to load (40 hexadecimal characters; required from non-admins).",
            },
            "task": {"enum": [CLASSIFICATION, QUESTION_ANSWERING], "description": "Default: read from the model."},
            "local_files_only": {"type": "boolean", "description": "Local files only (default true: no downloads)."},
            "target_field": {"type": "string", "minLength": 1, "description": "The target field answered."},
            "max_length": {"type": "integer", "minimum": 8, "description": "Tokens per input."},
            "label_map": {
                "type": "object",
                "additionalProperties": {"type": "string", "minLength": 1},
                "description": "Classification: model label -> task label.",
            },
            "text_fields": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "minItems": 1,
                "maxItems": 2,
                "description": "Classification: the one or two fields the model reads.",
            },
            "question_field": {"type": "string", "minLength": 1, "description": "Question answering: the question."},
            "context_field": {"type": "string", "minLength": 1, "description": "Question answering: the passage."},
            "doc_stride": {"type": "integer", "minimum": 0, "description": "Question answering: window overlap."},
            "max_answer_tokens": {"type": "integer", "minimum": 1, "description": "Question answering: answer size."},
        },
    }

    def admin_only(self, config):
        """Non-admins name an uploaded artifact (checked when it was uploaded, and its existence when the model is
        submitted) or a hub model by id and commit: a local folder reads the server's own files, and a branch or tag
        can change the weights under a round that ran against them."""
        if "artifact" in config and "path" not in config:
            return None
        path = config.get("path")
        if not isinstance(path, str) or not _HUB_ID.fullmatch(path) or ".." in path or Path(path).expanduser().exists():
            return '"path" names a folder on the server; model builders name a hub model as owner/name'
        if not isinstance(config.get("revision"), str) or not _COMMIT.fullmatch(config["revision"]):
            return '"revision" must name the hub commit (40 hexadecimal characters) the model is evaluated at'
        return None

    def needs_network(self, config):
        """Only when asked to download (``local_files_only: false``): otherwise every file is read from disk."""
        return config.get("local_files_only", True) is False

    def artifacts(self, config):
        return [config["artifact"]] if "artifact" in config else []

    def check_config(self, config):
        problems = unknown_keys(config, _COMMON_KEYS | _TASK_KEYS[CLASSIFICATION] | _TASK_KEYS[QUESTION_ANSWERING])
        if "artifact" in config:
            if "path" in config:
                problems.append('give "path" or "artifact", not both')
            if not is_digest(config["artifact"]):
                problems.append('"artifact" must be the digest uploadModel gave (64 lowercase hexadecimal digits)')
            misplaced = [k for k in _LOCATION_KEYS if k in config]
            if misplaced:
                problems.append(f"config key(s) {', '.join(misplaced)} do not apply to an uploaded artifact")
        elif not is_name(config.get("path")):
            problems.append('config needs "path": a local model folder or a hub id (or "artifact": an upload)')
        task = config.get("task")
        if task is not None and task not in _TASK_KEYS:
            problems.append(f'"task" must be "{CLASSIFICATION}" or "{QUESTION_ANSWERING}", not {task!r}')
        elif task is not None:
            misplaced = sorted(set(config) & (set().union(*_TASK_KEYS.values()) - _TASK_KEYS[task]))
            if misplaced:
                problems.append(f"config key(s) {', '.join(misplaced)} do not apply to {task}")
        if "revision" in config and not is_name(config["revision"]):
            problems.append('"revision" must be a hub commit (40 hexadecimal characters), a tag or a branch')
        if "local_files_only" in config and not isinstance(config["local_files_only"], bool):
            problems.append('"local_files_only" must be true or false')
        for key in ("target_field", "question_field", "context_field"):
            if key in config and not is_name(config[key]):
                problems.append(f'"{key}" must be a non-empty string (a field name)')
        label_map = config.get("label_map", {})
        if not isinstance(label_map, dict) or not all(is_name(k) and is_name(v) for k, v in label_map.items()):
            problems.append('"label_map" must be an object of model label -> task label strings')
        fields = config.get("text_fields")
        if "text_fields" in config and (
            not isinstance(fields, list) or not 1 <= len(fields) <= 2 or not all(is_name(f) for f in fields)
        ):
            problems.append('"text_fields" must be a list of one or two field names')
        for key, least in (("max_length", 8), ("doc_stride", 0), ("max_answer_tokens", 1)):
            if key in config and (not is_int(config[key]) or config[key] < least):
                problems.append(f'"{key}" must be an integer of at least {least}')
        stride = config.get("doc_stride")
        length = config.get("max_length", _DEFAULTS[QUESTION_ANSWERING]["max_length"])
        if is_int(stride) and is_int(length) and stride >= length // 2:
            problems.append(f'"doc_stride" ({stride}) must be less than half of "max_length" ({length})')
        return problems

    def load(self, config: dict[str, Any]) -> Predictor:
        problems = self.check_config(config)
        if problems:
            raise ValueError("; ".join(problems))
        from transformers import AutoConfig

        source = _source(config)
        model_config = _load_pretrained(AutoConfig, source, "model config")
        task = _pick_task(config, list(getattr(model_config, "architectures", None) or []), source.shown)
        if task == QUESTION_ANSWERING:
            return TransformersQuestionAnswerer(config, model_config, source)
        return TransformersClassifier(config, model_config, source)


@hookimpl(trylast=True)
def register_model_backends(register: Any) -> None:
    register(TransformersBackend())
