"""Image uploads (uploadMedia) and what the API says of a stored image (dynaforge.services.media)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import strawberry
from starlette.requests import Request
from starlette.responses import Response
from strawberry.file_uploads import Upload

from dynaforge import errors
from dynaforge.api.context import Info
from dynaforge.api.contexts import binary_upload
from dynaforge.api.credentials import bearer_token
from dynaforge.api.errors import InvalidInput, NotAuthenticated, RateLimited, errors_as_union
from dynaforge.api.export_http import error_response
from dynaforge.db.models import Media, as_utc
from dynaforge.errors import FieldError
from dynaforge.errors import InvalidInput as InvalidInputError
from dynaforge.services import auth as auth_service
from dynaforge.services import media as service


@strawberry.type(
    description="An uploaded image as stored: cleaned of its metadata (EXIF and GPS location included) and "
    "re-encoded as PNG, named by the SHA-256 of the stored bytes."
)
class StoredImage:
    key: str = strawberry.field(description='The SHA-256 of the stored PNG: what example fields name ({"media": key}).')
    width: int = strawberry.field(description="Its width in pixels (upright, as its EXIF orientation said).")
    height: int = strawberry.field(description="Its height in pixels.")
    content_type: str = strawberry.field(description="What is stored and served: image/png.")
    size: int = strawberry.field(description="The stored PNG's bytes.")
    source_format: str = strawberry.field(description="What it was uploaded as: PNG, JPEG, WEBP or GIF.")
    url: str = strawberry.field(
        description="Where to read it back (GET, with 'Authorization: Bearer <token>'): the uploader and admins."
    )
    thumbnail_url: str = strawberry.field(description="The same, at most 160 pixels a side.")
    uploaded_at: datetime = strawberry.field(description="When it was uploaded.")

    @classmethod
    def of(cls, row: Media) -> StoredImage:
        return cls(
            key=row.sha256,
            width=row.width,
            height=row.height,
            content_type=row.content_type,
            size=row.size,
            source_format=row.source_format,
            url=f"/media/{row.sha256}",
            thumbnail_url=f"/media/{row.sha256}?thumb=1",
            uploaded_at=as_utc(row.created_at),
        )


@strawberry.input(description="An image to upload.")
class UploadMediaInput:
    file: Upload = strawberry.field(
        description="The image (PNG, JPEG, WebP or GIF, told by its content, never its name; no SVG), as a GraphQL "
        "multipart request with the header 'Apollo-Require-Preflight: true'. At most 10 MiB and 16 megapixels "
        "unless the server is configured otherwise."
    )


@strawberry.type(description="The image is checked, cleaned and stored.")
class MediaUploaded:
    image: StoredImage = strawberry.field(description="The stored image.")
    stored: bool = strawberry.field(
        description="false when the same picture was stored before: nothing was stored twice."
    )


UploadMediaResult = Annotated[
    MediaUploaded | InvalidInput | NotAuthenticated | RateLimited,
    strawberry.union(
        "UploadMediaResult",
        description="MediaUploaded, or why not (nothing is stored then): InvalidInput on `file` (rules: max_bytes, "
        "file_type: not an accepted image by its content, max_pixels: too many pixels or a decompression bomb, "
        "decode: truncated or corrupt, upload: not a multipart upload), NotAuthenticated, RateLimited (your hourly "
        "allowance of uploads is used).",
    ),
]


@strawberry.type
class MediaMutation:
    @strawberry.mutation(
        description="Signed-in users upload an image: it is decoded safely, stripped of its metadata (EXIF, GPS "
        "location included) and stored by content hash before anything else sees it."
    )
    @errors_as_union
    async def upload_media(
        self, info: Info, input: Annotated[UploadMediaInput, strawberry.argument(description="The image.")]
    ) -> UploadMediaResult:
        stream, _ = binary_upload(input.file)
        limit = int(info.context.platform.settings.media_max_mb * 1024 * 1024)
        data = stream.read(limit + 1)  # one byte more than allowed says it is too large, without reading it all
        if len(data) > limit:
            raise InvalidInputError.from_errors(
                [FieldError("file", "max_bytes", f"an image may have at most {limit} bytes")]
            )
        uploaded = await service.upload_image(*info.context.caller, data)
        return MediaUploaded(image=StoredImage.of(uploaded.row), stored=uploaded.stored)


async def media_endpoint(request: Request) -> Response:
    """``GET /media/{key}`` (``?thumb=1`` for a thumbnail): a stored image, for whoever may read it; authenticated
    like ``/graphql``. 404 for what the caller may not read, exactly like a key that names nothing."""
    platform = request.app.state.platform
    try:
        actor = await auth_service.authenticate(platform, bearer_token(request.headers))
        if actor.user_id is None:
            raise errors.NotAuthenticated(
                actor.sign_in_error or "Sign in to read images: send 'Authorization: Bearer <token>'"
            )
        thumb = request.query_params.get("thumb") in ("1", "true")
        row, data = await service.read_image(platform, actor, request.path_params["key"], thumb=thumb)
    except errors.DynaforgeError as exc:
        return error_response(exc)
    return Response(
        data,
        media_type=row.content_type,
        headers={
            "Cache-Control": "private, max-age=3600",  # never changes; private: it is someone's
            "X-Content-Type-Options": "nosniff",
            "Content-Security-Policy": "default-src 'none'; sandbox",
            "Content-Disposition": f'inline; filename="{row.sha256[:16]}.png"',
        },
    )
