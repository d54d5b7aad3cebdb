"""Uploaded models: the archive check (every refusal with its rule), the content-addressed artifact store, the
transformers backend's ``artifact`` config, and ``uploadModel`` over HTTP multipart (on SQLite and PostgreSQL): a tiny
BERT built here is uploaded, stored once, and evaluated from the stored copy in an evaluation child process."""

from __future__ import annotations

import asyncio
import io
import json
import tarfile
import zipfile
from pathlib import Path

import jsonschema
import pytest
from model_archives import (
    MINIMAL_ARCHIVE,
    folder_files,
    minimal_files,
    safetensors_bytes,
    special_entry,
    tar_archive,
    zip_archive,
)
from sqlalchemy import func, select
from support import make_user, toy_process_env
from upload_site import LIMITS, MIB, UPLOAD, upload, uploaded

from dynaforge.db.models import Evaluation, EvaluationStatus, ModelRow
from dynaforge.defaults.backends.transformers import TransformersBackend
from dynaforge.errors import InvalidInput
from dynaforge.jobs import run_in_child
from dynaforge.model_archive import TAR_ROOM_PER_ENTRY, ArchiveLimits, unpack_archive
from dynaforge.model_artifacts import ARTIFACTS_DIR, ArtifactStore
from dynaforge.model_store import ModelStoreError
from dynaforge.services import submissions
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor


def refusal(data: bytes, folder: Path, limits: ArchiveLimits = LIMITS) -> tuple[str, str]:
    folder.mkdir(exist_ok=True)
    with pytest.raises(InvalidInput) as refused:
        unpack_archive(io.BytesIO(data), folder, limits)
    [error] = refused.value.field_errors
    assert error.field == "file"
    return error.rule, error.message


def with_files(**changes: bytes | None) -> dict[str, bytes]:
    """The minimal folder with files added, replaced or (None) left out."""
    files = minimal_files()
    for name, content in changes.items():
        name = name.replace("__", ".")
        if content is None:
            files.pop(name)
        else:
            files[name] = content
    return files


def _symlink_zip(archive: zipfile.ZipFile) -> None:
    info = zipfile.ZipInfo("tokenizer.json")
    info.external_attr = (0o120777 << 16) | 0
    archive.writestr(info, "/etc/passwd")


def _pax_bomb(tar: tarfile.TarFile) -> None:
    info = tarfile.TarInfo("tokenizer.json")
    info.pax_headers = {"comment": "x" * (2 * MIB)}
    tar.addfile(info, io.BytesIO(b"{}"))


def tgz(**changes: bytes | None) -> bytes:
    return tar_archive(with_files(**changes))


def tgz_with(entry: str, kind: bytes, link: str = "") -> bytes:
    return tar_archive(minimal_files(), extra=special_entry(f"model/{entry}", kind, link))


def _encrypted_zip() -> bytes:
    """A zip whose entries say they are encrypted (the flag in the local and the central headers)."""
    data = zip_archive(minimal_files())
    data = data.replace(b"PK\x03\x04\x14\x00\x00\x00", b"PK\x03\x04\x14\x00\x01\x00", 1)
    return data.replace(b"PK\x01\x02\x14\x03\x14\x00\x00\x00", b"PK\x01\x02\x14\x03\x14\x00\x01\x00", 1)


