"""Uploaded images: safe decoding (a decompression bomb, a file whose name lies, SVG, truncated data), EXIF and GPS
stripped before anything is stored, storage by content hash, and reading back only for the uploader and admins;
the module, the service and the API over HTTP (multipart upload, GET /media), on SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import io
import json
import struct
import zlib

import httpx
import pytest
from PIL import Image, ImageStat
from sqlalchemy import select
from support import GraphQLClient, make_user, register_user
from toy_plugin import ToyPlugin, ToyTask

from dynaforge import ChoiceField, ImageField, ModelSpec, Role, hookimpl, media
from dynaforge.app import create_app
from dynaforge.db.models import ExampleMedia
from dynaforge.errors import InvalidInput, NotFound
from dynaforge.inference.client import LocalInferenceClient
from dynaforge.plugins import Plugins
from dynaforge.services import datasets, examples, submissions
from dynaforge.services import media as service
from dynaforge.services import tasks as task_service
from dynaforge.services.actor import Actor
from dynaforge.services.evaluation_runner import Runner
from dynaforge.services.platform import Platform


def png(width: int = 24, height: int = 16, colour=(200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, format="PNG")
    return out.getvalue()


def located_jpeg() -> bytes:
    """A JPEG a phone might send: EXIF with a camera, a GPS position and an orientation (rotated 90°)."""
    image = Image.new("RGB", (40, 20), (10, 120, 200))
    exif = Image.Exif()
    exif[0x010F] = "PhoneMaker"  # Make
    exif[0x0112] = 6  # Orientation: rotate 90° clockwise to show it upright
    gps = {1: "N", 2: (51.0, 30.0, 12.0), 3: "W", 4: (0.0, 7.0, 39.0)}
    exif[0x8825] = gps  # GPSInfo
    out = io.BytesIO()
    image.save(out, format="JPEG", exif=exif.tobytes())
    return out.getvalue()


def bomb(side: int = 20_000) -> bytes:
    """A tiny PNG whose header claims side × side pixels (its data is a few hundred bytes of zeros)."""
    raw = zlib.compress(b"\x00" * (side // 8 + 1) * 64, 9)  # far fewer rows than claimed: only the header matters

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)  # 1-bit greyscale
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def test_an_image_is_cleaned_and_named_by_its_stored_bytes():
    decoded = media.decode_image(located_jpeg())
    assert (decoded.width, decoded.height, decoded.source_format) == (20, 40, "JPEG")  # turned upright
    stored = Image.open(io.BytesIO(decoded.png))
    assert stored.format == "PNG"
    assert not stored.getexif() and "exif" not in stored.info and "icc_profile" not in stored.info
    assert b"PhoneMaker" not in decoded.png and b"GPS" not in decoded.png
    assert media.is_media_key(decoded.sha256)
    # The same picture gives the same key.
    assert media.decode_image(located_jpeg()).sha256 == decoded.sha256


@pytest.mark.parametrize(
    ("data", "rule"),
    [
        (bomb(), "max_pixels"),
        (b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', "file_type"),
        (b"%PDF-1.7 this is not a picture", "file_type"),
        (b"", "file_type"),
        (png()[:60], "decode"),
    ],
    ids=["decompression bomb", "svg", "pdf named .png", "empty", "truncated"],
)
def test_what_is_refused(data, rule):
    with pytest.raises(media.MediaRefused) as caught:
        media.decode_image(data, media.ImageLimits(max_pixels=4_000_000))
    assert caught.value.rule == rule


def test_limits_of_size_and_format():
    with pytest.raises(media.MediaRefused) as caught:
        media.decode_image(png(), media.ImageLimits(max_bytes=10))
    assert caught.value.rule == "max_bytes"
    with pytest.raises(media.MediaRefused) as caught:
        media.decode_image(png(300, 10), media.ImageLimits(max_side=256))
    assert caught.value.rule == "max_pixels"
    with pytest.raises(media.MediaRefused) as caught:
        media.decode_image(located_jpeg(), media.ImageLimits(formats=("PNG",)))
    assert caught.value.rule == "file_type"


def test_the_store_keeps_one_copy_and_checks_what_it_reads(tmp_path):
    store = media.MediaStore(tmp_path)
    decoded = media.decode_image(png())
    assert store.put(decoded) is True and store.put(decoded) is False
    assert store.get(decoded.sha256) == decoded.png
    assert store.get("0" * 64) is None
    store.path(decoded.sha256).write_bytes(b"tampered")
    with pytest.raises(OSError, match="does not match"):
        store.get(decoded.sha256)
    with pytest.raises(ValueError):
        store.path("../../etc/passwd")
    thumb = Image.open(io.BytesIO(media.thumbnail(media.decode_image(png(640, 320)).png)))
    assert thumb.size == (160, 80)


@pytest.fixture
def data_dir(platform, tmp_path):
    platform.settings.data_dir = tmp_path
    return tmp_path


async def test_uploads_are_read_back_by_their_uploader_and_admins_only(platform, data_dir):
    alice, bob = await make_user(platform, "user_alice"), await make_user(platform, "user_bob")
    admin = await make_user(platform, "user_admin", admin=True)
    first = await service.upload_image(platform, alice, located_jpeg())
    assert first.stored and first.row.uploaded_by == alice.user_id
    again = await service.upload_image(platform, alice, located_jpeg())
    assert not again.stored and again.row.id == first.row.id
    key = first.row.sha256
    _, data = await service.read_image(platform, alice, key)
    assert Image.open(io.BytesIO(data)).size == (20, 40)
    await service.read_image(platform, admin, key)
    with pytest.raises(NotFound):
        await service.read_image(platform, bob, key)
    # Bob uploading the same picture stores nothing more, and may read it from then on.
    bobs = await service.upload_image(platform, bob, located_jpeg())
    assert not bobs.stored and bobs.row.id != first.row.id
    await service.read_image(platform, bob, key)
    assert len(list((data_dir / "media").rglob("*.png"))) == 1
    with pytest.raises(InvalidInput) as caught:
        await service.upload_image(platform, alice, bomb())
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("file", "max_pixels")]
    assert len(list((data_dir / "media").rglob("*.png"))) == 1  # nothing stored for a refused upload


UPLOAD = """mutation($i: UploadMediaInput!) { uploadMedia(input: $i) { __typename
  ... on MediaUploaded { stored image { key width height contentType sourceFormat url thumbnailUrl } }
  ... on InvalidInput { fieldErrors { field rule message } } } }"""


async def _upload(client, token: str | None, content: bytes, name: str = "photo.jpg") -> dict:
    response = await client.post(
        "/graphql",
        data={
            "operations": json.dumps({"query": UPLOAD, "variables": {"i": {"file": None}}}),
            "map": json.dumps({"0": ["variables.i.file"]}),
        },
        files={"0": (name, content, "application/octet-stream")},
        headers={"Apollo-Require-Preflight": "true", **({"Authorization": f"Bearer {token}"} if token else {})},
    )
    return response.json()


async def test_upload_and_read_back_over_http(client, gql, data_dir):
    alice, _ = await register_user(gql, "alice")
    bob, _ = await register_user(gql, "bob")
    body = await _upload(client, alice, located_jpeg())
    result = body["data"]["uploadMedia"]
    assert result["__typename"] == "MediaUploaded" and result["stored"] is True
    image = result["image"]
    assert (image["width"], image["height"], image["contentType"], image["sourceFormat"]) == (
        20,
        40,
        "image/png",
        "JPEG",
    )
    got = await client.get(image["url"], headers={"Authorization": f"Bearer {alice}"})
    assert got.status_code == 200 and got.headers["content-type"] == "image/png"
    assert got.headers["x-content-type-options"] == "nosniff"
    assert b"GPS" not in got.content and Image.open(io.BytesIO(got.content)).size == (20, 40)
    thumb = await client.get(image["thumbnailUrl"], headers={"Authorization": f"Bearer {alice}"})
    assert thumb.status_code == 200
    # Another user, nobody, a key that names nothing: all the same 404 (or 401 without a token).
    assert (await client.get(image["url"], headers={"Authorization": f"Bearer {bob}"})).status_code == 404
    assert (await client.get("/media/" + "0" * 64, headers={"Authorization": f"Bearer {alice}"})).status_code == 404
    assert (await client.get("/media/not-a-key", headers={"Authorization": f"Bearer {alice}"})).status_code == 404
    assert (await client.get(image["url"])).status_code == 401
    # A PDF named .png, a bomb: typed errors, nothing stored.
    refused = (await _upload(client, alice, b"%PDF-1.7 not a picture", "cat.png"))["data"]["uploadMedia"]
    assert refused["__typename"] == "InvalidInput"
    assert [(e["field"], e["rule"]) for e in refused["fieldErrors"]] == [(["file"], "file_type")]
    exploded = (await _upload(client, alice, bomb(), "small.png"))["data"]["uploadMedia"]
    assert exploded["fieldErrors"][0]["rule"] == "max_pixels"
    assert (await _upload(client, None, png()))["data"]["uploadMedia"]["__typename"] == "NotAuthenticated"


def colour_model(inputs):
    """Reads the picture itself: 'good' for a mostly red one, 'bad' otherwise."""
    answers = []
    for item in inputs:
        picture = Image.open(io.BytesIO(base64.b64decode(item["picture"]["png_base64"]))).convert("RGB")
        red, _, blue = ImageStat.Stat(picture).sum
        answers.append({"label": "good" if red > blue else "bad", "probabilities": {}})
    return answers


class PictureTask(ToyTask):
    """The toy task with a picture to label instead of a text."""

    code = "pictures"
    name = "Pictures"
    fields = (
        ImageField(name="picture", role=Role.INPUT, formats=("PNG",), max_pixels=50_000),
        ChoiceField(name="label", role=Role.TARGET),
    )
    demo_contexts = ()
    default_target_models = (ModelSpec("colour", "python", {"callable": "test_media:colour_model"}),)


class PicturePlugin:
    @hookimpl
    def register_tasks(self, register):
        register(PictureTask())


@pytest.fixture
async def pictures(db, settings, tmp_path):
    settings.data_dir = tmp_path
    plugins = Plugins(allowlist=set(), extra=[ToyPlugin(), PicturePlugin()])
    p = Platform.create(
        settings, db=db, plugins=plugins, inference=LocalInferenceClient(plugins.registry.backends, timeout_s=5.0)
    )
    await task_service.sync_registered_tasks(p)
    yield p
    await p.inference.close()


async def test_an_image_field_names_an_upload_and_shares_its_example_s_visibility(pictures):
    p = pictures
    writer, stranger = await make_user(p, "user_writer"), await make_user(p, "user_stranger")
    owner = await make_user(p, "user_owner")
    await task_service.grant_ownership(p, Actor.system(), "pictures", owner.user_id)
    image = (await service.upload_image(p, writer, png())).row
    written = await examples.submit(
        p, writer, task_code="pictures", fields={"picture": {"media": image.sha256}, "label": "bad"}
    )
    # The model read the picture (red: "good"), so the "bad" label fooled it; the row keeps the key only.
    assert written.example.fooled is True and written.example.fields["picture"] == {"media": image.sha256}
    assert written.example.prediction["label"] == "good"
    blue = (await service.upload_image(p, writer, png(colour=(10, 20, 230)))).row
    kept = await examples.submit(
        p, writer, task_code="pictures", fields={"picture": {"media": blue.sha256}, "label": "bad"}
    )
    assert kept.example.fooled is False
    # The example's readers read its image: the writer and the task's owners; nobody else, as for the example.
    await service.read_image(p, owner, image.sha256)
    with pytest.raises(NotFound):
        await service.read_image(p, stranger, image.sha256)
    # Someone else's image, a JPEG where the field takes PNG, too many pixels: refused, nothing stored.
    with pytest.raises(InvalidInput) as caught:
        await examples.submit(
            p, stranger, task_code="pictures", fields={"picture": {"media": image.sha256}, "label": "bad"}
        )
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("picture", "media")]
    photo = (await service.upload_image(p, writer, located_jpeg())).row
    with pytest.raises(InvalidInput) as caught:
        await examples.submit(
            p, writer, task_code="pictures", fields={"picture": {"media": photo.sha256}, "label": "bad"}
        )
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("picture", "file_type")]
    wide = (await service.upload_image(p, writer, png(400, 200))).row
    with pytest.raises(InvalidInput) as caught:
        await examples.submit(
            p, writer, task_code="pictures", fields={"picture": {"media": wide.sha256}, "label": "bad"}
        )
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("picture", "max_pixels")]
    with pytest.raises(InvalidInput) as caught:
        await examples.submit(p, writer, task_code="pictures", fields={"picture": "cat.png", "label": "bad"})
    assert [(e.field, e.rule) for e in caught.value.field_errors] == [("picture", "type")]
    async with p.db.session() as s:
        links = list(await s.scalars(select(ExampleMedia)))
    assert sorted((link.example_id, link.sha256) for link in links) == sorted(
        [(written.example.id, image.sha256), (kept.example.id, blue.sha256)]
    )


async def test_image_fields_in_the_api(pictures):
    app = create_app(platform=pictures, sync_tasks=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as http:
        found = await GraphQLClient(http)(
            '{ task(code: "pictures") { fields { name type formats maxPixels } } }', token=None
        )
    assert found["task"]["fields"][0] == {"name": "picture", "type": "IMAGE", "formats": ["PNG"], "maxPixels": 50_000}


async def test_an_evaluation_gives_submitted_models_the_pictures(pictures):
    p = pictures
    owner, builder = await make_user(p, "user_owner"), await make_user(p, "user_builder")
    await task_service.grant_ownership(p, Actor.system(), "pictures", owner.user_id)
    red = (await service.upload_image(p, owner, png(colour=(220, 10, 10)))).row.sha256
    blue = (await service.upload_image(p, owner, png(colour=(10, 10, 220)))).row.sha256
    # Red pictures are good, blue ones bad: a model that reads them is always right (one that could not would fail,
    # and one answering blind would be right half the time).
    rows = [("good", red), ("bad", blue)] * 6
    records = [(f"item{i}", {"picture": {"media": key}, "label": label}) for i, (label, key) in enumerate(rows)]
    await datasets.create_dataset(
        p, owner, "pictures", "colours", [(f"{k}-{n}", f) for n, (k, f) in enumerate(records)]
    )
    _, queued = await submissions.submit_model(
        p,
        builder,
        task_code="pictures",
        name="colour",
        backend="python",
        config={"callable": "test_media:colour_model"},
    )
    runner = Runner(p.settings, p.plugins, db=p.db)
    assert set((await runner.run_many([e.id for e in queued])).values()) == {"DONE"}
    [(evaluation, _)] = await submissions.evaluations_of(p, queued[0].model_id)
    assert evaluation.metrics["accuracy"] == 1.0
