"""Shared by the upload tests (test_model_upload.py, test_model_artifacts_s3.py): fixtures, registered by
conftest.py (a tiny BERT saved as a model builder saves one; a toy task with a scoring set and a signed-in
builder), and the multipart ``uploadModel`` request."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from support import GraphQLClient, make_user, register_user

from dynaforge.app import create_app
from dynaforge.db.models import DatasetAccess
from dynaforge.model_archive import ArchiveLimits
from dynaforge.services import datasets, examples, validation

MIB = 1024 * 1024
LIMITS = ArchiveLimits(max_bytes=MIB, max_file_bytes=MIB // 2, max_files=8)
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "fine", "item", "bad", "a", "day"]

UPLOAD = """mutation($input: UploadModelInput!) {
  uploadModel(input: $input) {
    __typename
    ... on ModelUploaded { artifact files size stored model { id name backend config status } }
    ... on Error { message }
    ... on InvalidInput { fieldErrors { field rule code message } }
  }
}"""


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> Path:
    """A randomly initialised two-label BERT classifier (the toy task's labels) with its tokenizer, saved with
    safetensors weights as a model builder saves one."""
    pytest.importorskip("torch")
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    torch.manual_seed(0)
    labels = {0: "bad", 1: "good"}
    config = BertConfig(
        vocab_size=len(VOCAB),
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=37,
    )
    folder = tmp_path_factory.mktemp("tiny-bert")
    BertForSequenceClassification(config).save_pretrained(folder)
    BertTokenizer(vocab={word: i for i, word in enumerate(VOCAB)}).save_pretrained(folder)
    assert (folder / "model.safetensors").is_file() and not list(folder.glob("*.bin"))
    return folder


@pytest.fixture
async def site(live_platform, tmp_path):
    """The toy task with one scoring set of four accepted examples, the model store in a temporary data directory
    (the server's settings), and a model builder signed in over HTTP."""
    p = live_platform
    p.settings.data_dir = tmp_path / "data"
    p.settings.examples_per_minute = 1000
    p.settings.eval_bootstrap_resamples = 20
    admin, author = await make_user(p, "admin1", admin=True), await make_user(p, "author1")
    for i in range(4):
        text = f"{'good' if i % 2 == 0 else 'fine'} item {i}"
        outcome = await examples.submit(p, author, task_code="toy", fields={"text": text, "label": "good"})
        await validation.validate(p, admin, outcome.example.id, "CORRECT")
    made = await datasets.build_from_round(p, admin, "toy", 1, splits=(("test", 1.0, DatasetAccess.SCORING),))
    app = create_app(platform=p, sync_tasks=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        token, _ = await register_user(GraphQLClient(http), "builder1")
        yield {"p": p, "http": http, "token": token, "admin": admin, "datasets": made}


async def upload(site, data: bytes, filename: str = "model.tar.gz", token=..., **fields):
    variables = {"input": {"taskCode": "toy", "name": "tiny-bert", "file": None, **fields}}
    headers = {"Apollo-Require-Preflight": "true"}
    bearer = site["token"] if token is ... else token
    if bearer:
        headers["Authorization"] = f"Bearer {bearer}"
    response = await site["http"].post(
        "/graphql",
        data={
            "operations": json.dumps({"query": UPLOAD, "variables": variables}),
            "map": json.dumps({"0": ["variables.input.file"]}),
        },
        files={"0": (filename, data, "application/octet-stream")},
        headers=headers,
    )
    return response


async def uploaded(site, data: bytes, **fields) -> dict:
    response = await upload(site, data, **fields)
    assert response.status_code == 200, response.text
    return response.json()["data"]["uploadModel"]
