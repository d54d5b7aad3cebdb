"""A model for the browser tests and the Python client's tests: a tiny randomly initialised BERT classifier with the
given labels and its tokenizer, saved as a model builder saves one (safetensors weights), as a folder or archived as
.tar.gz.

    python tiny_model.py OUT.tar.gz positive negative neutral
    python tiny_model.py OUT-FOLDER negative positive
"""

from __future__ import annotations

import sys
import tarfile
import tempfile
from pathlib import Path

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "film", "the", "a", "day", "i", "love"]


def save(folder: Path, labels: list[str]) -> None:
    """The model and its tokenizer, written to ``folder``."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    torch.manual_seed(0)
    id2label = dict(enumerate(labels))
    config = BertConfig(
        vocab_size=len(VOCAB),
        id2label=id2label,
        label2id={label: i for i, label in id2label.items()},
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
    )
    BertForSequenceClassification(config).save_pretrained(folder, safe_serialization=True)
    BertTokenizer(vocab={word: i for i, word in enumerate(VOCAB)}).save_pretrained(folder)


def main(out: Path, labels: list[str]) -> None:
    if not out.name.endswith(".tar.gz"):
        save(out, labels)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "tiny-bert"
        save(folder, labels)
        with tarfile.open(out, "w:gz") as archive:
            archive.add(folder, arcname="tiny-bert")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:] or ["positive", "negative", "neutral"])
