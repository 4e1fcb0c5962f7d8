"""Telemetry sent to the API's port instead of the intake's: answered 421 ``MISDIRECTED_REQUEST`` (reason
``USE_INTAKE``) with the intake's address in the message.

Both surfaces speak ``/v1``, so ``POST /v1/logs`` to the API looks almost right, and was answered with
what did not help: a 403 about public keys (the key was right, the port was not) or a 405 on a path the
contract lists. This answers before authentication, whatever the key, charged to the client address
like any request that names no organization."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from threadline.keys.middleware import AccessServices, limit_by_address
from threadline.kit.context import header_of
from threadline.kit.errors import ApiError, Reason, render_envelope
from threadline.kit.services import ServicesOf

# The intake's paths (``telemetry.intake.ROUTES``) and the operation each would have been.
_INTAKE_OPERATIONS = {"/v1/logs": "logs.ingest", "/v1/events": "events.ingest"}


class MisdirectedRequest(ApiError):
    status = 421
    code = "MISDIRECTED_REQUEST"


def intake_url(scope: Scope, intake_port: int | None) -> str | None:
    """The intake as this client can reach it: the host it reached the API by, with the intake's port,
    when this process knows it (``threadline serve`` runs both); None when it does not."""
    if intake_port is None:
        return None
    host = header_of(scope, b"host")
    name = host.decode("latin-1").strip() if host else ""
    if not name:
        server = scope.get("server") or ("127.0.0.1", 0)
        name = str(server[0])
    if name.startswith("["):  # [::1]:8080
        name = name[: name.index("]") + 1]
    elif name.count(":") == 1:
        name = name.rsplit(":", 1)[0]
    return f"http://{name}:{intake_port}"


def message(path: str, url: str | None) -> str:
    what = "Log records" if path == "/v1/logs" else "Events"
    where = (
        f"send them to {url}{path}"
        if url is not None
        else f"send them to POST {path} at the intake's own port (threadline serve --intake-port, 8081 by "
        "default, or threadline serve-intake --port)"
    )
    return (
        f"This is the API. {what} are received by the telemetry intake, which listens on a port of its "
        f"own: {where}, with the project's public key in x-service-key."
    )


class MisdirectedIntake:
    """In front of the API's authentication: a POST to an intake path is told where the intake is."""

    def __init__(self, app: ASGIApp, *, runtime: ServicesOf[AccessServices], intake_port: int | None) -> None:
        self.app = app
        self.runtime = runtime
        self.intake_port = intake_port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        operation = (
            _INTAKE_OPERATIONS.get(scope["path"])
            if scope["type"] == "http" and scope["method"] == "POST"
            else None
        )
        if operation is None:
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        error: ApiError = MisdirectedRequest(
            message(path, intake_url(scope, self.intake_port)), reason=Reason.USE_INTAKE
        )
        try:
            await limit_by_address(self.runtime.services, scope, "api")
        except ApiError as limited:
            error = limited
        await render_envelope(scope, error, operation)(scope, receive, send)
