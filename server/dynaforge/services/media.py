"""Uploaded images (dynaforge.media): who may upload them, where they are stored, who may read them back.

Signed-in users upload images (``upload_image``), at most ``media_uploads_per_hour`` an hour each, each at most
``media_max_mb`` and ``media_max_pixels``. The picture is decoded safely and cleaned (EXIF, GPS location included,
and every other metadata dropped) before it is stored, by the SHA-256 of the cleaned PNG, under
``DYNAFORGE_DATA_DIR/media/``; a ``media`` row records that the uploader holds it (the same picture uploaded by two
people is stored once, with a row each). Nothing is stored for a refused upload.

An example names an image by its key in an image field (``{"media": key}``); ``examples.check_images`` makes sure,
when the example is stored, that its writer uploaded each image and that it fits the field's formats and pixels, and
the example's links (``example_media``) are written in the example's own transaction. Reading one back
(``read_image``) is for whoever uploaded it, admins, and whoever may read an example that names it (the example's
own visibility rules: a hidden set's images are as secret as its text); anyone else gets NotFound, exactly like a
key that names nothing, so a key reveals nothing by being tried.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from dynaforge import media
from dynaforge.db.models import ExampleMedia, Media
from dynaforge.errors import FieldError, Forbidden, InvalidInput, NotAuthenticated, NotFound
from dynaforge.services import examples as example_service
from dynaforge.services.actor import Actor, require_human
from dynaforge.services.platform import Platform


@dataclass(frozen=True)
class Uploaded:
    row: Media
    stored: bool  # False: the same picture was stored before


def store(p: Platform) -> media.MediaStore:
    return media.MediaStore.under(p.settings.data_dir)


def limits(p: Platform) -> media.ImageLimits:
    return media.ImageLimits(
        max_pixels=p.settings.media_max_pixels, max_bytes=int(p.settings.media_max_mb * 1024 * 1024)
    )


async def upload_image(p: Platform, actor: Actor, data: bytes) -> Uploaded:
    """Check, clean and store an image the signed-in user uploads."""
    actor = require_human(actor)
    if p.settings.media_uploads_per_hour:
        await p.limiter.hit(f"media:{actor.person_id}", p.settings.media_uploads_per_hour, 3600.0, "image uploads")
    try:
        decoded = await asyncio.to_thread(media.decode_image, data, limits(p))
    except media.MediaRefused as exc:
        raise InvalidInput.from_errors([FieldError("file", exc.rule, exc.message)]) from exc
    stored = await asyncio.to_thread(store(p).put, decoded)
    row = Media(
        sha256=decoded.sha256,
        content_type=media.STORED_TYPE,
        width=decoded.width,
        height=decoded.height,
        size=len(decoded.png),
        source_format=decoded.source_format,
        uploaded_by=actor.person_id,
    )
    held = select(Media).where(col(Media.sha256) == decoded.sha256, col(Media.uploaded_by) == actor.person_id)
    try:
        async with p.db.write() as s:
            existing = await s.scalar(held)
            if existing is not None:
                return Uploaded(existing, stored)
            s.add(row)
    except IntegrityError:  # the same user uploaded the same picture at the same moment
        async with p.db.session() as s:
            existing = await s.scalar(held)
        if existing is None:
            raise
        return Uploaded(existing, stored)
    return Uploaded(row, stored)


#: How many examples naming an image are tried before a reader is refused it (each is checked with its own rules).
MAX_EXAMPLES_TRIED = 20


async def visible_media(p: Platform, actor: Actor, sha256: str) -> Media:
    """The media row the caller may read: their own upload, anyone's for admins, or one an example they may read
    names; NotFound otherwise."""
    if not media.is_media_key(sha256) or actor.user_id is None and not actor.is_system:
        raise NotFound("No such image")
    async with p.db.session() as s:
        query = select(Media).where(col(Media.sha256) == sha256)
        row = await s.scalar(query.order_by(col(Media.uploaded_by) != actor.user_id, col(Media.id)).limit(1))
        if row is None:
            raise NotFound("No such image")
        if actor.is_admin or row.uploaded_by == actor.user_id:
            return row
        example_ids = list(
            await s.scalars(
                select(col(ExampleMedia.example_id))
                .where(col(ExampleMedia.sha256) == sha256)
                .order_by(col(ExampleMedia.example_id).desc())
                .limit(MAX_EXAMPLES_TRIED)
            )
        )
    for example_id in example_ids:
        try:
            await example_service.get_example(p, actor, example_id)
        except (NotFound, Forbidden, NotAuthenticated):
            continue
        return row
    raise NotFound("No such image")


async def read_image(p: Platform, actor: Actor, sha256: str, *, thumb: bool = False) -> tuple[Media, bytes]:
    """The stored PNG (or a thumbnail of it) of an image the caller may read."""
    row = await visible_media(p, actor, sha256)
    data = await asyncio.to_thread(store(p).get, sha256)
    if data is None:
        raise NotFound("The image is no longer stored")
    if thumb:
        data = await asyncio.to_thread(media.thumbnail, data)
    return row, data
