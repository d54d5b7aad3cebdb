"""Bounded upload storage (on SQLite and PostgreSQL): concurrent uploads past the allowance keep only the accepted
models' artifacts, a refused upload (a bad archive, the allowance used meanwhile, the storage quota) leaves nothing
stored, and collecting artifacts (the ``dynaforge artifacts collect`` command and the periodic job) deletes an old
unreferenced one while it keeps those that rows name and those younger than the grace period."""

from __future__ import annotations

import asyncio
import io
import os
import struct
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from model_archives import minimal_files, safetensors_bytes, tar_archive
from sqlalchemy import select
from upload_site import LIMITS, upload, uploaded

from dynaforge.cli import main as cli
from dynaforge.db.models import ModelRow
from dynaforge.jobs import MAINTENANCE_QUEUE, Jobs
from dynaforge.model_artifacts import ARTIFACTS_DIR, ArtifactStore, FilesystemArtifactStorage
from dynaforge.model_store import STAGING_PREFIX
from dynaforge.services import model_uploads, submissions
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor

OLD = 2 * 3600  # seconds: older than the default grace period (ARTIFACT_GC_GRACE_S, an hour)


def archive(note: str, weights_bytes: int = 0) -> bytes:
    """The minimal model folder with its own card (so its own digest) and, if asked, that many bytes of weights."""
    files = {**minimal_files(), "README.md": f"# {note}\n".encode()}
    if weights_bytes:
        n = weights_bytes // 4
        header = {"weight": {"dtype": "F32", "shape": [n], "data_offsets": [0, 4 * n]}}
        files["model.safetensors"] = safetensors_bytes(header, struct.pack("<f", 0.25) * n)
    return tar_archive(files)


def root(p) -> Path:
    return Path(p.settings.data_dir) / "models" / ARTIFACTS_DIR


def stored(p) -> set[str]:
    """Everything in the store's folder: artifacts by digest, and any staging folder left behind."""
    return {entry.name for entry in root(p).iterdir()} if root(p).is_dir() else set()


def backdate(p, *digests: str) -> None:
    when = time.time() - OLD
    for digest in digests:
        os.utime(root(p) / digest, (when, when))


async def model_named(p, name: str) -> ModelRow:
    async with p.db.session() as s:
        return (await s.scalars(select(ModelRow).where(ModelRow.name == name))).one()


# --------------------------------------------------------------------------- uploads


async def test_concurrent_uploads_past_the_allowance_keep_only_the_accepted_models_artifacts(site):
    p = site["p"]
    payloads = await asyncio.gather(*(uploaded(site, archive(f"model {i}"), name=f"m{i}") for i in range(8)))
    kinds = sorted(payload["__typename"] for payload in payloads)
    assert kinds == ["ModelUploaded"] * 3 + ["QuotaExceeded"] * 5  # the toy task's 3 submissions in 24 hours
    accepted = {payload["artifact"] for payload in payloads if payload["__typename"] == "ModelUploaded"}
    assert len(accepted) == 3 and stored(p) == accepted  # no refused upload's files, no staging folder


