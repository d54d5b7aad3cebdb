"""Calls to the generated layer: errors translated, reads retried, writes retried only when nothing was sent."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx

from . import errors
from ._generated.exceptions import GraphQLClientGraphQLMultiError, GraphQLClientHttpError

log = logging.getLogger("dynaforge_client")
T = TypeVar("T")

# HTTP statuses a proxy or an overloaded server answers and a later try may not
_RETRY_STATUSES = {429, 502, 503, 504}


def translate(exc: BaseException) -> errors.DynaforgeError | None:
    """The client's exception for a failure of the generated layer or of httpx; None for anything else."""
    if isinstance(exc, GraphQLClientGraphQLMultiError):
        first = exc.errors[0].original if exc.errors else {"message": str(exc)}
        return errors.from_graphql_error(first or {"message": str(exc)})
    if isinstance(exc, GraphQLClientHttpError):
        response: Any = exc.response
        retry_after = _retry_after(response)
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and body.get("errors"):
            error = errors.from_graphql_error(body["errors"][0])
            if error.code != "ERROR":
                return error
        return errors.TransportError(
            f"HTTP {response.status_code} from the server", status=response.status_code, retry_after=retry_after
        )
    if isinstance(exc, httpx.TimeoutException):
        return errors.TransportError(f"the server did not answer in time ({type(exc).__name__})")
    if isinstance(exc, httpx.TransportError):
        return errors.TransportError(f"cannot reach the server: {exc}")
    return None


def _retry_after(response: Any) -> float | None:
    value = getattr(response, "headers", {}).get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _retryable(exc: BaseException, error: errors.DynaforgeError | None, *, read: bool) -> bool:
    if isinstance(exc, httpx.ConnectError):
        return True  # the request was never sent: safe for writes too
    if not read or error is None:
        return False
    if isinstance(error, errors.TransportError):
        return error.status is None or error.status in _RETRY_STATUSES
    return isinstance(error, errors.RateLimited | errors.ServiceUnavailable)


async def call(factory: Callable[[], Awaitable[T]], *, read: bool, retries: int, backoff: float = 0.5) -> T:
    """Await ``factory()``; on a failure, try again up to ``retries`` times when that is safe.

    Reads (queries) are retried on connection problems, timeouts, 429/502/503/504 and the server's RATE_LIMITED and
    SERVICE_UNAVAILABLE. Writes (mutations) are retried only when the connection could not be opened, so a mutation
    never runs twice. Waits grow exponentially with jitter and honour Retry-After.
    """
    attempt = 0
    while True:
        try:
            return await factory()
        except Exception as exc:
            error = translate(exc)
            if attempt >= retries or not _retryable(exc, error, read=read):
                if error is None:
                    raise
                raise error from exc
            attempt += 1
            delay = backoff * 2 ** (attempt - 1) * (0.5 + random.random() / 2)
            if error is not None and error.retry_after:
                delay = max(delay, min(error.retry_after, 60.0))
            log.warning("retrying after %s (attempt %d of %d, in %.1f s)", error or exc, attempt, retries, delay)
            await asyncio.sleep(delay)


def unwrap(member: Any, *ok: str) -> Any:
    """A result union's member when its ``__typename`` is one of ``ok``; raises the error member's exception."""
    if getattr(member, "typename__", None) in ok:
        return member
    raise errors.from_member(member)
