"""Process-wide configuration, read from the environment (prefix ``DYNAFORGE_``) and an optional ``.env`` file."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from dynaforge.inference.batching import DEFAULT_MAX_BATCH

PLACEHOLDER_SECRET = "change-me-in-production"


MIN_PRODUCTION_HASH_MEMORY_KIB = 19 * 1024


def parse_s3_url(url: str) -> tuple[str, str]:
    """``s3://bucket/prefix/`` as ``("bucket", "prefix/")`` (the prefix empty, or ending with ``/``); ValueError
    with what to write when it is not such a URL."""
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc or parts.query or parts.fragment:
        raise ValueError(f"{url!r} is not an s3://bucket/prefix/ URL")
    prefix = parts.path.strip("/")
    return parts.netloc, f"{prefix}/" if prefix else ""


class Settings(BaseSettings):
    """Every tunable of the server. Each field maps to ``DYNAFORGE_<FIELD>``."""

    model_config = SettingsConfigDict(env_prefix="DYNAFORGE_", env_file=".env", extra="ignore")

    environment: Literal["development", "test", "production"] = "development"
    database_url: str = Field(
        default="sqlite+aiosqlite:///./dynaforge-data/dynaforge.db",
        description="SQLAlchemy async URL: sqlite+aiosqlite:///path or postgresql+asyncpg://user@host/db",
    )
    database_echo: bool = False
    data_dir: Path = Field(
        default=Path("dynaforge-data"),
        description="the data directory: the model store (models/: trained weights by content hash) lives here; "
        "relative paths are relative to the working directory",
    )
    secret_key: str = PLACEHOLDER_SECRET
    load_plugins: str | None = Field(
        default=None,
        description="Comma-separated allowlist of entry-point plugin names; unset loads every installed plugin, "
        "an empty string loads none",
    )

    # Inference
    inference: Literal["worker", "inline"] = Field(
        default="worker",
        description="worker: models run in a supervised model-worker process (the API never imports torch); "
        "inline: on a thread of the API process (tests, tools)",
    )
    inference_timeout_s: float = 10.0
    inference_load_timeout_s: float = 300.0
    inference_threads: int = Field(default=1, description="inline mode: threads running predictions")
    model_threads: int | None = Field(
        default=None, description="worker mode: torch threads per forward pass (default: the cores less one)"
    )
    batch_max_size: int = Field(
        default=DEFAULT_MAX_BATCH,
        ge=1,
        description="worker mode: the most requests in one forward pass (on a CPU the cost per input stops falling "
        "at about 8, and smaller passes hand answers back sooner; raise it for a GPU)",
    )
    batch_window_ms: float = Field(
        default=2.0, ge=0, description="worker mode: how long a batch waits for more requests under concurrency"
    )
    pending_retry_s: float = Field(
        default=5.0, gt=0, description="how often examples stored without a prediction are predicted again"
    )
    unusable_output_attempts: int = Field(
        default=3,
        ge=1,
        description="how many times in a row a round's target may give an unusable output (a label outside the "
        "task's set, a missing field) for one example before its predictions stop being retried: the same model "
        "answers the same input the same way. The example stays pending, with the reason, for the task's owners "
        "(Round.stuckExamples) until its round's target models change or its author retracts it",
    )

    http_keep_alive_s: float = Field(
        default=75.0,
        gt=0,
        description="how long the server keeps an idle HTTP connection open; longer than the idle time of clients' "
        "and load balancers' pools (often 15-60 s), so that a reused connection is never closed under a request",
    )
    broker_url: str | None = Field(
        default=None,
        description="jobs: a Redis URL (redis://host:6379/0) shared by the API and `dynaforge worker` processes; "
        "unset: an in-process broker and worker (the embedded default)",
    )
    broker_namespace: str = Field(
        default="dramatiq",
        min_length=1,
        max_length=100,
        description="jobs: the key prefix of the broker's queues in Redis (one per deployment sharing a Redis)",
    )
    queued_sweep_s: float = Field(
        default=5.0,
        ge=0,
        description="jobs: how often a server with the in-process worker looks for queued evaluations that no "
        "process sent (a data set that `dynaforge datasets import` added while it runs) and runs them (0: only "
        "at start-up). With a Redis broker the CLI sends them itself",
    )
    events_url: str | None = Field(
        default=None,
        description="live events: a Redis URL for pub/sub between server processes and workers; unset: the broker's "
        "URL when it is Redis, else events stay in the process",
    )
    events_prefix: str = Field(
        default="dynaforge:events:",
        min_length=1,
        description="live events: the Redis channel prefix (deployments sharing one Redis use different ones)",
    )
    limits_url: str | None = Field(
        default=None,
        description="rate limits: a Redis URL every server process counts in, so that limits hold across replicas "
        "and restarts; unset: EVENTS_URL's or BROKER_URL's Redis, else process memory (the embedded default); "
        "memory:// keeps them in memory even then. While Redis fails, each process counts in its own memory",
    )
    limits_prefix: str = Field(
        default="dynaforge:limits",
        min_length=1,
        max_length=100,
        description="rate limits: the key prefix in Redis (deployments sharing one Redis use different ones)",
    )
    subscriber_buffer: int = Field(
        default=256, ge=1, description="live events: how many events a subscriber may fall behind before it is dropped"
    )
    forwarded_allow_ips: str = Field(
        default="",
        description="the proxies (comma-separated addresses or networks) whose X-Forwarded-For and "
        "X-Forwarded-Proto the server believes; empty: none, the client is the connection's peer",
    )
    subscriptions_per_connection: int = Field(
        default=20, ge=1, description="subscriptions one websocket connection may hold open at once"
    )
    subscriptions_per_user: int = Field(
        default=50,
        ge=1,
        description="subscriptions one user (anonymous subscribers: one client address) may hold open at once, "
        "over all their connections to this process",
    )
    subscription_reauth_s: float = Field(
        default=30.0,
        ge=0,
        description="live events: how often a running subscription re-checks its token (a revoked one stops "
        "receiving within this time)",
    )
    webhook_max_attempts: int = Field(default=8, ge=1, description="webhooks: attempts before a delivery is FAILED")
    webhook_min_backoff_ms: int = Field(default=5_000, ge=1, description="webhooks: the first retry's delay")
    webhook_max_backoff_ms: int = Field(
        default=3_600_000, ge=1, description="webhooks: the longest delay between retries"
    )
    outbound_allow: str = Field(
        default="",
        description="requests the server makes (http model backends, webhooks) go only to public addresses; this "
        "comma-separated list of networks (10.0.0.0/8), addresses and host names allows internal ones too (see "
        "dynaforge.outbound). Model workers and evaluation jobs inherit it",
    )
    llm_adversary_url: str | None = Field(
        default=None,
        description="the llm adversary: the base URL of an OpenAI-compatible API (https://host/v1; POST "
        "{url}/chat/completions); unset turns the adversary off. Subject to OUTBOUND_ALLOW like any outbound request",
    )
    llm_adversary_model: str = Field(default="gpt-4o-mini", description="the llm adversary: the model it asks for")
    llm_adversary_api_key: str | None = Field(
        default=None, description="the llm adversary: the bearer token sent to its endpoint (never logged)"
    )
    llm_adversary_timeout_s: float = Field(default=30.0, gt=0, description="the llm adversary: one request's limit")
    suggestions_per_hour: int = Field(
        default=60, ge=0, description="suggestEdits calls each user may make per hour and task (0: no limit)"
    )
    suggestion_queries: int = Field(
        default=64, ge=1, description="suggestEdits: target queries one call may spend, across its adversaries"
    )
    suggestion_time_s: float = Field(default=10.0, gt=0, description="suggestEdits: the time one call may take")
    generation_queries_per_day: int = Field(
        default=5_000,
        ge=0,
        description="generateCandidates: target queries a task's generation runs may spend per UTC day, unless the "
        "task's own settings say otherwise (0: none)",
    )
    generation_queries_per_item: int = Field(
        default=48, ge=1, description="generateCandidates: target queries one context or draft may cost at most"
    )
    submission_backends: str = Field(
        default="http,transformers,openai,kserve",
        description="model backends anyone may run models with, as submissions or as a task's target models "
        "(comma-separated); the others (python: an import path the worker would run with the server's environment) "
        "are for admins only",
    )
    eval_chunk_size: int = Field(
        default=256, ge=1, description="evaluation: items per stored chunk (the unit of resumption)"
    )
    eval_bootstrap_resamples: int = Field(
        default=1000, ge=10, description="evaluation: bootstrap resamples per interval"
    )
    eval_timeout_s: float = Field(default=6 * 3600.0, gt=0, description="evaluation: the longest one job may run")
    scoring_public_share: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="every evaluation on a scoring set (models, uploaded predictions, selections; the set's perturbed "
        "copies alike) shows the figures of this share of its items (the public part, the same for every model and "
        "for the copies); the rest is scored too but shown, and ranks the board, only when the set's round ends "
        "(1: no private part)",
    )
    min_scoring_set_size: int = Field(
        default=10,
        ge=1,
        description="the fewest items a scoring set may have: a round's smaller test split is made HIDDEN instead "
        "(and an empty split not at all), and a smaller upload is refused as SCORING",
    )
    eval_threads: int | None = Field(
        default=None,
        ge=1,
        description="evaluation: torch threads of each model under evaluation (default: the cores shared out among "
        "the evaluations a worker runs at once, at least 1: two models with two threads each on two cores spend "
        "most of their time waiting for each other)",
    )
    eval_max_unusable_share: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="evaluation: a model whose unusable outputs (answers the task cannot read) are more than this "
        "share of a set's items gets no figure that depends on the gold on it, only the counts (a model that "
        "answers one item and refuses the rest would otherwise read that item's gold off its score)",
    )
    eval_memory_limit_mb: int = Field(
        default=16384,
        ge=0,
        description="evaluation: the memory a model's process may allocate (heap and private writable mappings: "
        "RLIMIT_DATA), in MB (0: no limit). Not the address space, which CUDA reserves far more of than it uses",
    )
    eval_cpu_limit_s: int = Field(
        default=0,
        ge=0,
        description="evaluation: CPU seconds a model's process may use, all threads together (0: EVAL_TIMEOUT_S "
        "times the machine's cores)",
    )
    eval_open_files: int = Field(default=1024, ge=0, description="evaluation: files a model's process may hold open")
    eval_isolate_network: bool = Field(
        default=True,
        description="evaluation: run models whose backend needs no network (uploaded artifacts, local files) in a "
        "network namespace without one, where the kernel allows it (the job worker says at start-up if not)",
    )
    training_data_dir: Path | None = Field(
        default=None,
        description="training jobs: a folder with one sub-folder per task code holding that task's base data (what "
        "its training recipe's base_data names), for trainCandidateModel(includeBaseData: true); unset: candidates "
        "learn from the platform's data sets alone",
    )
    training_timeout_s: float = Field(
        default=2 * 3600.0, gt=0, description="training jobs: the longest one may run before it is stopped"
    )
    training_memory_limit_mb: int = Field(
        default=16384,
        ge=0,
        description="training jobs: the memory a recipe's process may allocate (RLIMIT_DATA), in MB (0: no limit)",
    )
    training_jobs_per_day: int = Field(
        default=20, ge=1, description="training jobs: how many one task's owners may start in any 24 hours"
    )
    cache_ttl_s: float = Field(
        default=2.0,
        ge=0,
        description="how long a server process may reuse a token's owner, a task or a current round it read "
        "(changes made by this process are seen at once, by other processes within this time; 0 turns it off)",
    )

    # Password hashing (argon2id). The defaults are the library's recommended parameters; outside production they
    # may be lowered (the test suite hashes hundreds of passwords), in production not below OWASP's minimum.
    password_hash_time_cost: int = Field(default=3, ge=1, description="argon2id passes (t) for new password hashes")
    password_hash_memory_kib: int = Field(
        default=65536, ge=32, description="argon2id memory (m) in KiB for new password hashes"
    )
    password_hash_threads_login: int = Field(
        default=2,
        ge=1,
        description="password checks at login running at once (threads of their own; each holds "
        "PASSWORD_HASH_MEMORY_KIB): registrations never wait for them, nor they for registrations",
    )
    password_hash_threads_register: int = Field(
        default=1,
        ge=1,
        description="new password hashes (registration, accounts an admin creates) computed at once, on threads of "
        "their own",
    )
    password_hash_queue: int = Field(
        default=16,
        ge=0,
        description="password hashes that may wait for a thread, per purpose (login, registration); past that the "
        "request answers RATE_LIMITED at once rather than queueing",
    )

    # Abuse limits
    logins_per_minute: int = Field(
        default=10,
        ge=0,
        description="failed login attempts per account from one client address per minute (0: no limit); failures "
        "from other addresses do not count, so they cannot lock the owner out",
    )
    token_ttl_days: float = Field(
        default=90, ge=0, description="API tokens expire this many days after they are issued (0: never)"
    )
    tokens_per_user: int = Field(
        default=50,
        ge=1,
        description="live API tokens per user: issuing one more revokes the least recently used beyond the limit",
    )
    registrations_per_hour_per_client: int = Field(
        default=20, ge=0, description="accounts registered per client address (IPv6: per /64) per hour (0: no limit)"
    )
    logins_per_minute_per_client: int = Field(
        default=30,
        ge=0,
        description="login attempts per client address (IPv6: per /64) per minute, whatever the account (0: no limit)",
    )
    max_body_bytes: int = Field(
        default=1024 * 1024,
        ge=1024,
        description="the largest GraphQL request body (JSON); file uploads have CONTEXT_UPLOAD_MAX_BYTES and "
        "MODEL_UPLOAD_MAX_MB",
    )
    introspection: bool | None = Field(default=None, description="GraphQL introspection; None: on outside production")
    examples_per_minute: int = 30
    validations_per_minute: int = 120
    proposals_per_day: int = 5
    exports_per_minute: int = Field(
        default=10, ge=0, description="downloads from /export each user may start per minute (0: no limit)"
    )
    validation_reads_per_minute: int = Field(
        default=60,
        ge=0,
        description="exampleToValidate reads each user may make per minute, all tasks together (0: no limit): each "
        "shows someone's example with the gold it claims",
    )
    validation_skips_per_hour: int = Field(
        default=30,
        ge=0,
        description="skipExample calls each validator may make per hour and task (0: no limit): each skip serves "
        "them another example, with the gold it claims",
    )
    page_max_size: int = 100
    context_upload_max_bytes: int = Field(
        default=10 * 1024 * 1024, ge=1, description="the largest context file (JSONL or CSV) one upload may send"
    )
    context_upload_max_rows: int = Field(
        default=20_000, ge=1, description="the most contexts one uploaded file may hold"
    )
    model_upload_max_mb: int = Field(
        default=2048,
        ge=1,
        description="uploadModel: the largest model archive, and the most its files may take unpacked, in MiB",
    )
    model_upload_max_file_mb: int = Field(
        default=1024, ge=1, description="uploadModel: the largest file in a model archive (a weights shard), in MiB"
    )
    model_upload_max_files: int = Field(
        default=64, ge=1, description="uploadModel: the most files a model archive may hold"
    )
    model_upload_quota_mb: int = Field(
        default=10240,
        ge=0,
        description="uploadModel: the most each user's models may keep in the model store, in MiB (the unpacked "
        "files of the artifacts their models name, each counted once; deleting a model frees its share; 0: no quota)",
    )
    media_max_mb: float = Field(
        default=10.0, gt=0, description="uploadMedia: the most bytes an uploaded image may have, in MiB"
    )
    media_max_pixels: int = Field(
        default=16_000_000,
        ge=1,
        description="uploadMedia: the most pixels (width x height) an uploaded image may have; larger ones are refused "
        "before their pixels are decoded (decompression bombs)",
    )
    media_uploads_per_hour: int = Field(
        default=300, ge=0, description="uploadMedia: the most images each user may upload an hour (0: no limit)"
    )
    artifact_gc_grace_s: float = Field(
        default=3600.0,
        ge=60,
        description="model store: an artifact that nothing names is deleted only once it has been neither stored "
        "nor touched for this long (an upload stores its files before its model names them)",
    )
    artifact_gc_interval_s: float = Field(
        default=3600.0,
        ge=0,
        description="model store: how often the server has the job system delete artifacts that nothing names "
        "(0: never; `dynaforge artifacts collect` does it on demand)",
    )
    model_store_url: str | None = Field(
        default=None,
        description="uploaded model artifacts in an S3-compatible bucket, s3://bucket/prefix/ (unset: on the "
        "filesystem, DATA_DIR/models/_artifacts/, which is then the local cache the models load from); credentials "
        "from boto3's usual chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile, an instance role); needs "
        "the s3 extra",
    )
    model_store_endpoint: str | None = Field(
        default=None,
        description="the S3 API's URL for MODEL_STORE_URL when it is not AWS's (MinIO, Ceph, R2...), e.g. "
        "http://minio:9000",
    )
    graphql_max_depth: int = 12
    graphql_max_tokens: int = 2000
    graphql_max_aliases: int = 15
    graphql_max_nodes: int = Field(
        default=100_000,
        ge=0,
        description="the most one operation may cost (0: no limit): each object it can ask for costs 1, list sizes "
        "(page sizes, ids given, the most an unpaged list holds) multiplied down each path, and each statistic, "
        "leaderboard or count it asks for its price (dynaforge.api.cost)",
    )
    graphql_max_concurrent_reads: int = Field(
        default=4, ge=0, description="queries executing at once per process (mutations never wait); 0: no limit"
    )
    graphiql: bool | None = None  # None: on outside production
    trusted_documents: Path | None = Field(
        default=None,
        description="a JSON file mapping document ids to GraphQL documents (e.g. GraphQL Code Generator's "
        "persisted-documents.json): clients may send an id instead of the text",
    )
    web_dir: Path | None = Field(
        default=None,
        description="the built web app (what `npm run build` writes to web/dist), served at / with GraphiQL at "
        "/graphql; unset: the source checkout's web/dist when it has been built",
    )
    trusted_documents_only: bool = Field(
        default=False, description="run only the documents registered in TRUSTED_DOCUMENTS, sent by id or as text"
    )

    @model_validator(mode="after")
    def _refuse_placeholder_secret(self) -> Settings:
        if self.model_store_url:
            try:
                parse_s3_url(self.model_store_url)
            except ValueError as exc:
                raise ValueError(f"DYNAFORGE_MODEL_STORE_URL: {exc}") from None
        if self.trusted_documents_only and self.trusted_documents is None:
            raise ValueError(
                "DYNAFORGE_TRUSTED_DOCUMENTS_ONLY needs DYNAFORGE_TRUSTED_DOCUMENTS, the file of registered documents"
            )
        if self.environment == "production" and self.secret_key == PLACEHOLDER_SECRET:
            raise ValueError("DYNAFORGE_SECRET_KEY must be set to a random value in production")
        if self.environment == "production" and (
            self.password_hash_time_cost < 2 or self.password_hash_memory_kib < MIN_PRODUCTION_HASH_MEMORY_KIB
        ):
            raise ValueError(
                "DYNAFORGE_PASSWORD_HASH_TIME_COST must be at least 2 and DYNAFORGE_PASSWORD_HASH_MEMORY_KIB at "
                f"least {MIN_PRODUCTION_HASH_MEMORY_KIB} in production (OWASP's minimum for argon2id); leave them "
                "unset for the recommended 3 and 65536"
            )
        return self

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def introspection_enabled(self) -> bool:
        return self.environment != "production" if self.introspection is None else self.introspection

    @property
    def graphiql_enabled(self) -> bool:
        return self.environment != "production" if self.graphiql is None else self.graphiql

    def plugin_allowlist(self) -> set[str] | None:
        if self.load_plugins is None:
            return None
        return {name.strip() for name in self.load_plugins.split(",") if name.strip()}

    def sqlite_path(self) -> Path | None:
        if not self.is_sqlite:
            return None
        path = self.database_url.split(":///", 1)[1]
        return None if path in ("", ":memory:") else Path(path)


@lru_cache
def get_settings() -> Settings:
    return Settings()
