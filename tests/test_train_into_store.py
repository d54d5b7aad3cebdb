"""`dynaforge train` writes trained weights into the model store, never into the plugin's package, and the plugin's
model loader then reads them (saying so), falling back to the shipped weights when the store has none.

The sentiment plugin is trained on a small data set written here (project sentences, the SST-2 file format) with
the real encoder and a LoRA adapter of a few steps, so this is an end-to-end test; it takes seconds."""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("dynaforge_sentiment")
pytest.importorskip("torch")

from dynaforge.cli import main  # noqa: E402
from dynaforge.model_store import ModelStore  # noqa: E402

pytestmark = pytest.mark.e2e

GOOD = ("a delight", "wonderful", "a real pleasure", "charming from start to finish", "better than I hoped")
BAD = ("a chore", "dreadful", "a waste of an evening", "dull from start to finish", "worse than I feared")
THINGS = ("The soup", "The concert", "Our hotel", "The train ride", "That novel", "The new cafe")


def write_sentiment_data(folder: Path) -> Path:
    """sst2_train.tsv (45 rows) and sst2_dev.tsv (15 rows): ``sentence<TAB>label``, 1 positive, 0 negative."""
    rows = [
        (f"{thing} was {phrase}.", label)
        for (phrase_set, label), thing in itertools.product(((GOOD, 1), (BAD, 0)), THINGS)
        for phrase in phrase_set
    ]
    train, dev = rows[::4] + rows[1::4] + rows[2::4], rows[3::4]
    folder.mkdir(parents=True)
    for name, part in (("sst2_train.tsv", train), ("sst2_dev.tsv", dev)):
        lines = ["sentence\tlabel", *(f"{text}\t{label}" for text, label in part)]
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (bytecode caches aside) with the sha256 of its bytes."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.fixture
def one_torch_thread():
    """The head's matrices are tiny: synchronising torch's threads costs more than it saves on a busy machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_train_writes_a_store_version_and_the_loader_uses_it(tmp_path, monkeypatch, one_torch_thread):
    from dynaforge_sentiment import model as sentiment_model

    package = Path(sentiment_model.__file__).parent
    before = snapshot(package)
    data_dir = tmp_path / "data-dir"
    monkeypatch.setenv("DYNAFORGE_DATA_DIR", str(data_dir))
    data = write_sentiment_data(tmp_path / "sst")

    result = CliRunner().invoke(main, ["train", "sentiment", "--data", str(data), "--limit", "40"])
    assert result.exit_code == 0, result.output
    metrics = json.loads(result.stdout)
    assert metrics["dev_size"] == 15 and 0.0 <= metrics["dev_binary_accuracy"] <= 1.0

    assert snapshot(package) == before, "training wrote into the plugin's package"
    store = ModelStore(data_dir / "models")
    current = store.current("sentiment", sentiment_model.MODEL_NAME)
    assert current is not None
    assert metrics["weights_version"] == current.version and metrics["weights_dir"] == str(current.path)
    assert sorted(p.name for p in current.path.iterdir()) == [
        "adapter.safetensors",
        "head.safetensors",
        "metadata.json",
    ]
    stored_meta = json.loads((current.path / "metadata.json").read_text(encoding="utf-8"))
    assert stored_meta["data"]["train_rows_used"] == 40 and stored_meta["data"]["limit"] == 40

    trained = sentiment_model.load()
    assert trained.metadata["weights"] == {"source": "trained", "path": str(current.path), "version": current.version}
    assert trained.neutral_band == stored_meta["neutral_band"]
    # the stored adapter is merged into the encoder the model runs on
    from dynaforge.tasks.training import encoder_for

    assert stored_meta["encoder"]["fine_tuned"] is True
    assert trained.encoder.shared is encoder_for(current.path) is not encoder_for(tmp_path / "no-adapter-here")
    [output] = trained.predict([{"statement": "The soup was a delight."}])
    assert output["label"] in ("positive", "negative", "neutral")

    # An empty store: the shipped weights, read where the package keeps them.
    monkeypatch.setenv("DYNAFORGE_DATA_DIR", str(tmp_path / "empty"))
    shipped = sentiment_model.load()
    assert shipped.metadata["weights"] == {"source": "shipped", "path": str(package / "weights"), "version": None}
    assert snapshot(package) == before
