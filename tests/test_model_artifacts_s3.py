"""Uploaded model artifacts in an S3-compatible bucket (``DYNAFORGE_MODEL_STORE_URL``), against a real S3 API: moto's
server on a loopback port. The store's round trip (the manifest written last, nothing uploaded twice, a download
into the local cache checked file by file, a changed object refused), the model worker's fetch before a target
model loads, and an upload over GraphQL evaluated in the job's child process: the child fetches the artifact, and
the model's process, which gets no AWS variable and no network, loads the cached copy."""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from model_archives import MINIMAL_ARCHIVE, folder_files, minimal_files, tar_archive
from pydantic import ValidationError
from sqlalchemy import select
from support import free_port, toy_process_env
from upload_site import LIMITS, uploaded

from dynaforge.db.models import Evaluation, EvaluationStatus, ModelRow
from dynaforge.defaults.backends.transformers import TransformersBackend
from dynaforge.jobs import run_in_child
from dynaforge.model_artifacts import (
    ARTIFACTS_DIR,
    MANIFEST,
    ArtifactStore,
    S3ArtifactStorage,
    parse_manifest,
    parse_s3_url,
)
from dynaforge.model_store import ModelStoreError, content_hash, manifest
from dynaforge.plugins import Plugins
from dynaforge.services.platform import fetch_artifacts
from dynaforge.settings import Settings
from dynaforge.tasks.base import ModelSpec

pytest.importorskip("boto3")
moto_server = pytest.importorskip("moto.server")

BUCKET = "dynaforge-models"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture(scope="module")
def s3_endpoint():
    """moto's S3 API on a free loopback port, with test credentials in the environment and the bucket made."""
    import boto3

    with pytest.MonkeyPatch.context() as mp:
        for name, value in CREDENTIALS.items():
            mp.setenv(name, value)
        port = free_port()
        server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        server.start()
        endpoint = f"http://127.0.0.1:{port}"
        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=BUCKET)
        try:
            yield endpoint
        finally:
            server.stop()


@pytest.fixture
def s3(s3_endpoint, monkeypatch):
    """The endpoint, with the credentials (the module fixture's are gone once its first test ends) and a client."""
    import boto3

    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    return {"endpoint": s3_endpoint, "client": boto3.client("s3", endpoint_url=s3_endpoint)}


def settings_for(data_dir: Path, s3: dict | None = None, prefix: str = "artifacts/") -> Settings:
    if s3 is None:
        return Settings(_env_file=None, data_dir=data_dir)
    return Settings(
        _env_file=None,
        data_dir=data_dir,
        model_store_url=f"s3://{BUCKET}/{prefix}",
        model_store_endpoint=s3["endpoint"],
    )


def keys(s3: dict, prefix: str) -> list[str]:
    listed = s3["client"].list_objects_v2(Bucket=BUCKET, Prefix=prefix)
    return sorted(o["Key"] for o in listed.get("Contents", []))


def cache(data_dir: Path) -> Path:
    return data_dir / "models" / ARTIFACTS_DIR


def test_the_url_is_a_bucket_and_a_prefix(tmp_path):
    assert parse_s3_url("s3://b/models/x/") == ("b", "models/x/")
    assert parse_s3_url("s3://b/models") == ("b", "models/")
    assert parse_s3_url("s3://b") == ("b", "")
    for bad in ("https://b/models/", "s3:///models/", "s3://b/m?x=1"):
        with pytest.raises(ValueError, match="s3://bucket/prefix/"):
            parse_s3_url(bad)
    with pytest.raises(ValidationError, match="DYNAFORGE_MODEL_STORE_URL"):
        Settings(_env_file=None, model_store_url="/var/models")
    store = ArtifactStore.from_settings(settings_for(tmp_path, {"endpoint": "http://127.0.0.1:1"}, "p"))
    assert isinstance(store.storage, S3ArtifactStorage) and store.storage.prefix == "p/"
    assert store.storage.cache.root == cache(tmp_path).absolute()


def test_a_manifest_names_files_in_the_folder_only():
    line = "a" * 64 + "  "
    assert parse_manifest(f"{line}config.json\n{line}sub/model.safetensors\n") == [
        ("a" * 64, "config.json"),
        ("a" * 64, "sub/model.safetensors"),
    ]
    for bad in ("../x", "/etc/passwd", "a/../../x", "a//b", "MANIFEST", "a\\b", "", " x"):
        with pytest.raises(ModelStoreError):
            parse_manifest(f"{line}{bad}\n")
    with pytest.raises(ModelStoreError, match="sorted"):
        parse_manifest(f"{line}b\n{line}a\n")
    with pytest.raises(ModelStoreError, match="sorted"):
        parse_manifest("")


