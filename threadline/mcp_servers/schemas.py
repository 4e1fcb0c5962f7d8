"""MCP server bodies. Header values go in and never come out: responses name the headers only."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StringConstraints

from threadline.kit.schemas import NOT_BLANK, Documented, NullRefused, RequestModel, ResponseModel, Timestamp
from threadline.mcp_servers.repository import McpServer

Transport = Literal["streamable_http", "sse"]
MAX_HEADERS = 32
MAX_HEADER_VALUE_CHARS = 8192
DEFAULT_TIMEOUT_SECONDS = 30.0
MAX_TIMEOUT_SECONDS = 600.0
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
# Set by Threadline's MCP client itself (the protocol's own headers and the framing), never by a tenant.
RESERVED_HEADERS = frozenset(
    {
        "accept",
        "connection",
        "content-length",
        "content-type",
        "host",
        "last-event-id",
        "mcp-protocol-version",
        "mcp-session-id",
        "transfer-encoding",
    }
)


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain the NUL character (U+0000)")
    return value


def _http_url(value: str) -> str:
    if not re.match(r"^https?://[^/?#\s]+", value, re.IGNORECASE) or any(c.isspace() for c in value):
        raise ValueError("must be an http:// or https:// URL with a host and no spaces")
    return value


def _headers(value: dict[str, str]) -> dict[str, str]:
    if len(value) > MAX_HEADERS:
        raise ValueError(f"at most {MAX_HEADERS} headers")
    seen: set[str] = set()
    for name, header_value in value.items():
        if not _HEADER_NAME.match(name):
            raise ValueError(f"{name!r} is not a valid header name")
        lowered = name.lower()
        if lowered in RESERVED_HEADERS:
            raise ValueError(f"{name} is set by Threadline's MCP client and cannot be configured")
        if lowered in seen:
            raise ValueError(f"{name} is given twice")
        seen.add(lowered)
        if len(header_value) > MAX_HEADER_VALUE_CHARS or any(c in header_value for c in "\r\n\x00"):
            limit = MAX_HEADER_VALUE_CHARS
            raise ValueError(f"the value of {name} must be at most {limit} characters on one line")
    return value


Name = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=200),
    AfterValidator(_no_nul),
    Documented({"pattern": NOT_BLANK}),
]
Url = Annotated[
    str,
    StringConstraints(min_length=1, max_length=2048),
    AfterValidator(_http_url),
    Documented({"pattern": "^[Hh][Tt][Tt][Pp][Ss]?://"}),
]
Headers = Annotated[
    dict[str, str],
    AfterValidator(_headers),
    Documented({"maxProperties": MAX_HEADERS}),
    Field(
        description="Sent to the server on every request (e.g. `Authorization`). Write-only: stored "
        "encrypted, never returned or logged; responses list `headerNames`."
    ),
]
Timeout = Annotated[
    float,
    Field(gt=0, le=MAX_TIMEOUT_SECONDS, description="Limit of one call (and of connecting), in seconds."),
]
TransportField = Annotated[
    Transport,
    Field(description="`streamable_http` (the current MCP transport) or `sse` (the older HTTP+SSE one)."),
]


class McpServerCreate(RequestModel):
    name: Name
    url: Annotated[Url, Field(description="The server's MCP endpoint, e.g. `https://mcp.example.com/mcp`.")]
    transport: TransportField = "streamable_http"
    headers: Headers = {}
    timeout_seconds: Timeout = DEFAULT_TIMEOUT_SECONDS


class McpServerUpdate(RequestModel):
    """Fields present are replaced (``headers`` as a whole: `{}` removes them all); absent ones are kept.
    None can be null (400)."""

    name: Annotated[Name | None, NullRefused()] = None
    url: Annotated[Url | None, NullRefused()] = None
    transport: Annotated[TransportField | None, NullRefused()] = None
    headers: Annotated[Headers | None, NullRefused()] = None
    timeout_seconds: Annotated[Timeout | None, NullRefused()] = None


class McpServerOut(ResponseModel):
    id: str
    name: str
    url: str
    transport: Transport
    header_names: list[str] = Field(
        description="The names of the headers sent; their values are never shown."
    )
    timeout_seconds: float
    created_at: Timestamp
    updated_at: Timestamp

    @classmethod
    def of(cls, server: McpServer) -> McpServerOut:
        return cls(
            id=server.id,
            name=server.name,
            url=server.url,
            transport="sse" if server.transport == "sse" else "streamable_http",
            header_names=server.header_names,
            timeout_seconds=server.timeout_seconds,
            created_at=server.created_at,
            updated_at=server.updated_at,
        )


class McpToolOut(ResponseModel):
    name: str
    description: str | None
    input_schema: dict[str, Any] = Field(description="The tool's arguments, as the server's JSON Schema.")


class McpToolList(ResponseModel):
    data: list[McpToolOut]
