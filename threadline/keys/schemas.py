from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from threadline.keys.repository import ApiKey
from threadline.keys.tokens import PREFIXES, KeyType
from threadline.kit.schemas import NOT_BLANK, Documented, RequestModel, ResponseModel, Timestamp

KeyName = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=200),
    Documented({"pattern": NOT_BLANK}),
]


class KeyCreate(RequestModel):
    name: KeyName = Field(description="A descriptive label; 1 to 200 characters, not only whitespace.")
    type: KeyType = Field(description="`secret` (whole organization, server side) or `public` (one project).")
    project_id: str | None = Field(None, description="Required for public keys; not allowed for secret keys.")
    rate_limit_per_minute: int | None = Field(
        None,
        ge=1,
        le=1_000_000,
        description="Optional budget for this key alone; the lower of this and the organization's applies.",
    )


class KeyOut(ResponseModel):
    id: str
    name: str
    type: KeyType
    prefix: str = Field(description="`pk_` or `sk_`.")
    last4: str
    project_id: str | None
    rate_limit_per_minute: int | None
    created_at: Timestamp
    last_used_at: Timestamp | None = Field(description="Recorded in batches: up to ten seconds behind.")
    revoked_at: Timestamp | None

    @classmethod
    def of(cls, key: ApiKey) -> KeyOut:
        return cls(
            id=key.id,
            name=key.name,
            type=key.type,
            prefix=PREFIXES[key.type],
            last4=key.last4,
            project_id=key.project_id,
            rate_limit_per_minute=key.rate_limit_per_minute,
            created_at=key.created_at,
            last_used_at=key.last_used_at,
            revoked_at=key.revoked_at,
        )


class KeyCreated(KeyOut):
    key: str = Field(description="The full key. Shown this once; only a hash is stored.")