async def test_a_refused_upload_leaves_nothing_stored(site, monkeypatch):
    p = site["p"]
    # A bad archive: refused while it is unpacked.
    payload = await uploaded(site, tar_archive({**minimal_files(), "model.py": b"import os\n"}))
    assert payload["__typename"] == "InvalidInput" and stored(p) == set()

    accepted = {(await uploaded(site, archive(f"kept {i}"), name=f"kept {i}"))["artifact"] for i in range(3)}
    assert len(accepted) == 3 and stored(p) == accepted  # the allowance is used
    # Another process used the allowance between this upload's checks and its model: refused as the model is
    # written, after the files were stored, and they are deleted. A copy that a model names stays.
    monkeypatch.setattr(model_uploads, "check_allowance", lambda *args: asyncio.sleep(0))
    payload = await uploaded(site, archive("refused late"))
    assert payload["__typename"] == "QuotaExceeded", payload
    again = await uploaded(site, archive("kept 0"))  # the same files as a stored model's
    assert again["__typename"] == "QuotaExceeded" and stored(p) == accepted

    async def broken(*args, **kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(submissions, "submit_model", broken)
    response = await upload(site, archive("failed"))
    assert response.json()["errors"] and not response.json()["data"]  # an unexpected error, as GraphQL's
    assert stored(p) == accepted


async def test_a_users_models_keep_at_most_their_storage_quota(site):
    p = site["p"]
    p.settings.model_upload_quota_mb = 1
    first = await uploaded(site, archive("first", 600 * 1024), name="first")
    assert first["__typename"] == "ModelUploaded"
    # 0.6 MiB more would pass 1 MiB: refused before it is stored, counting no submission.
    payload = await uploaded(site, archive("second", 600 * 1024), name="second")
    [error] = payload["fieldErrors"]
    assert (error["field"], error["rule"], error["code"]) == (["file"], "quota", "TOO_MANY")
    assert "MODEL_UPLOAD_QUOTA_MB" in error["message"] and "deleteModel" in error["message"]
    assert stored(p) == {first["artifact"]}
    # The same files again take nothing more.
    again = await uploaded(site, archive("first", 600 * 1024), name="first again")
    assert (again["__typename"], again["artifact"]) == ("ModelUploaded", first["artifact"])
    # Deleting the models frees their share at once.
    for name in ("first", "first again"):
        model = await model_named(p, name)
        await submissions.delete_model(p, Actor(model.user_id, "builder1"), model.id)
    second = await uploaded(site, archive("second", 600 * 1024), name="second")
    assert second["__typename"] == "ModelUploaded"


# --------------------------------------------------------------------------- collecting unreferenced artifacts


async def collect_with_the_command(p) -> str:
    env = {
        "DYNAFORGE_DATA_DIR": str(p.settings.data_dir),
        "DYNAFORGE_LOAD_PLUGINS": "",
        "DYNAFORGE_INFERENCE": "inline",
        "DYNAFORGE_ENVIRONMENT": "test",
    }
    args = ["--log-level", "WARNING", "artifacts", "collect", "--database-url", p.settings.database_url]
    result = await asyncio.to_thread(CliRunner().invoke, cli, args, env=env)
    assert result.exit_code == 0, result.output
    return result.output


async def collect_with_the_job(p) -> str:
    jobs = Jobs(p.settings.model_copy(update={"broker_url": None, "load_plugins": "", "inference": "inline"}))
    try:
        jobs.start_worker()
        jobs.collect_artifacts()
        await asyncio.to_thread(jobs.broker.join, MAINTENANCE_QUEUE, fail_fast=True, timeout=60_000)
    finally:
        jobs.stop()
    return ""


@pytest.mark.parametrize("collect", [collect_with_the_command, collect_with_the_job], ids=["command", "job"])
async def test_collection_deletes_old_unreferenced_artifacts_only(site, collect):
    p, admin = site["p"], site["admin"]
    store = ArtifactStore.from_settings(p.settings)
    named = (await uploaded(site, archive("named"), name="named"))["artifact"]  # a model names it
    dropped = (await uploaded(site, archive("dropped"), name="dropped"))["artifact"]
    model = await model_named(p, "dropped")
    await submissions.delete_model(p, Actor(model.user_id, "builder1"), model.id)  # nothing names it any more
    target = store.add_archive(io.BytesIO(archive("target")), LIMITS).digest
    config = {"artifact": target}
    await task_service.set_target_models(p, admin, "toy", [{"name": "t", "backend": "transformers", "config": config}])
    orphan = store.add_archive(io.BytesIO(archive("orphan")), LIMITS).digest
    young = store.add_archive(io.BytesIO(archive("young")), LIMITS).digest
    claimed = store.add_archive(io.BytesIO(archive("claimed")), LIMITS).digest
    backdate(p, named, dropped, target, orphan, claimed)
    # Named by digest: claimed as it is checked, so the grace period covers the moment before the row is written.
    await submissions.submit_model(
        p, admin, task_code="toy", name="by digest", backend="transformers", config={"artifact": claimed}
    )
    assert (root(p) / claimed).stat().st_mtime > time.time() - 60

    output = await collect(p)
    assert stored(p) == {named, target, young, claimed}
    if output:
        assert f"removed {orphan}" in output and f"removed {dropped}" in output
        assert output.splitlines()[-1].startswith("removed 2 unreferenced artifacts")
    assert store.folder(named) and store.folder(target)  # whole and unchanged

    # Once it is old, the young one goes too; a second run finds nothing else.
    backdate(p, young)
    await collect(p)
    assert stored(p) == {named, target, claimed}


def test_the_store_deletes_only_what_no_one_touched_since(tmp_path):
    """A removal checks the artifact's stamp after moving it aside: an upload of the same files that touched it
    keeps it; an upload that arrives while it is aside stores its own copy. Leftovers of stopped uploads go."""
    storage = FilesystemArtifactStorage(tmp_path)
    store = ArtifactStore(storage)
    stored_one = store.add_archive(io.BytesIO(archive("one")), LIMITS)
    digest, stamp = stored_one.digest, stored_one.stamp
    assert stored_one.created and stamp == storage.stamp(digest)
    again = store.add_archive(io.BytesIO(archive("one")), LIMITS)  # the same files: touched, not stored twice
    assert not again.created and storage.stamp(digest) != stamp
    assert storage.remove(digest, stamp=stamp) is None and storage.exists(digest)  # another upload wants it
    assert storage.remove(digest, older_than=time.time() - 60) is None and storage.exists(digest)  # young
    freed = storage.remove(digest, stamp=storage.stamp(digest))
    assert freed == stored_one.size and not storage.exists(digest)
    assert not store.claim(digest) and store.add_archive(io.BytesIO(archive("one")), LIMITS).created

    leftover = tmp_path / f"{STAGING_PREFIX}killed"
    leftover.mkdir()
    (leftover / "model.safetensors").write_bytes(b"\0" * 10)
    young = storage.collect(set(), time.time() - 60)  # the leftover and the artifact are younger than that
    assert (young.removed, young.leftovers, young.young) == ({}, 0, [digest]) and leftover.exists()
    dry = storage.collect(set(), time.time() + 1, dry_run=True)
    assert (list(dry.removed), dry.leftovers) == ([digest], 1) and leftover.exists() and storage.exists(digest)
    done = storage.collect({digest}, time.time() + 1)
    assert (done.removed, done.leftovers) == ({}, 1) and not leftover.exists() and storage.exists(digest)
    done = storage.collect(set(), time.time() + 1)
    assert list(done.removed) == [digest] and sorted(p.name for p in tmp_path.iterdir()) == []
