"""dynaforge-client: a typed Python client for Dynaforge servers.

``Client(url, token)`` (blocking) and ``AsyncClient`` (asyncio) wrap the generated, typed GraphQL layer
(:mod:`dynaforge_client._generated`, made from the server's schema.graphql by ariadne-codegen). Errors the server
reports are :mod:`dynaforge_client.errors` exceptions; live events are :class:`dynaforge_client.events.EventStream`.
"""

from . import errors
from .client import AsyncClient
from .errors import DynaforgeError, FieldError, InvalidInput, NotAuthenticated, NotFound, RateLimited
from .events import EventStream, Gap
from .results import Leaderboard, ModelResults
from .sync import Client

__version__ = "0.1.0"

__all__ = [
    "AsyncClient",
    "Client",
    "DynaforgeError",
    "EventStream",
    "FieldError",
    "Gap",
    "InvalidInput",
    "Leaderboard",
    "ModelResults",
    "NotAuthenticated",
    "NotFound",
    "RateLimited",
    "errors",
    "__version__",
]
