"""The ceiling for ``bench/intake.py``: a raw ASGI app that reads the body and answers 202 at once.

No framework, no validation, no storage: nothing an HTTP endpoint on uvicorn can do costs less, so our
intake's requests/s over this one is the share of the machine the intake leaves to the HTTP server.
"""

from __future__ import annotations

from typing import Any

_HEADERS = [(b"content-type", b"application/json"), (b"content-length", b"14")]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":  # lifespan: nothing to set up
        message = await receive()
        while message["type"] != "lifespan.shutdown":
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            message = await receive()
        await send({"type": "lifespan.shutdown.complete"})
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    status = 202 if scope["method"] == "POST" else 200  # GET: the readiness probe
    await send({"type": "http.response.start", "status": status, "headers": _HEADERS})
    await send({"type": "http.response.body", "body": b'{"accepted":1}'})
