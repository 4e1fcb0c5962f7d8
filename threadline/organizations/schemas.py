from __future__ import annotations

from threadline.kit.schemas import ResponseModel, Timestamp
from threadline.organizations.repository import Organization


class RateLimitOut(ResponseModel):
    requests_per_minute: int


class OrganizationOut(ResponseModel):
    id: str
    name: str
    rate_limit: RateLimitOut
    created_at: Timestamp

    @classmethod
    def of(cls, org: Organization, effective_limit: int) -> OrganizationOut:
        return cls(
            id=org.id,
            name=org.name,
            rate_limit=RateLimitOut(requests_per_minute=effective_limit),
            created_at=org.created_at,
        )
