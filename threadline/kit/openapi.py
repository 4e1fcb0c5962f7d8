"""What the contract says about errors: the envelope models and each operation's error responses."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from threadline.kit.errors import Reason


class ErrorBody(BaseModel):
    code: str = Field(description="Stable machine-readable code; branch on this, not on message.")
    message: str = Field(description="For humans; may change.")
    operationId: str = Field(description="The operation that failed, `<resource>.<operation>` or `unknown`.")
    missingContext: list[str] = Field(
        description="Required headers, fields or parameters the request lacked."
    )
    reason: Reason | None = Field(None, description="Optional machine-readable sub-code.")
    requestId: str | None = Field(None, description="Also in the X-Request-Id header; quote it in reports.")


class RateLimitError(BaseModel):
    code: str = Field(description="`RATE_LIMIT_EXCEEDED`.")
    message: str


class RateLimitedBody(ErrorBody):
    """Both envelopes the spec shows, in one body."""

    retryAfterSeconds: int
    data: None = None
    error: RateLimitError


_DESCRIPTIONS = {
    400: "Malformed request or failed validation (`BAD_REQUEST`).",
    401: "Credential missing or invalid (`UNAUTHORIZED`; reason `INVALID_KEY` or `KEY_REVOKED`).",
    403: "Credential valid but of the wrong kind (`FORBIDDEN`).",
    404: "Not found, or not visible to this credential (`NOT_FOUND`).",
    409: "Conflicts with the current state (`CONFLICT`).",
    413: "Body over the size limit (`PAYLOAD_TOO_LARGE`).",
    429: "Rate limit exceeded (`TOO_MANY_REQUESTS`); see Retry-After.",
    500: "Unexpected server error (`INTERNAL_SERVER_ERROR`).",
    415: "Content-Type or Content-Encoding not accepted (`UNSUPPORTED_MEDIA_TYPE`).",
    501: "Not implemented yet (`NOT_IMPLEMENTED`).",
    502: "A peer the organization configured failed or could not be reached (`BAD_GATEWAY`).",
    503: "A dependency is unreachable (`SERVICE_UNAVAILABLE`).",
}

AUTHENTICATED = (401, 403, 429, 500)


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` of an operation: every listed status with the envelope model."""
    return {
        status: {
            "model": RateLimitedBody if status == 429 else ErrorBody,
            "description": _DESCRIPTIONS[status],
        }
        for status in sorted(statuses)
    }
