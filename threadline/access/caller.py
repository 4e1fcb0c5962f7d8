"""The two values a request acts as: the key it was made with and the organization it acts for, as their rows
read. Their queries stay in ``keys`` and ``organizations`` (whose repositories export these names too); the
values live here so that what a request is (``principal.Principal``) sits below every domain.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from threadline.config import Settings

KeyType = Literal["public", "secret"]
# An organization's allowedOrigins while it has set none (settings show it; tokens and the intake apply it).
DEFAULT_ALLOWED_ORIGINS = ("*",)


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: str
    organization_id: str
    project_id: str | None
    name: str
    type: KeyType
    last4: str
    rate_limit_per_minute: int | None
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None


@dataclass(frozen=True, slots=True)
class Organization:
    """The row as stored: settings left NULL mean "the default" (``settings.service`` resolves them)."""

    id: str
    name: str
    rate_limit_per_minute: int | None
    created_at: datetime
    default_model: str | None = None
    instructions: str | None = None
    log_retention_days: int | None = None
    allowed_origins: tuple[str, ...] | None = None
    billing_enforced: bool = False
    run_concurrency: int | None = None
    stream_limit: int | None = None
    automation_limit: int | None = None
    queued_run_limit: int | None = None

    def limits(self, config: Settings) -> Limits:
        """The limits in force: an operator's own, else the process's defaults (a NULL column)."""
        return Limits(
            requests_per_minute=self.rate_limit_per_minute or config.default_rate_limit_per_minute,
            concurrent_runs=self.run_concurrency or config.default_run_concurrency,
            streams=self.stream_limit or config.default_stream_limit,
            automations=self.automation_limit or config.default_automation_limit,
            queued_runs=self.queued_run_limit or config.default_queued_run_limit,
        )


@dataclass(frozen=True, slots=True)
class Limits:
    """What an operator sets per organization (``threadline orgs set-limit``)."""

    requests_per_minute: int
    concurrent_runs: int
    streams: int
    automations: int  # held at once; one more is refused (409 AUTOMATION_LIMIT)
    queued_runs: int  # while this many runs wait, an automation's firing starts none (QUEUED_RUN_LIMIT)
