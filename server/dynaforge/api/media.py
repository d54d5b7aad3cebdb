"""GraphQL over HTTP: which media type an answer takes, and when it is a request error.

The GraphQL-over-HTTP specification defines two response media types. ``application/json`` is the legacy one: every
well-formed request is answered 200, errors included. ``application/graphql-response+json`` lets the status code
speak: a request that never executed (its document does not parse, does not validate, or its variables do not fit)
is answered 400 and carries no ``data`` entry, while a request that executed is answered 200 even with field errors.

A client asks for the second with its ``Accept`` header. The server answers with it when the header names it at
least as strongly as ``application/json`` (a client listing both equally gets the newer one); a missing header,
``*/*`` or ``application/json`` alone keep the legacy type, so clients written against plain JSON see no change.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

GRAPHQL_RESPONSE_JSON = "application/graphql-response+json"
JSON = "application/json"


def _quality(parameters: Iterable[str]) -> float:
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "q":
            try:
                return max(0.0, min(1.0, float(value.strip())))
            except ValueError:
                return 0.0
    return 1.0


def response_media_type(accept: str | None) -> str:
    """``application/graphql-response+json`` when ``accept`` asks for it at least as strongly as
    ``application/json``, else ``application/json``."""
    if not accept or GRAPHQL_RESPONSE_JSON not in accept.lower():
        return JSON
    graphql_q, json_q = 0.0, 0.0
    for part in accept.split(","):
        media, *parameters = part.split(";")
        media = media.strip().lower()
        if media == GRAPHQL_RESPONSE_JSON:
            graphql_q = max(graphql_q, _quality(parameters))
        elif media == JSON:
            json_q = max(json_q, _quality(parameters))
    return GRAPHQL_RESPONSE_JSON if graphql_q > 0 and graphql_q >= json_q else JSON


def is_request_error(result: Any) -> bool:
    """Whether an execution result is a request error: there is no data and no error belongs to a field, so the
    operation never ran (a parse or validation failure, variables that do not fit their types, refused input)."""
    errors = getattr(result, "errors", None) or []
    return getattr(result, "data", None) is None and bool(errors) and all(not error.path for error in errors)
