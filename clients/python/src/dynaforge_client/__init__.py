"""dynaforge-client: a typed Python client for Dynaforge servers.

``Client(url, token)`` (blocking) and ``AsyncClient`` (asyncio) wrap the generated, typed GraphQL layer
(:mod:`dynaforge_client._generated`, made from the server's schema.graphql by ariadne-codegen). Errors the server
reports are :mod:`dynaforge_client.errors` exceptions; live events are :class:`dynaforge_client.events.EventStream`;
what the methods return is named in :mod:`dynaforge_client.types`.
"""

from . import errors, types
from .client import AsyncClient
from .errors import (
    AlreadyExists,
    Conflict,
    DynaforgeError,
    EmptyExport,
    FieldError,
    Forbidden,
    InvalidCredentials,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    QuotaExceeded,
    RateLimited,
    RoundClosed,
    ServiceUnavailable,
    TransportError,
)
from .events import EventStream, Gap
from .results import Leaderboard, ModelResults
from .sync import Client

__version__ = "0.1.0"

__all__ = [
    "AlreadyExists",
    "EmptyExport",
    "AsyncClient",
    "Client",
    "Conflict",
    "DynaforgeError",
    "EventStream",
    "FieldError",
    "Forbidden",
    "Gap",
    "InvalidCredentials",
    "InvalidInput",
    "Leaderboard",
    "ModelResults",
    "NotAuthenticated",
    "NotFound",
    "QuotaExceeded",
    "RateLimited",
    "RoundClosed",
    "ServiceUnavailable",
    "TransportError",
    "errors",
    "types",
    "__version__",
]