ST = safetensors_bytes
F32 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
AUTO_MAP = json.dumps({"model_type": "bert", "auto_map": {"AutoModel": "m.M"}}).encode()
NESTED_AUTO_MAP = json.dumps({"model_type": "llava", "text_config": {"auto_map": {"AutoModel": "m.M"}}}).encode()
INDEX = b'{"weight_map": {"w": "model-2.safetensors"}}'
ZEROS = b"\0" * 8
# name: (archive, rule, what the message says)
REFUSALS = {
    "pickle weights": (tgz(pytorch_model__bin=b"\x80\x04K\x01."), "pickle", "pytorch_model.bin"),
    "pickle by another name": (tgz(training_args__pkl=b"\x80\x04."), "pickle", "pickle"),
    "code": (tgz(modeling_bert__py=b"import os\n"), "code", "modeling_bert.py"),
    "any other file": (tgz(notes__docx=b"..."), "file_type", "README.md model card"),
    "macOS metadata": (tgz(**{"._config__json": b"x"}), "file_type", "COPYFILE_DISABLE"),
    "symlink": (tgz_with("tokenizer.json", tarfile.SYMTYPE, "/etc/passwd"), "link", "link"),
    "hard link": (tgz_with("merges.txt", tarfile.LNKTYPE, "model/vocab.txt"), "link", "link"),
    "device": (tgz_with("spiece.model", tarfile.CHRTYPE), "link", "device"),
    "pipe": (tgz_with("spiece.model", tarfile.FIFOTYPE), "link", "pipe"),
    "zip symlink": (zip_archive(minimal_files(), extra=_symlink_zip), "link", "link"),
    "path traversal": (tar_archive({**minimal_files(), "../config.json": b"{}"}, folder=None), "path", ".."),
    "zip path traversal": (zip_archive({"model/../../x.safetensors": b"x", **minimal_files()}), "path", ".."),
    "absolute path": (tar_archive({"/etc/config.json": b"{}", **minimal_files()}, folder=None), "path", "absolute"),
    "nested folder": (tar_archive(minimal_files(), folder="a/b"), "path", "nested"),
    "two folders": (
        zip_archive(minimal_files(), folder="model", extra=lambda z: z.writestr("other/README.md", "x")),
        "path",
        "another folder",
    ),
    "duplicate": (tar_archive([*minimal_files().items(), ("config.json", b"{}")]), "duplicate", "twice"),
    "duplicate by case": (tgz(Model__safetensors=ST()), "duplicate", "ignoring case"),
    "too many files": (tgz(**{f"s{i}__safetensors": ST() for i in range(6)}), "max_items", "8 files"),
    "file over its limit": (tgz(big__safetensors=b"\0" * (MIB // 2 + 1)), "max_bytes", "is larger than 0.5 MiB"),
    "over the total": (tgz(**{f"s{i}__safetensors": b"\0" * (MIB // 3) for i in range(4)}), "max_bytes", "unpacked"),
    "zip bomb": (zip_archive(with_files(big__safetensors=b"\0" * (64 * MIB))), "max_bytes", "larger than 0.5 MiB"),
    "pax header bomb": (tar_archive(minimal_files(), extra=_pax_bomb), "max_bytes", "the unpacked archive"),
    "auto_map": (tgz(config__json=AUTO_MAP), "remote_code", "auto_map"),
    "tokenizer auto_map": (tgz(tokenizer_config__json=b'{"auto_map": {}}'), "remote_code", "tokenizer_config.json"),
    "nested auto_map": (tgz(config__json=NESTED_AUTO_MAP), "remote_code", "text_config.auto_map"),
    "auto_map in a list": (tgz(generation_config__json=b'{"a": [{"auto_map": {}}]}'), "remote_code", "a[0].auto_map"),
    "config not JSON": (tgz(config__json=b"{model_type: bert"), "json", "config.json is not valid JSON"),
    "config without model_type": (tgz(config__json=b'{"hidden_size": 8}'), "required", "model_type"),
    "no config": (tgz(config__json=None), "required", "config.json"),
    "no weights": (tgz(model__safetensors=None), "required", "safetensors"),
    "safetensors header too long": (tgz(model__safetensors=b"\xff" * 8 + b"{}"), "safetensors", "header length"),
    "safetensors header not JSON": (tgz(model__safetensors=b"\x04" + b"\0" * 7 + b"{{{{"), "safetensors", "not JSON"),
    "safetensors too short": (tgz(model__safetensors=b"\x02\0"), "safetensors", "shorter"),
    "safetensors data short": (tgz(model__safetensors=ST({"w": F32}, b"\0" * 4)), "safetensors", "file holds 4"),
    "safetensors shape": (tgz(model__safetensors=ST({"w": {**F32, "shape": [3]}}, ZEROS)), "safetensors", "shape"),
    "safetensors dtype": (tgz(model__safetensors=ST({"w": {**F32, "dtype": "OBJ"}}, ZEROS)), "safetensors", "dtype"),
    "safetensors overlap": (tgz(model__safetensors=ST({"a": F32, "b": F32}, ZEROS)), "safetensors", "overlap"),
    "missing shard": (tgz(model__safetensors__index__json=INDEX), "required", "model-2.safetensors"),
    "not an archive": (b"config.json\nmodel.safetensors\n", "archive", "is not a .tar.gz"),
    "cut short": (tar_archive(minimal_files())[:300], "archive", "cut short"),
    "encrypted zip entry": (_encrypted_zip(), "archive", "encrypted"),
    "empty": (b"", "empty", "empty"),
    "an empty archive": (zip_archive({}), "empty", "no files"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_each_refused_archive_has_its_rule_and_says_what_to_do(case, tmp_path):
    data, rule, says = REFUSALS[case]
    got_rule, message = refusal(data, tmp_path / "out")
    assert (got_rule, says in message) == (rule, True), message


def test_an_archive_over_the_limit_is_refused_before_it_is_unpacked(tmp_path):
    data = tar_archive(minimal_files())
    rule, message = refusal(data, tmp_path / "out", ArchiveLimits(len(data) - 1, MIB, 8))
    assert rule == "max_bytes" and "the archive is larger than" in message
    assert list((tmp_path / "out").iterdir()) == []


def test_a_bomb_stops_at_the_limit_whatever_its_headers_say(tmp_path):
    """The zip declares its size honestly; the pax header is read by tarfile before any file: both stop when the
    bytes that came out of the decompressor pass the limit, not after unpacking them all."""
    folder = tmp_path / "out"
    refusal(REFUSALS["zip bomb"][0], folder)
    assert sum(p.stat().st_size for p in folder.iterdir()) <= LIMITS.max_file_bytes
    assert len(REFUSALS["zip bomb"][0]) < 100_000  # 64 MiB of zeros, deflated
    pax = REFUSALS["pax header bomb"][0]
    assert len(pax) < 20_000 and LIMITS.max_bytes + 10 * TAR_ROOM_PER_ENTRY < 2 * MIB


@pytest.mark.parametrize(
    "data",
    [
        tar_archive(minimal_files()),
        tar_archive(minimal_files(), folder=None, compress=False),
        tar_archive(minimal_files(), folder="."),  # what `tar czf m.tgz -C model .` writes
        zip_archive(minimal_files()),
        zip_archive(minimal_files(), folder="my model (v2)"),
    ],
    ids=["tar.gz in a folder", "flat tar", "dot folder", "flat zip", "zip in a folder"],
)
def test_accepted_archives_unpack_flat(data, tmp_path):
    names = unpack_archive(io.BytesIO(data), tmp_path, LIMITS)
    assert names == sorted(minimal_files()) and folder_files(tmp_path) == minimal_files()


# --------------------------------------------------------------------------- the store


def test_the_same_files_are_stored_once_under_their_hash(tmp_path):
    store = ArtifactStore.from_settings(_settings(tmp_path))
    first = store.add_archive(io.BytesIO(tar_archive(minimal_files())), LIMITS)
    again = store.add_archive(io.BytesIO(zip_archive(minimal_files())), LIMITS)  # another archive, the same files
    assert first.created and not again.created and first.digest == again.digest
    root = tmp_path / "models" / ARTIFACTS_DIR
    assert [p.name for p in root.iterdir()] == [first.digest]  # and no staging folder left
    assert folder_files(store.folder(first.digest)) == minimal_files()
    assert first.size == sum(len(c) for c in minimal_files().values()) and first.files == sorted(minimal_files())
    other = store.add_archive(io.BytesIO(tar_archive(with_files(README__md=b"# Another card\n"))), LIMITS)
    assert other.created and other.digest != first.digest
    with pytest.raises(InvalidInput):
        store.add_archive(io.BytesIO(tar_archive(with_files(x__py=b""))), LIMITS)
    assert sorted(p.name for p in root.iterdir()) == sorted([first.digest, other.digest])
    assert store.exists(first.digest) and not store.exists("0" * 64) and not store.exists("../" + first.digest)


def test_a_stored_artifact_changed_on_disk_is_not_loaded(tmp_path):
    store = ArtifactStore.from_settings(_settings(tmp_path))
    stored = store.add_archive(io.BytesIO(MINIMAL_ARCHIVE), LIMITS)
    (store.folder(stored.digest) / "vocab.txt").write_bytes(b"[PAD]\nswapped\n")
    with pytest.raises(ModelStoreError, match="changed after it was stored"):
        store.folder(stored.digest)
    with pytest.raises(ModelStoreError, match="no artifact"):
        store.folder("a" * 64)
    with pytest.raises(ModelStoreError, match="not an artifact"):
        store.folder("../../etc")


def _settings(data_dir: Path):
    from dynaforge.settings import Settings

    return Settings(_env_file=None, data_dir=data_dir)


# --------------------------------------------------------------------------- the backend's artifact config

DIGEST = "ab" * 32


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ({"artifact": DIGEST, "text_fields": ["text"]}, None),
        ({"artifact": DIGEST, "path": "/models/x"}, 'give "path" or "artifact", not both'),
        ({"artifact": "/etc"}, "64 lowercase hexadecimal"),
        ({"artifact": DIGEST, "revision": "a" * 40}, "do not apply to an uploaded artifact"),
        ({"artifact": DIGEST, "local_files_only": False}, "do not apply to an uploaded artifact"),
    ],
)
def test_the_artifact_config_is_checked_and_open_to_everyone(config, problem):
    backend = TransformersBackend()
    problems = backend.check_config(config)
    assert (problem is None) == (not problems) and (problem is None or problem in problems[0]), problems
    assert jsonschema.Draft202012Validator(backend.config_schema).is_valid(config) == (problem is None)
    if problem is None:
        assert backend.admin_only(config) is None and backend.artifacts(config) == [DIGEST]
    assert backend.admin_only({"artifact": DIGEST, "path": "/etc"}) is not None  # a path stays for admins


# --------------------------------------------------------------------------- over HTTP, evaluated


def stored_artifacts(p) -> list[str]:
    root = Path(p.settings.data_dir) / "models" / ARTIFACTS_DIR
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


async def model_count(p) -> int:
    async with p.db.session() as s:
        return await s.scalar(select(func.count()).select_from(ModelRow))


async def test_an_uploaded_model_is_evaluated_from_the_stored_copy(site, tiny_bert, tmp_path, monkeypatch):
    p = site["p"]
    archive = tar_archive(folder_files(tiny_bert), folder="tiny-bert")
    payload = await uploaded(site, archive, options={"text_fields": ["text"]}, card={"license": "MIT"})
    assert payload["__typename"] == "ModelUploaded", payload
    digest = payload["artifact"]
    assert payload["stored"] is True and payload["files"] == sorted(folder_files(tiny_bert))
    assert payload["model"]["backend"] == "transformers"
    assert payload["model"]["config"] == {"text_fields": ["text"], "artifact": digest}
    assert stored_artifacts(p) == [digest]

    # The same files again, zipped: stored once, a second model on the same copy.
    again = await uploaded(site, zip_archive(folder_files(tiny_bert)), filename="m.zip", name="tiny-bert again")
    assert again["__typename"] == "ModelUploaded" and (again["artifact"], again["stored"]) == (digest, False)
    assert stored_artifacts(p) == [digest]

    # Evaluated as the job runs it: in a child process with the server's settings, reading the stored copy (the
    # config names nothing else).
    async with p.db.session() as s:
        model = await s.scalar(select(ModelRow).where(ModelRow.name == "tiny-bert"))
        evaluation_ids = list(await s.scalars(select(Evaluation.id).where(Evaluation.model_id == model.id)))
    assert len(evaluation_ids) == 1
    for key, value in toy_process_env(tmp_path / "toy", p.settings.database_url).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("DYNAFORGE_DATA_DIR", raising=False)  # the child gets it from the settings
    p.settings.load_plugins = "toy"
    status = await asyncio.to_thread(run_in_child, p.settings, evaluation_ids[0])
    async with p.db.session() as s:
        evaluation = await s.get(Evaluation, evaluation_ids[0])
    assert status == 0 and evaluation.status == EvaluationStatus.DONE, evaluation.error
    assert 0.0 <= evaluation.metrics["accuracy"] <= 1.0 and evaluation.throughput > 0


async def test_refused_uploads_come_back_typed_and_store_nothing(site):
    p = site["p"]
    payload = await uploaded(site, tar_archive(with_files(pytorch_model__bin=b"\x80\x04.")))
    assert payload["__typename"] == "InvalidInput"
    [error] = payload["fieldErrors"]
    assert (error["field"], error["rule"], error["code"]) == (["file"], "pickle", "NOT_ALLOWED")
    assert "pytorch_model.bin" in error["message"] and "safe_serialization=True" in error["message"]
    payload = await uploaded(site, tar_archive(with_files(config__json=b'{"model_type": "bert", "auto_map": {}}')))
    assert [(e["rule"], e["code"]) for e in payload["fieldErrors"]] == [("remote_code", "NOT_ALLOWED")]
    payload = await uploaded(site, tar_archive(with_files(config__json=NESTED_AUTO_MAP)))  # a sub-config's
    assert [(e["rule"], e["code"]) for e in payload["fieldErrors"]] == [("remote_code", "NOT_ALLOWED")]
    payload = await uploaded(site, MINIMAL_ARCHIVE, options={"path": "/etc", "text_fields": ["text"]})
    assert [(e["field"], e["rule"]) for e in payload["fieldErrors"]] == [(["options", "path"], "unknown")]
    payload = await uploaded(site, MINIMAL_ARCHIVE, options={"text_fields": ["a", "b", "c"]})
    assert [(e["field"], e["rule"]) for e in payload["fieldErrors"]] == [(["options"], "backend_config")]
    payload = await uploaded(site, MINIMAL_ARCHIVE, name="")
    assert [(e["field"], e["rule"]) for e in payload["fieldErrors"]] == [(["name"], "required")]
    assert (await uploaded(site, MINIMAL_ARCHIVE, token=None))["__typename"] == "NotAuthenticated"
    assert (await uploaded(site, MINIMAL_ARCHIVE, taskCode="nope"))["__typename"] == "NotFound"
    await task_service.update_settings(p, Actor.system(), "toy", {"hidden": True})
    assert (await uploaded(site, MINIMAL_ARCHIVE))["__typename"] == "NotFound"
    assert stored_artifacts(p) == [] and await model_count(p) == 0

    # A JSON request cannot carry the file.
    body = {"query": UPLOAD, "variables": {"input": {"taskCode": "toy", "name": "x", "file": "config.json"}}}
    response = await site["http"].post("/graphql", json=body, headers={"Authorization": f"Bearer {site['token']}"})
    assert response.json()["data"]["uploadModel"]["fieldErrors"][0]["rule"] == "upload"


async def test_an_upload_past_the_allowance_stores_nothing(site):
    p = site["p"]
    for i in range(3):  # the task's allowance: 3 submissions in 24 hours
        payload = await uploaded(site, tgz(README__md=f"# Card {i}\n".encode()))
        assert payload["__typename"] == "ModelUploaded"
    payload = await uploaded(site, tgz(README__md=b"# One too many\n"))
    assert payload["__typename"] == "QuotaExceeded" and len(stored_artifacts(p)) == 3


async def test_large_multipart_requests_need_a_signed_in_caller(site, monkeypatch):
    """Past the context-file limit only a model archive may be that large, and only a signed-in user sends one:
    nobody anonymous makes the server spool a large body."""
    from dynaforge.api.contexts import MULTIPART_OVERHEAD_BYTES

    p = site["p"]
    monkeypatch.setattr(p.settings, "context_upload_max_bytes", 100)
    monkeypatch.setattr(p.settings, "model_upload_max_mb", 1)
    large = b"\0" * (100 + MULTIPART_OVERHEAD_BYTES + 1)
    assert (await upload(site, large, token=None)).status_code == 413
    assert (await upload(site, large, token="not-a-token")).status_code == 413
    payload = await uploaded(site, large)
    assert payload["fieldErrors"][0]["rule"] == "archive"
    assert (await upload(site, b"\0" * (MIB + MULTIPART_OVERHEAD_BYTES + 1))).status_code == 413


async def test_submitted_configs_name_only_stored_artifacts(site):
    """Nobody points a model at an artifact the store does not hold; one that is stored may be named again (by its
    uploader, or by anyone it was shared with), as a submission or as a round's target."""
    p = site["p"]
    builder, owner = await make_user(p, "builder2"), await make_user(p, "owner2")
    await task_service.grant_ownership(p, Actor.system(), "toy", owner.user_id)
    missing = {"artifact": "f" * 64, "text_fields": ["text"]}
    for actor in (builder, site["admin"]):
        with pytest.raises(InvalidInput) as refused:
            await submissions.submit_model(p, actor, task_code="toy", name="m", backend="transformers", config=missing)
        assert [(e.field, e.rule) for e in refused.value.field_errors] == [("config.artifact", "not_found")]
    with pytest.raises(InvalidInput) as refused:
        await task_service.set_target_models(
            p, owner, "toy", [{"name": "t", "backend": "transformers", "config": missing}]
        )
    assert [(e.field, e.rule) for e in refused.value.field_errors] == [("models[0].config.artifact", "not_found")]
    with pytest.raises(InvalidInput) as refused:
        config = {"artifact": "f" * 64, "path": "/etc"}
        await submissions.submit_model(p, builder, task_code="toy", name="m", backend="transformers", config=config)
    assert refused.value.field_errors[0].rule in ("not_allowed", "backend_config")
    assert await model_count(p) == 0

    stored = ArtifactStore.from_settings(p.settings).add_archive(io.BytesIO(MINIMAL_ARCHIVE), LIMITS)
    config = {"artifact": stored.digest}
    model, queued = await submissions.submit_model(
        p, builder, task_code="toy", name="m", backend="transformers", config=config
    )
    assert model.config == config and len(queued) == 1
    await task_service.set_target_models(p, owner, "toy", [{"name": "t", "backend": "transformers", "config": config}])
