"""Domain errors raised by services. The API turns each into a typed GraphQL result; the CLI prints them."""

from __future__ import annotations

from dataclasses import dataclass


class DynaforgeError(Exception):
    """Base class for expected failures: each carries a message that tells the caller what to do next."""

    code = "ERROR"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class FieldError:
    """One broken rule on one field: ``field`` is the field's name, ``rule`` a stable machine-readable id."""

    field: str
    rule: str
    message: str


class InvalidInput(DynaforgeError):
    code = "INVALID_INPUT"

    def __init__(self, message: str, field_errors: list[FieldError] | None = None):
        super().__init__(message)
        self.field_errors = list(field_errors or [])

    @classmethod
    def from_errors(cls, errors: list[FieldError]) -> InvalidInput:
        summary = "; ".join(f"{e.field}: {e.message}" for e in errors)
        return cls(f"Invalid input: {summary}", errors)


class NotAuthenticated(DynaforgeError):
    code = "NOT_AUTHENTICATED"


class Forbidden(DynaforgeError):
    code = "FORBIDDEN"


class NotFound(DynaforgeError):
    code = "NOT_FOUND"


class AlreadyExists(DynaforgeError):
    code = "ALREADY_EXISTS"


class InvalidCredentials(DynaforgeError):
    code = "INVALID_CREDENTIALS"


class RateLimited(DynaforgeError):
    code = "RATE_LIMITED"

    def __init__(self, message: str, retry_after_s: float):
        super().__init__(message)
        self.retry_after_s = retry_after_s


class QuotaExceeded(DynaforgeError):
    """A counted allowance is used up: examples a day, scored submissions in 24 hours, training jobs a day, a task's
    generation queries a day, webhooks per task. Unlike :class:`RateLimited` (requests too fast), asking again soon
    does not help: ``retry_after_s`` is when the allowance frees up again, or None when only removing something
    frees it (a webhook deleted). ``quota`` names the allowance (:data:`QUOTAS`) and ``limit`` its size."""

    code = "QUOTA_EXCEEDED"

    def __init__(self, message: str, *, quota: str, limit: int, retry_after_s: float | None):
        super().__init__(message)
        if quota not in QUOTAS:
            raise ValueError(f"unknown quota {quota!r}")
        self.quota, self.limit, self.retry_after_s = quota, limit, retry_after_s


#: The allowances :class:`QuotaExceeded` names, with what each counts.
QUOTAS: dict[str, str] = {
    "EXAMPLES_PER_DAY": "A task's examples per annotator and UTC day (TaskSettings.maxExamplesPerDay).",
    "SUBMISSIONS_PER_DAY": "Scored submissions (models, predictions, selections) per user and task in 24 hours.",
    "TRAINING_JOBS_PER_DAY": "Training jobs per task in 24 hours (DYNAFORGE_TRAINING_JOBS_PER_DAY).",
    "GENERATION_QUERIES_PER_DAY": "Target-model queries of a task's generation runs per UTC day.",
    "WEBHOOKS_PER_TASK": "Webhooks per user and task (delete one to register another).",
}


class RoundClosed(DynaforgeError):
    code = "ROUND_CLOSED"


class NearDuplicate(DynaforgeError):
    """A new fooling example is this close to an earlier one of its round (the task's ``nearDuplicateThreshold``):
    nothing was stored; edit it, or send it again allowing near-duplicates. ``example_id`` names the earlier example
    only when its author is the caller (another person's example stays theirs)."""

    code = "NEAR_DUPLICATE"

    def __init__(self, message: str, similarity: float, threshold: float, example_id: int | None):
        super().__init__(message)
        self.similarity, self.threshold, self.example_id = similarity, threshold, example_id


class Conflict(DynaforgeError):
    """The thing changed state meanwhile (say, an example was decided by other validators); refetch and retry."""

    code = "CONFLICT"


class PluginError(DynaforgeError):
    """A plugin broke its contract (bad registration, duplicate code...)."""

    code = "PLUGIN_ERROR"


class ServiceUnavailable(DynaforgeError):
    """A service the server needs (the database) cannot be reached right now; retrying later is the remedy."""

    code = "SERVICE_UNAVAILABLE"


#: Exception class names that mean "the database connection is gone or cannot be made" (asyncpg, SQLAlchemy, OS).
_UNREACHABLE = {
    "ConnectionDoesNotExistError",
    "CannotConnectNowError",
    "ConnectionFailureError",
    "PostgresConnectionError",
    "InterfaceError",
    "ConnectionRefusedError",
    "ConnectionResetError",
    "TooManyConnectionsError",
    "AdminShutdownError",
    "CrashShutdownError",
    "InternalClientError",
}


def database_unreachable(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what caused it) says the database could not be reached: a connection-level error raised
    through the database layers (SQLAlchemy, asyncpg, aiosqlite), not any network error of the process (a remote
    model server refusing a connection is not the database's)."""
    chain: list[BaseException] = []
    while exc is not None and len(chain) < 10:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    from_database = any(
        type(e).__module__.split(".", 1)[0] in _DATABASE_MODULES or _raised_in_database(e) for e in chain
    )
    if not from_database:
        return False
    return any(
        type(e).__name__ in _UNREACHABLE
        or getattr(e, "connection_invalidated", False)
        or (isinstance(e, OSError) and not isinstance(e, FileNotFoundError))
        for e in chain
    )


_DATABASE_MODULES = {"sqlalchemy", "asyncpg", "aiosqlite", "sqlite3"}


def _raised_in_database(exc: BaseException) -> bool:
    """Whether the exception passed through the database layers' code (e.g. a plain ConnectionRefusedError that
    asyncpg's connect lets through unwrapped)."""
    tb = exc.__traceback__
    while tb is not None:
        if str(tb.tb_frame.f_globals.get("__name__", "")).split(".", 1)[0] in _DATABASE_MODULES:
            return True
        tb = tb.tb_next
    return False


#: The largest id a row can have (the id columns are 32-bit integers on PostgreSQL).
MAX_ID = 2**31 - 1


def text_problem(value: object, _depth: int = 0) -> str | None:
    """What makes ``value`` (a string, or JSON made of them) unstorable, or None: NUL characters (PostgreSQL's text
    and JSON refuse them), unpaired UTF-16 surrogates (not Unicode text: no encoder takes them), and NaN or infinite
    numbers (not JSON)."""
    if isinstance(value, str):
        if "\x00" in value:
            return "contains a NUL character (U+0000); remove it"
        if not value.isascii() and any("\ud800" <= c <= "\udfff" for c in value):
            return "contains an unpaired surrogate (\\ud800-\\udfff), which is not Unicode text; send valid UTF-8"
        return None
    if isinstance(value, float):
        return (
            None
            if value == value and value not in (float("inf"), float("-inf"))
            else "is NaN or infinite, which JSON cannot hold"
        )
    if _depth > 64:
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            problem = text_problem(key, _depth + 1) or text_problem(item, _depth + 1)
            if problem:
                return problem
    elif isinstance(value, (list, tuple)):
        for item in value:
            problem = text_problem(item, _depth + 1)
            if problem:
                return problem
    return None