def test_artifacts_round_trip_through_the_bucket(s3, tmp_path, monkeypatch):
    # One replica stores an upload: every file, then the manifest; it keeps its staging folder as its cached copy.
    first = ArtifactStore.from_settings(settings_for(tmp_path / "a", s3, "round-trip/"))
    stored = first.add_archive(io.BytesIO(MINIMAL_ARCHIVE), LIMITS)
    digest = stored.digest
    assert stored.created
    assert keys(s3, "round-trip/") == sorted(
        [f"round-trip/{digest}/{name}" for name in minimal_files()] + [f"round-trip/{digest}/{MANIFEST}"]
    )
    body = s3["client"].get_object(Bucket=BUCKET, Key=f"round-trip/{digest}/{MANIFEST}")["Body"].read()
    assert body.decode() == manifest(first.folder(digest))
    assert [p.name for p in cache(tmp_path / "a").iterdir()] == [digest]

    # Another replica, with an empty cache: the same files again are not uploaded again.
    second = ArtifactStore.from_settings(settings_for(tmp_path / "b", s3, "round-trip/"))
    assert second.exists(digest) and not (cache(tmp_path / "b") / digest).exists()
    monkeypatch.setattr(second.storage.client, "upload_file", lambda *a, **k: pytest.fail("uploaded twice"))
    monkeypatch.setattr(second.storage.client, "put_object", lambda *a, **k: pytest.fail("uploaded twice"))
    again = second.add_archive(io.BytesIO(MINIMAL_ARCHIVE), LIMITS)
    assert (again.digest, again.created) == (digest, False)
    monkeypatch.undo()

    # A third one (a job worker) downloads it into its cache, checked, with nothing left in staging.
    third_dir = tmp_path / "c"
    third = ArtifactStore.from_settings(settings_for(third_dir, s3, "round-trip/"))
    folder = third.folder(digest)
    assert folder == cache(third_dir).absolute() / digest and folder_files(folder) == minimal_files()
    assert [p.name for p in cache(third_dir).iterdir()] == [digest]
    # A process without the bucket's settings (a model's process) reads that cache as a filesystem store.
    assert folder_files(ArtifactStore.from_settings(settings_for(third_dir)).folder(digest)) == minimal_files()

    assert not third.exists("0" * 64) and not third.exists("../x")
    with pytest.raises(ModelStoreError, match="no artifact"):
        ArtifactStore.from_settings(settings_for(tmp_path / "d", s3, "round-trip/")).folder("0" * 64)


def test_an_upload_cut_short_is_not_stored(s3, tmp_path, monkeypatch):
    store = ArtifactStore.from_settings(settings_for(tmp_path / "a", s3, "cut/"))
    client = store.storage.client
    real_upload, uploads = client.upload_file, []

    def upload_then_fail(filename, bucket, key, *args, **kwargs):
        if uploads:
            raise ConnectionError("the connection dropped")
        uploads.append(key)
        return real_upload(filename, bucket, key, *args, **kwargs)

    monkeypatch.setattr(client, "upload_file", upload_then_fail)
    with pytest.raises(ConnectionError):
        store.add_archive(io.BytesIO(MINIMAL_ARCHIVE), LIMITS)
    monkeypatch.undo()
    [key] = uploads
    digest = key.split("/")[1]
    assert keys(s3, "cut/") == [key]  # one file of the artifact, and no manifest
    assert list(cache(tmp_path / "a").iterdir()) == []  # neither cached nor left in staging
    elsewhere = ArtifactStore.from_settings(settings_for(tmp_path / "b", s3, "cut/"))
    assert not elsewhere.exists(digest)
    with pytest.raises(ModelStoreError, match="no artifact"):
        elsewhere.folder(digest)

    # Uploaded again in full, it is stored.
    assert store.add_archive(io.BytesIO(MINIMAL_ARCHIVE), LIMITS).created and elsewhere.exists(digest)
    assert len(keys(s3, "cut/")) == len(minimal_files()) + 1


