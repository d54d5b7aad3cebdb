"""Trusted documents: GraphQL operations registered ahead of time, sent by id, and (optionally) the only ones run.

A client built with its operations known at build time (the web app; GraphQL Code Generator's client preset writes
them to ``persisted-documents.json``) registers them with the server as a JSON object mapping each document's id to
its text, named by ``DYNAFORGE_TRUSTED_DOCUMENTS``. The client may then send the id instead of the text:

* ``{"documentId": "<id>", "variables": {...}}`` (POST) or ``?documentId=<id>&variables=...`` (GET), the GraphQL
  over HTTP persisted-documents form; an id may carry a ``sha256:`` prefix or not;
* ``{"extensions": {"persistedQuery": {"version": 1, "sha256Hash": "<hex>"}}}``, the form Apollo's and urql's
  persisted-query links send.

With ``DYNAFORGE_TRUSTED_DOCUMENTS_ONLY=true`` the server runs nothing else: a document sent as text runs only if it
is registered (its SHA-256 is compared, so any id scheme in the file works), over HTTP and websockets alike; anything
else is refused before it is parsed, with the code ``DOCUMENT_NOT_TRUSTED``. Documents are never registered at run
time: an unknown id is an error, not an invitation to send the text.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from graphql import GraphQLError
from strawberry.extensions import SchemaExtension

from dynaforge.settings import Settings

log = logging.getLogger(__name__)

NOT_TRUSTED = "DOCUMENT_NOT_TRUSTED"
UNKNOWN_DOCUMENT = "PERSISTED_QUERY_NOT_FOUND"


def document_hash(text: str) -> str:
    """The SHA-256 of a document's text, in hex (what persisted-query links send as ``sha256Hash``)."""
    return hashlib.sha256(text.encode()).hexdigest()


class TrustedDocuments:
    """The registered documents: text by id, and the SHA-256 of every text."""

    def __init__(self, by_id: dict[str, str]):
        self.by_id = dict(by_id)
        self.by_hash = {document_hash(text): text for text in self.by_id.values()}

    @classmethod
    def load(cls, path: Path) -> TrustedDocuments:
        """Read a manifest (a JSON object: id -> document text); a bad one raises ValueError saying what to fix."""
        try:
            manifest = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValueError(f"DYNAFORGE_TRUSTED_DOCUMENTS: cannot read {path}: {exc.strerror or exc}") from exc
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"DYNAFORGE_TRUSTED_DOCUMENTS: {path} is not JSON: {exc}") from exc
        if not isinstance(manifest, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and k and v.strip() for k, v in manifest.items()
        ):
            raise ValueError(
                f"DYNAFORGE_TRUSTED_DOCUMENTS: {path} must be a JSON object mapping each document id to the "
                'document\'s text, e.g. {"sha256:ab12...": "query Tasks { tasks { code } }"}'
            )
        return cls(manifest)

    def text(self, document_id: str) -> str | None:
        """The document registered under ``document_id`` (with or without a ``sha256:`` prefix), or whose SHA-256
        it is."""
        bare = document_id.removeprefix("sha256:")
        return self.by_id.get(document_id) or self.by_id.get(bare) or self.by_hash.get(bare.lower())

    def trusted(self, text: str) -> bool:
        return document_hash(text) in self.by_hash

    def __len__(self) -> int:
        return len(self.by_id)


@lru_cache(maxsize=8)
def _load(path: str, mtime_ns: int) -> TrustedDocuments:  # keyed by mtime: an edited file is read again
    return TrustedDocuments.load(Path(path))


def trusted_documents(path: Path | None) -> TrustedDocuments:
    """The documents registered in ``path`` (none without one)."""
    if path is None:
        return TrustedDocuments({})
    try:
        mtime_ns = Path(path).stat().st_mtime_ns
    except OSError as exc:
        raise ValueError(f"DYNAFORGE_TRUSTED_DOCUMENTS: cannot read {path}: {exc.strerror or exc}") from exc
    return _load(str(path), mtime_ns)


def registered_documents(settings: Settings) -> TrustedDocuments:
    """The documents registered with this server: the operator's (``TRUSTED_DOCUMENTS``) and those of the built web
    app (its ``persisted-documents.json``, see :mod:`dynaforge.webapp`), so that the app sends ids, and runs under
    ``TRUSTED_DOCUMENTS_ONLY`` too. A broken web manifest is skipped with a warning: the API runs without it."""
    from dynaforge.webapp import manifest_path

    configured = trusted_documents(settings.trusted_documents)
    web = manifest_path(settings)
    if web is None:
        return configured
    try:
        app = trusted_documents(web)
    except ValueError as exc:
        log.warning("the web app's documents are not registered: %s", exc)
        return configured
    return TrustedDocuments({**app.by_id, **configured.by_id})


def requested_document_id(data: dict[str, Any]) -> str | None:
    """The id a request body (or its query parameters) names instead of a text, if any; a malformed one raises
    ValueError saying what to send."""
    document_id = data.get("documentId")
    if document_id is None:
        persisted = (data.get("extensions") or {}).get("persistedQuery")
        if persisted is None:
            return None
        if not isinstance(persisted, dict) or not isinstance(persisted.get("sha256Hash"), str):
            raise ValueError('extensions.persistedQuery must be {"version": 1, "sha256Hash": "<hex>"}')
        document_id = persisted["sha256Hash"]
    if not isinstance(document_id, str) or not document_id.strip():
        raise ValueError("documentId must be a non-empty string")
    return document_id.strip()


class OnlyTrustedDocuments(SchemaExtension):
    """Refuses any document that is not registered (``DYNAFORGE_TRUSTED_DOCUMENTS_ONLY``), without parsing it.

    The refusal must reach clients the way a validation error does (a request error over HTTP, an ``error`` message
    over graphql-transport-ws), so the operation goes on with a placeholder document in place of the refused text
    and the refusal as its validation result; nothing of the refused text is parsed, validated or run.
    """

    PLACEHOLDER = "{ __typename }"

    def __init__(self, documents: TrustedDocuments):
        self.documents = documents
        self.refused = False

    def on_operation(self) -> Iterator[None]:
        context = self.execution_context
        if context.query is not None and not self.documents.trusted(context.query):
            self.refused = True
            context.query = self.PLACEHOLDER
            # The request's operation name named an operation of the refused text: left in place, the placeholder
            # has no such operation and the refusal would surface as "Unknown operation" (a 400 over HTTP, a
            # masked error over websockets) instead of DOCUMENT_NOT_TRUSTED. strawberry has no setter for it.
            context._provided_operation_name = None
        yield

    def on_validate(self) -> Iterator[None]:
        if self.refused:
            self.execution_context.pre_execution_errors = [
                GraphQLError(
                    "This server runs only its registered (trusted) documents, and this one is not among them; "
                    "send the id of a registered document, or register this one with the client's build",
                    extensions={"code": NOT_TRUSTED},
                )
            ]
        yield
