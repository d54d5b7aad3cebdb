"""The model store (dynaforge.model_store) and the running half of the training kit (dynaforge.tasks.training):
versions by content hash, never overwritten, an atomic pointer, which weights a loader reads, and run_training /
training_main with a fake trainer. Tiny files, temporary folders, no torch."""

from __future__ import annotations

import hashlib
import json
import logging
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dynaforge.model_store import (
    POINTER_FILE,
    ModelStore,
    ModelStoreError,
    content_hash,
    resolve_weights,
    write_json_atomically,
)
from dynaforge.settings import Settings
from dynaforge.tasks.training import file_info, run_training, seeded_sample, training_main


def artifact(folder: Path, head: bytes = b"weights-1", note: str = "first") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "head.safetensors").write_bytes(head)
    (folder / "metadata.json").write_text(json.dumps({"note": note}), encoding="utf-8")
    return folder


def leftovers(store: ModelStore, task: str = "formality", model: str = "keywords") -> list[str]:
    """What is in the model's folder besides version folders and the pointer (staging folders, temporary files)."""
    folder = store.model_dir(task, model)
    return sorted(p.name for p in folder.iterdir() if len(p.name) != 64 and p.name != POINTER_FILE)


def test_content_hash_covers_names_and_bytes_not_order(tmp_path):
    a = artifact(tmp_path / "a")
    b = tmp_path / "b"
    b.mkdir()
    (b / "metadata.json").write_text(json.dumps({"note": "first"}), encoding="utf-8")  # written in the other order
    (b / "head.safetensors").write_bytes(b"weights-1")
    assert content_hash(a) == content_hash(b)
    assert len(content_hash(a)) == 64
    (b / "metadata.json").write_text(json.dumps({"note": "second"}), encoding="utf-8")
    assert content_hash(a) != content_hash(b), "metadata is part of the artifact"
    (b / "metadata.json").rename(b / "meta.json")
    assert content_hash(b) != content_hash(artifact(tmp_path / "c", note="second"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelStoreError, match="holds no files"):
        content_hash(empty)


def test_a_staged_artifact_becomes_the_current_version(tmp_path):
    store = ModelStore(tmp_path / "models")
    assert store.current("formality", "keywords") is None
    assert store.versions("formality", "keywords") == []
    with store.staging("formality", "keywords") as staging:
        assert staging.parent == tmp_path / "models" / "formality" / "keywords" and not any(staging.iterdir())
        artifact(staging)
        expected = content_hash(staging)
        stored = store.add("formality", "keywords", staging)
    assert stored.version == expected
    assert stored.path == tmp_path / "models" / "formality" / "keywords" / expected
    assert (stored.path / "head.safetensors").read_bytes() == b"weights-1"
    assert store.current("formality", "keywords") == stored
    pointer = json.loads((stored.path.parent / POINTER_FILE).read_text(encoding="utf-8"))
    assert pointer == {"format": "dynaforge-model-pointer/1", "version": expected}
    assert leftovers(store) == []


def test_an_existing_version_is_never_overwritten(tmp_path):
    store = ModelStore(tmp_path / "models")
    first = store.add("formality", "keywords", artifact(tmp_path / "one"))
    head = first.path / "head.safetensors"
    before = head.stat()
    second = store.add("formality", "keywords", artifact(tmp_path / "two", head=b"weights-2", note="second"))
    assert store.current("formality", "keywords") == second

    # The same content again: the stored folder is kept as it is (same file, untouched), and becomes current.
    again = store.add("formality", "keywords", artifact(tmp_path / "three"))
    assert again == first and store.current("formality", "keywords") == first
    after = head.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert {v.version for v in store.versions("formality", "keywords")} == {first.version, second.version}
    assert (tmp_path / "one" / "head.safetensors").exists(), "a folder outside the store is copied, not moved"
    assert leftovers(store) == []


def test_set_current_and_a_broken_pointer(tmp_path):
    store = ModelStore(tmp_path / "models")
    first = store.add("formality", "keywords", artifact(tmp_path / "one"))
    second = store.add("formality", "keywords", artifact(tmp_path / "two", head=b"weights-2"))
    assert store.set_current("formality", "keywords", first.version) == first
    assert store.current("formality", "keywords") == first
    with pytest.raises(ModelStoreError, match="not in"):
        store.set_current("formality", "keywords", "0" * 64)
    with pytest.raises(ModelStoreError, match="not a model version"):
        store.get("formality", "keywords", "../two")

    pointer = store.model_dir("formality", "keywords") / POINTER_FILE
    pointer.write_text("{not json", encoding="utf-8")
    with pytest.raises(ModelStoreError, match="delete it to use the shipped weights"):
        store.current("formality", "keywords")
    pointer.write_text(json.dumps({"version": "f" * 64}), encoding="utf-8")
    with pytest.raises(ModelStoreError, match="names a version that cannot be used"):
        store.current("formality", "keywords")
    store.set_current("formality", "keywords", second.version)
    assert store.current("formality", "keywords") == second


@pytest.mark.parametrize("task, model", [("..", "keywords"), ("formality", "a/b"), ("", "keywords"), ("x", ".hidden")])
def test_names_that_cannot_be_folders_are_refused(tmp_path, task, model):
    with pytest.raises(ModelStoreError, match="cannot name a folder"):
        ModelStore(tmp_path).model_dir(task, model)


def test_the_store_lives_under_the_data_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("DYNAFORGE_DATA_DIR", raising=False)
    assert Settings(_env_file=None).data_dir == Path("dynaforge-data")
    assert ModelStore.from_settings(Settings(data_dir=tmp_path)).root == tmp_path / "models"
    monkeypatch.setenv("DYNAFORGE_DATA_DIR", str(tmp_path / "elsewhere"))
    assert ModelStore.from_settings().root == tmp_path / "elsewhere" / "models"


def test_resolve_weights_prefers_given_then_trained_then_shipped(tmp_path, caplog):
    store = ModelStore(tmp_path / "models")
    shipped = artifact(tmp_path / "package" / "weights")
    caplog.set_level(logging.INFO, logger="dynaforge.models")

    weights = resolve_weights("formality", "keywords", shipped, store=store)
    assert (weights.path, weights.source, weights.version) == (shipped, "shipped", None)
    assert weights.describe() == {"source": "shipped", "path": str(shipped), "version": None}
    assert f"formality/keywords: loading shipped weights from {shipped}" in caplog.text

    trained = store.add("formality", "keywords", artifact(tmp_path / "new", head=b"weights-2"))
    weights = resolve_weights("formality", "keywords", shipped, store=store)
    assert (weights.path, weights.source, weights.version) == (trained.path, "trained", trained.version)
    assert f"loading trained weights (version {trained.version[:12]}) from {trained.path}" in caplog.text

    weights = resolve_weights("formality", "keywords", shipped, weights_dir=str(tmp_path / "mine"), store=store)
    assert (weights.path, weights.source) == (tmp_path / "mine", "given")


def test_write_json_atomically_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "metadata.json"
    write_json_atomically(target, {"a": 1})
    write_json_atomically(target, {"a": 2})
    assert json.loads(target.read_text(encoding="utf-8")) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["metadata.json"]
    assert target.stat().st_mode & 0o777 == 0o644


def test_seeded_sample_and_file_info(tmp_path):
    rng = random.Random(0)
    assert seeded_sample(5, None, rng) == [0, 1, 2, 3, 4] and seeded_sample(5, 9, rng) == list(range(5))
    assert rng.random() == random.Random(0).random(), "all rows: the generator is left untouched"
    picked = seeded_sample(100, 10, random.Random(3))
    assert picked == sorted(picked) and len(set(picked)) == 10 and picked == seeded_sample(100, 10, random.Random(3))
    info = file_info(artifact(tmp_path / "a") / "head.safetensors")
    assert info == {"file": "head.safetensors", "bytes": 9, "sha256": hashlib.sha256(b"weights-1").hexdigest()}


# --------------------------------------------------------------------------- running a trainer


def fake_train(data_dir: Path, out_dir: Path, *, progress: bool = True, limit: int | None = None, **options: Any):
    """A trainer as the kit expects one: reads its data folder, writes an artifact into out_dir, returns metrics."""
    words = (Path(data_dir) / "words.txt").read_text(encoding="utf-8").split()[:limit]
    if "fail" in words:
        (Path(out_dir) / "partial.bin").write_bytes(b"half")
        raise ValueError("the data says fail")
    artifact(Path(out_dir), head=" ".join(words).encode(), note=json.dumps(options, sort_keys=True))
    return {"words": len(words), "options": options}


def data_folder(tmp_path: Path, text: str = "alpha beta gamma") -> Path:
    folder = tmp_path / "data"
    folder.mkdir(exist_ok=True)
    (folder / "words.txt").write_text(text, encoding="utf-8")
    return folder


def test_run_training_into_a_folder_leaves_the_store_alone(tmp_path):
    store = ModelStore(tmp_path / "models")
    metrics = run_training(
        fake_train, data_folder(tmp_path), tmp_path / "out", task="formality", model="keywords", store=store
    )
    assert metrics == {"words": 3, "options": {}}
    assert (tmp_path / "out" / "head.safetensors").read_bytes() == b"alpha beta gamma"
    assert not store.root.exists()


def test_run_training_into_the_store(tmp_path):
    store = ModelStore(tmp_path / "models")
    metrics = run_training(
        fake_train, data_folder(tmp_path), task="formality", model="keywords", store=store, limit=2, seed=7
    )
    current = store.current("formality", "keywords")
    assert current is not None
    assert metrics == {
        "words": 2,
        "options": {"seed": 7},
        "weights_dir": str(current.path),
        "weights_version": current.version,
    }
    assert (current.path / "head.safetensors").read_bytes() == b"alpha beta"
    assert leftovers(store) == []


def test_a_failed_training_leaves_nothing_in_the_store(tmp_path):
    store = ModelStore(tmp_path / "models")
    first = run_training(fake_train, data_folder(tmp_path), task="formality", model="keywords", store=store)
    with pytest.raises(ValueError, match="the data says fail"):
        run_training(fake_train, data_folder(tmp_path, "fail now"), task="formality", model="keywords", store=store)
    assert [v.version for v in store.versions("formality", "keywords")] == [first["weights_version"]]
    assert store.current("formality", "keywords").version == first["weights_version"]
    assert leftovers(store) == []


def test_training_main_parses_the_common_options(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DYNAFORGE_DATA_DIR", str(tmp_path / "data-dir"))
    data = data_folder(tmp_path, "one two three four")
    code = training_main(
        fake_train,
        task="formality",
        model="keywords",
        description="Learn the words.",
        data_help="folder with words.txt",
        options={"epochs": 30, "lr": 2e-3},
        argv=["--data", str(data), "--limit", "3", "--seed", "5", "--epochs", "2", "--lr", "0.5", "--no-progress"],
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["words"] == 3 and printed["options"] == {"seed": 5, "epochs": 2, "lr": 0.5}
    current = ModelStore(tmp_path / "data-dir" / "models").current("formality", "keywords")
    assert current is not None and printed["weights_dir"] == str(current.path)

    out = tmp_path / "explicit"
    training_main(
        fake_train,
        task="formality",
        model="keywords",
        description="Learn the words.",
        data_help="folder with words.txt",
        argv=["--data", str(data), "--out", str(out)],
    )
    assert json.loads(capsys.readouterr().out) == {"words": 4, "options": {"seed": 0}}
    assert (out / "head.safetensors").read_bytes() == b"one two three four"


def test_the_kit_and_the_store_import_no_torch():
    code = (
        "import sys\n"
        "import dynaforge.model_store, dynaforge.tasks.training\n"
        "print(','.join(m for m in ('torch', 'transformers', 'safetensors', 'numpy') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