def test_a_changed_object_in_the_bucket_is_refused(s3, tmp_path):
    stored = ArtifactStore.from_settings(settings_for(tmp_path / "a", s3, "tampered/")).add_archive(
        io.BytesIO(MINIMAL_ARCHIVE), LIMITS
    )
    digest = stored.digest
    s3["client"].put_object(Bucket=BUCKET, Key=f"tampered/{digest}/vocab.txt", Body=b"[PAD]\nswapped\n")
    reader_dir = tmp_path / "b"
    reader = ArtifactStore.from_settings(settings_for(reader_dir, s3, "tampered/"))
    with pytest.raises(ModelStoreError, match=r"vocab.txt .* hashes to .* not to"):
        reader.folder(digest)
    assert list(cache(reader_dir).iterdir()) == []  # nothing cached, no staging folder left

    # A manifest rewritten to match the changed file no longer hashes to the digest.
    changed = tmp_path / "changed"
    changed.mkdir()
    for name, content in minimal_files().items():
        (changed / name).write_bytes(content)
    (changed / "vocab.txt").write_bytes(b"[PAD]\nswapped\n")
    s3["client"].put_object(Bucket=BUCKET, Key=f"tampered/{digest}/{MANIFEST}", Body=manifest(changed).encode())
    with pytest.raises(ModelStoreError, match="manifest .* does not hash to its digest"):
        reader.folder(digest)
    assert content_hash(changed) != digest and list(cache(reader_dir).iterdir()) == []


def test_the_model_worker_gets_a_target_models_artifact_fetched_first(s3, tmp_path):
    """What the API calls (on a thread) before it asks the model worker, which has no credentials, to load a
    target model: its artifacts are in the cache the worker reads."""
    digest = (
        ArtifactStore.from_settings(settings_for(tmp_path / "api", s3, "worker/"))
        .add_archive(io.BytesIO(MINIMAL_ARCHIVE), LIMITS)
        .digest
    )
    plugins = Plugins(allowlist=set(), extra=[])
    plugins.registry.backends.setdefault("transformers", TransformersBackend())
    spec = ModelSpec(name="t", backend="transformers", config={"artifact": digest})
    settings = settings_for(tmp_path / "replica", s3, "worker/")
    fetch_artifacts(settings, plugins, spec)
    assert folder_files(cache(tmp_path / "replica") / digest) == minimal_files()
    fetch_artifacts(settings, plugins, ModelSpec(name="p", backend="transformers", config={"path": "/m"}))
    with pytest.raises(ModelStoreError, match="no artifact"):
        fetch_artifacts(settings, plugins, ModelSpec(name="x", backend="transformers", config={"artifact": "1" * 64}))


async def test_the_worker_client_fetches_before_it_asks_the_worker_to_load(tmp_path):
    from dynaforge.inference.backends import InferenceError
    from dynaforge.inference.remote import WorkerInferenceClient
    from dynaforge.services.platform import _inference_client

    steps: list[str] = []

    def prepare(spec: ModelSpec) -> None:
        steps.append(f"prepare {spec.name}")
        if spec.name == "missing":
            raise ModelStoreError("no artifact 111")

    async def request(message: dict, timeout_s: float) -> dict:
        steps.append(f"{message['op']} {message['spec']['name']}")
        return {"ok": True}

    client = WorkerInferenceClient(prepare=prepare)
    client._request = request  # type: ignore[method-assign]
    try:
        await client._load(ModelSpec(name="t", backend="transformers", config={"artifact": "1" * 64}))
        with pytest.raises(InferenceError, match="'missing' could not be fetched: no artifact 111"):
            await client._load(ModelSpec(name="missing", backend="transformers", config={"artifact": "1" * 64}))
    finally:
        await client.close()
    assert steps == ["prepare t", "load t", "prepare missing"]

    # The server's worker client is given the store's fetch.
    settings = settings_for(tmp_path)
    plugins = Plugins(allowlist=set())
    worker = _inference_client(settings, plugins)
    try:
        assert worker._prepare.func is fetch_artifacts and worker._prepare.args == (settings, plugins)
    finally:
        await worker.close()


PROBE = """
import json, os
where = os.environ.get("ENV_PROBE_DIR")
if where:
    with open(os.path.join(where, f"{os.getpid()}.json"), "w") as fh:
        json.dump({
            "command": open("/proc/self/cmdline", "rb").read().split(b"\\0")[2:3][0].decode(errors="replace"),
            "aws": sorted(n for n in os.environ if n.startswith("AWS_")),
            "store_url": os.environ.get("DYNAFORGE_MODEL_STORE_URL"),
        }, fh)
"""


