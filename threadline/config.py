"""Process configuration, read once from ``THREADLINE_*`` environment variables.

Choosing the deployment shape is configuration only: ``database_url`` picks SQLite (embedded, the default) or
PostgreSQL, and ``redis_url`` switches rate limits and cross-process signals from in-process to Redis.
"""

from __future__ import annotations

import resource
from decimal import Decimal
from functools import cached_property
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_RATE_LIMIT_PER_MINUTE = 1000
MAX_RUN_CONCURRENCY = 1024
_CONNECTIONS_CEILING = 20_000


def default_max_connections() -> int:
    """Connections each listener holds before answering 503: the process's open-file limit less headroom
    (an eighth, at least 64) for what is not a connection (database and Redis pools, the log store, files),
    shared by ``serve``'s two listeners, so the refusal comes before descriptors run out, never after. A
    fixed 20,000 equalled the usual limit of a container and was never reached: accept() failed first."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return _CONNECTIONS_CEILING
    return max(1, min(_CONNECTIONS_CEILING, (soft - max(64, soft // 8)) // 2))


class ModelPrice(BaseModel):
    """Credits per 1,000 tokens of a model (fractions allowed; a run's debit is rounded up to a credit)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: Decimal = Field(ge=0, le=1_000_000, description="Credits per 1,000 input tokens.")
    output: Decimal = Field(ge=0, le=1_000_000, description="Credits per 1,000 output tokens.")


# Models the table does not name cost this (the ``*`` entry, when the table has one, replaces it).
DEFAULT_MODEL_PRICE = ModelPrice(input=Decimal(1), output=Decimal(1))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="THREADLINE_", extra="ignore", frozen=True)

    data_dir: Path = Path(".threadline")
    database_url: SecretStr | None = None
    redis_url: SecretStr | None = None
    redis_prefix: str = "threadline:"

    default_rate_limit_per_minute: int = Field(DEFAULT_RATE_LIMIT_PER_MINUTE, ge=1)
    # Streams (log tails, run and thread streams) one organization may hold open at once in one process,
    # unless an operator set its own (`threadline orgs set-limit ORG_ID --streams N`).
    default_stream_limit: int = Field(500, ge=1)
    # Automations one organization may hold, unless an operator set its own (`set-limit --automations N`),
    # and runs it may have queued before an automation's firing starts no more (`--queued-runs N`).
    default_automation_limit: int = Field(100, ge=1)
    default_queued_run_limit: int = Field(100, ge=1)
    # A revoked key must be refused by every process within 1 s; cached keys are re-read after this long
    # even if no revocation signal arrived (the signal is the fast path, this is the guarantee).
    key_cache_ttl_seconds: float = Field(0.5, gt=0, le=1.0)
    key_usage_flush_seconds: float = Field(10.0, gt=0)
    max_request_body_bytes: int = Field(1024 * 1024, ge=1024)
    trust_forwarded_for: bool = False
    # Slow clients (``threadline.http_protocol``): the request line and headers must arrive within
    # header_timeout_seconds, the body within body_timeout_seconds of them (else 408 and the connection
    # closes); an idle keep-alive connection closes after keep_alive_seconds; a process holds at most
    # max_connections connections (open streams included; one more is answered 503; the default follows
    # the open-file limit, ``default_max_connections``). The request line and headers hold at most
    # max_header_bytes bytes and max_header_lines header lines (else 431 and the connection closes).
    header_timeout_seconds: float = Field(10.0, gt=0, le=300)
    body_timeout_seconds: float = Field(60.0, gt=0, le=3600)
    keep_alive_seconds: int = Field(5, ge=1, le=300)
    max_connections: int = Field(default_factory=default_max_connections, ge=1)
    max_header_bytes: int = Field(64 * 1024, ge=1024, le=1024 * 1024)
    max_header_lines: int = Field(100, ge=8, le=10_000)
    access_log: bool = False
    # Prometheus metrics (``kit.metrics``): ``GET /metrics`` on the API's port and on a worker's
    # ``--metrics-port``. With a token set, a scrape must send ``Authorization: Bearer <token>``.
    metrics: bool = True
    metrics_token: SecretStr | None = None
    log_level: str = "info"
    # Where SQLite's log appends run: "process", a process of the server's own on another core
    # (``telemetry.log_store``; requests with records a log trigger matched still append in the server);
    # "inline", every append in the server. Ignored on PostgreSQL, which always appends in the server, and
    # for a SQLite database in memory, which another process cannot open.
    log_store: Literal["process", "inline"] = "process"

    # Runs. ``openai/<model>`` talks to this OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp, ...).
    openai_base_url: str = "https://api.openai.com/v1"
    openai_api_key: SecretStr | None = None
    # A model turn that sends nothing for this long fails the run (MODEL_TIMEOUT).
    model_timeout_seconds: float = Field(60.0, gt=0)
    # Where runs execute: "auto" is in the server process when there is no Redis (the embedded shape) and
    # in ``threadline worker`` processes when there is; "server" and "worker" force either.
    run_execution: Literal["auto", "server", "worker"] = "auto"
    # An executor renews its claim on a run every third of this; a run whose claim lapses (its process
    # died) ends failed after at most this long.
    run_lease_seconds: float = Field(10.0, ge=0.5, le=300)
    # Runs one process executes at once (more wait, queued).
    max_concurrent_runs: int = Field(16, ge=1, le=1024)
    # Runs of one organization executing at once, across every process, until an operator sets its own
    # (`threadline orgs set-limit --concurrent-runs`): one organization cannot take every slot.
    default_run_concurrency: int = Field(4, ge=1, le=MAX_RUN_CONCURRENCY)
    # A run executing longer than this fails (RUN_TIMEOUT), so a slot is never held forever.
    run_max_seconds: float = Field(3600.0, gt=0)

    # Billing: what a run's tokens cost, by model name (``openai/gpt-4o``), provider (``openai/*``) or ``*``;
    # JSON in the environment: THREADLINE_MODEL_PRICES='{"openai/*": {"input": 2.5, "output": 10}}'.
    model_prices: dict[str, ModelPrice] = Field(default_factory=dict)

    # Dashboard sessions (docs/dashboard.md): a session ends after this long without a request, and after
    # this long in all, whatever its use.
    dashboard_idle_minutes: float = Field(30, gt=0, le=24 * 60)
    dashboard_absolute_hours: float = Field(12, gt=0, le=24 * 30)

    # Automations: how often the scheduler looks for due schedules (a schedule fires within this of its
    # time, plus the firing's own transaction).
    scheduler_interval_seconds: float = Field(1.0, gt=0, le=5)

    # Egress (docs/tools.md): hosts and networks (CIDR) tenants' MCP servers and webhooks may reach although
    # they are not public, comma-separated, e.g. "127.0.0.1,10.0.0.0/8".
    egress_allow: str = ""
    # Secrets at rest (docs/tools.md): comma-separated AES-256 keys (URL-safe base64), the first sealing.
    # Unset on the embedded shape: the key file `threadline init` writes into data_dir.
    encryption_key: SecretStr | None = None

    @field_validator("database_url", "redis_url", "encryption_key", "metrics_token", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        """``THREADLINE_REDIS_URL=`` in a shell or compose file means "not set", not "an empty URL"."""
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("encryption_key")
    @classmethod
    def _keys_well_formed(cls, value: SecretStr | None) -> SecretStr | None:
        """A malformed key stops every command at start, saying what a key is (never echoing it), rather
        than the first request that stores a secret."""
        if value is not None:
            from threadline.kit.encryption import SecretBox  # here: the client commands never need it

            SecretBox.from_setting(value.get_secret_value())
        return value

    @cached_property
    def resolved_database_url(self) -> str:
        """The database's SQLAlchemy URL; the embedded default is a SQLite file inside ``data_dir``."""
        if self.database_url is not None:
            return normalize_database_url(self.database_url.get_secret_value())
        return f"sqlite:///{(self.data_dir / 'threadline.db').resolve()}"

    @property
    def executes_runs_in_server(self) -> bool:
        if self.run_execution == "auto":
            return self.redis_url is None
        return self.run_execution == "server"

    @property
    def is_sqlite(self) -> bool:
        return self.resolved_database_url.startswith("sqlite")


def normalize_database_url(url: str) -> str:
    """Accept the URLs operators already have (``postgresql://``, ``sqlite:///``): PostgreSQL goes through
    asyncpg; SQLite through the standard library (``kit.db``), so ``sqlite+aiosqlite://``, which this once
    produced, means plain ``sqlite://``."""
    for plain, driver in (
        ("postgresql://", "postgresql+asyncpg://"),
        ("postgres://", "postgresql+asyncpg://"),
        ("sqlite+aiosqlite://", "sqlite://"),
    ):
        if url.startswith(plain):
            return driver + url[len(plain) :]
    return url
