"""Images people upload: decoded safely, cleaned, stored by content hash, never inline in rows.

:func:`decode_image` is the one way in for an image:

* the bytes are counted before anything is decoded (``max_bytes``);
* the format is read from the content, never from a name or a declared type, and must be one the caller allows
  (PNG, JPEG, WebP, GIF by default); anything else, SVG included (Pillow cannot render it, and it could carry script),
  is refused;
* Pillow's decompression-bomb guard is set to the caller's ``max_pixels`` (its warning is an error here), and the
  header's size is checked against ``max_pixels`` and ``max_side`` before the pixels are decoded;
* the picture is turned upright by its EXIF orientation, then re-encoded as a PNG from its pixels alone: EXIF (GPS
  location included), XMP, ICC profiles, comments and every other chunk are gone before anything is stored or shown.
  An animation keeps its first frame.

What is stored is that PNG, under the SHA-256 of its bytes (:class:`MediaStore`), so the same picture uploaded
twice is stored once, and the hash is the media's identity in example fields (``{"media": "<sha256>"}``).
Thumbnails (:func:`thumbnail`) are made from the stored PNG; models receive the PNG itself in base64
(:func:`with_pictures`). Pillow is imported only here, and only when an image is handled.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

#: What every image becomes once cleaned.
STORED_TYPE = "image/png"
#: The formats an image field accepts unless it says otherwise (Pillow's names).
DEFAULT_FORMATS = ("PNG", "JPEG", "WEBP", "GIF")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class MediaRefused(ValueError):
    """An upload that is not an image the limits allow; ``rule`` says which rule it broke (``max_bytes``,
    ``file_type``, ``max_pixels``, ``decode``), ``message`` what to do."""

    def __init__(self, rule: str, message: str):
        super().__init__(message)
        self.rule = rule
        self.message = message


@dataclass(frozen=True)
class ImageLimits:
    """What an image may be: its formats (by content), its pixels (width × height), its longest side and its bytes
    as uploaded."""

    formats: tuple[str, ...] = DEFAULT_FORMATS
    max_pixels: int = 16_000_000
    max_side: int = 8192
    max_bytes: int = 10 * 1024 * 1024


@dataclass(frozen=True)
class DecodedImage:
    """A cleaned image: the PNG to store, its SHA-256 (its identity), its size and the format it came in."""

    png: bytes
    sha256: str
    width: int
    height: int
    source_format: str


def is_media_key(value: object) -> bool:
    """Whether ``value`` is the hash a stored media goes by."""
    return isinstance(value, str) and bool(_SHA256.match(value))


def decode_image(data: bytes, limits: ImageLimits = ImageLimits()) -> DecodedImage:
    """Check and clean an uploaded image (see the module docstring); :class:`MediaRefused` says why not."""
    if len(data) > limits.max_bytes:
        raise MediaRefused("max_bytes", f"the file has {len(data)} bytes; an image may have at most {limits.max_bytes}")
    if not data:
        raise MediaRefused("file_type", "the file is empty: upload a PNG, JPEG, WebP or GIF image")
    from PIL import Image, ImageOps, UnidentifiedImageError  # noqa: PLC0415  (only when an image is handled)

    allowed = ", ".join(limits.formats)
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        previous = Image.MAX_IMAGE_PIXELS
        Image.MAX_IMAGE_PIXELS = limits.max_pixels
        try:
            try:
                image = Image.open(io.BytesIO(data), formats=list(limits.formats))
            except UnidentifiedImageError as exc:
                raise MediaRefused(
                    "file_type", f"the file is not an image of an accepted format ({allowed}), whatever its name says"
                ) from exc
            except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
                raise MediaRefused("max_pixels", f"the image has too many pixels: at most {limits.max_pixels}") from exc
            width, height = image.size
            if width * height > limits.max_pixels or max(width, height) > limits.max_side:
                raise MediaRefused(
                    "max_pixels",
                    f"the image is {width}×{height}: at most {limits.max_pixels} pixels and {limits.max_side} a side",
                )
            source_format = str(image.format)
            try:
                image.seek(0)  # an animation keeps its first frame
                image.load()
                upright = ImageOps.exif_transpose(image)
            except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
                raise MediaRefused("max_pixels", f"the image has too many pixels: at most {limits.max_pixels}") from exc
            except (OSError, ValueError, SyntaxError) as exc:  # truncated or corrupt data
                raise MediaRefused(
                    "decode", "the image could not be read (truncated or corrupt): upload it again"
                ) from exc
        finally:
            Image.MAX_IMAGE_PIXELS = previous
    if upright.mode in ("1", "L", "I", "I;16", "F"):
        mode = "L"
    elif _has_alpha(upright):
        mode = "RGBA"
    else:
        mode = "RGB"
    # A new image from the pixels alone: no info, no EXIF, no profile travels into the stored file.
    pixels = upright.convert(mode)
    clean = Image.new(mode, pixels.size)
    clean.paste(pixels)
    out = io.BytesIO()
    clean.save(out, format="PNG", optimize=True)
    png = out.getvalue()
    return DecodedImage(png, hashlib.sha256(png).hexdigest(), clean.width, clean.height, source_format)


def _has_alpha(image: object) -> bool:
    mode = getattr(image, "mode", "")
    return mode in ("RGBA", "LA", "PA") or (mode == "P" and "transparency" in getattr(image, "info", {}))


def thumbnail(png: bytes, size: int = 160) -> bytes:
    """A PNG no larger than ``size`` a side, from a stored (already cleaned) PNG."""
    from PIL import Image  # noqa: PLC0415

    with Image.open(io.BytesIO(png), formats=["PNG"]) as image:
        image.thumbnail((size, size))
        out = io.BytesIO()
        image.save(out, format="PNG", optimize=True)
        return out.getvalue()


class MediaStore:
    """Stored media by content hash, under ``<data dir>/media/<aa>/<sha256>.png``; written to a temporary file and
    renamed into place, so a reader never sees half of one; never changed once stored."""

    def __init__(self, root: Path):
        self.root = Path(root)

    @classmethod
    def under(cls, data_dir: Path) -> MediaStore:
        """The store of a data directory (``DYNAFORGE_DATA_DIR``): its ``media/`` folder."""
        return cls(Path(data_dir) / "media")

    def path(self, sha256: str) -> Path:
        if not is_media_key(sha256):
            raise ValueError(f"not a media key: {sha256!r}")
        return self.root / sha256[:2] / f"{sha256}.png"

    def put(self, image: DecodedImage) -> bool:
        """Store ``image``; False when the same bytes were stored before (nothing is written then)."""
        target = self.path(image.sha256)
        if target.is_file():
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, staging = tempfile.mkstemp(prefix=".staging-", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(image.png)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(staging, target)
        except BaseException:
            Path(staging).unlink(missing_ok=True)
            raise
        return True

    def get(self, sha256: str) -> bytes | None:
        target = self.path(sha256)
        try:
            data = target.read_bytes()
        except FileNotFoundError:
            return None
        if hashlib.sha256(data).hexdigest() != sha256:  # what is read is what was checked
            raise OSError(f"stored media {sha256} does not match its hash")
        return data


def with_pictures(store: MediaStore, model_input: dict, field_names: list[str]) -> dict:
    """``model_input`` with each named image field's ``{"media": key}`` given its picture too: ``png_base64``, the
    stored PNG in base64 (what a model of an image task reads; JSON carries it to any backend). A key whose image is
    gone raises ``LookupError``."""
    out = dict(model_input)
    for name in field_names:
        value = out.get(name)
        if not isinstance(value, dict) or not is_media_key(value.get("media")):
            continue
        data = store.get(value["media"])
        if data is None:
            raise LookupError(f"the image of field {name} ({value['media'][:12]}…) is no longer stored")
        out[name] = {"media": value["media"], "png_base64": base64.b64encode(data).decode("ascii")}
    return out