async def test_an_upload_in_the_bucket_is_evaluated_by_a_model_without_credentials(
    site,  # noqa: F811
    tiny_bert,  # noqa: F811
    s3,
    tmp_path,
    monkeypatch,
):
    p = site["p"]
    p.settings.model_store_url = f"s3://{BUCKET}/site/"
    p.settings.model_store_endpoint = s3["endpoint"]
    archive = tar_archive(folder_files(tiny_bert), folder="tiny-bert")
    payload = await uploaded(site, archive, options={"text_fields": ["text"]})
    assert payload["__typename"] == "ModelUploaded", payload
    digest = payload["artifact"]
    assert f"site/{digest}/{MANIFEST}" in keys(s3, "site/")

    # The job runs where the upload's copy is not (another machine): an empty cache.
    shutil.rmtree(cache(p.settings.data_dir))
    async with p.db.session() as s:
        model = await s.scalar(select(ModelRow).where(ModelRow.name == "tiny-bert"))
        [evaluation_id] = list(await s.scalars(select(Evaluation.id).where(Evaluation.model_id == model.id)))
    for key, value in toy_process_env(tmp_path / "toy", p.settings.database_url).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("DYNAFORGE_DATA_DIR", raising=False)  # the child gets it from the settings
    probes, site_dir = tmp_path / "probes", tmp_path / "probe-site"
    probes.mkdir()
    site_dir.mkdir()
    (site_dir / "sitecustomize.py").write_text(PROBE, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site_dir), os.environ["PYTHONPATH"]]))
    monkeypatch.setenv("ENV_PROBE_DIR", str(probes))
    p.settings.load_plugins = "toy"
    status = await asyncio.to_thread(run_in_child, p.settings, evaluation_id)
    async with p.db.session() as s:
        evaluation = await s.get(Evaluation, evaluation_id)
    assert status == 0 and evaluation.status == EvaluationStatus.DONE, evaluation.error
    assert 0.0 <= evaluation.metrics["accuracy"] <= 1.0
    assert folder_files(cache(p.settings.data_dir) / digest) == folder_files(tiny_bert)

    seen = {probe["command"]: probe for probe in (json.loads(f.read_text()) for f in probes.iterdir())}
    job, model_process = seen["dynaforge.services.evaluation_runner"], seen["dynaforge.evaluation.predictor"]
    # The job had the bucket and its credentials; the model's process neither, and it loaded the cached copy.
    assert job["store_url"] == f"s3://{BUCKET}/site/" and set(CREDENTIALS) <= set(job["aws"])
    assert model_process["aws"] == [] and model_process["store_url"] is None


def test_collection_deletes_unreferenced_artifacts_from_the_bucket_and_every_cache(s3, tmp_path):
    """What nothing names goes from the bucket (the manifest first) and from the collecting replica's cache; another
    replica's collection then drops its cached copy; an upload cut short (files without a manifest) goes as a
    leftover. A referenced artifact stays, and so does everything stored or touched after the cut-off."""
    replica_a, replica_b = tmp_path / "a", tmp_path / "b"
    store = ArtifactStore.from_settings(settings_for(replica_a, s3, "gc/"))
    kept = store.add_archive(io.BytesIO(MINIMAL_ARCHIVE), LIMITS).digest
    gone = store.add_archive(io.BytesIO(tar_archive({**minimal_files(), "README.md": b"# Another\n"})), LIMITS)
    cut_short = "c" * 64
    s3["client"].put_object(Bucket=BUCKET, Key=f"gc/{cut_short}/config.json", Body=b"{}")
    other = ArtifactStore.from_settings(settings_for(replica_b, s3, "gc/"))
    other.folder(gone.digest)  # downloaded into replica b's cache
    assert store.storage.size(gone.digest) == gone.size == other.storage.size(gone.digest)

    young = store.collect(set(), time.time() - 60)  # all of it stored within the last minute
    assert (young.removed, sorted(young.young), young.leftovers) == ({}, sorted([kept, gone.digest, cut_short]), 0)
    # A stamp taken before another upload of the same files touched it: not removed.
    assert store.claim(gone.digest) and store.storage.stamp(gone.digest) != gone.stamp
    assert store.storage.remove(gone.digest, stamp=gone.stamp) is None and store.exists(gone.digest)

    collected = store.collect({kept}, time.time() + 60)
    assert (list(collected.removed), collected.leftovers) == ([gone.digest], 1)
    assert keys(s3, "gc/") == sorted(f"gc/{kept}/{name}" for name in [*minimal_files(), MANIFEST])
    assert [p.name for p in cache(replica_a).iterdir()] == [kept]
    assert not other.claim(gone.digest)  # the bucket's copy is gone, whatever replica b's cache holds
    dropped = other.collect({kept}, time.time() + 60)
    assert (dropped.removed, dropped.cached) == ({}, 1) and list(cache(replica_b).iterdir()) == []
    assert folder_files(other.folder(kept)) == minimal_files()
