"""The bare FastAPI baseline for ``bench/me.py``: the same ``GET /v1/me`` body as Threadline, from memory.

It answers with no authentication, middleware, database or rate limit, so the gap between it and our
server is exactly the cost of what Threadline adds per request. The body is returned as a typed ``dict``
and serialised by FastAPI's own response-model path (as ours is), not as pre-encoded bytes: the target
compares against "a bare FastAPI endpoint", not against the cheapest possible socket write.

Run by ``bench/me.py`` with ``BENCH_ME_BODY_FILE`` naming a JSON file that holds our real response.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from fastapi import FastAPI

_BODY: dict[str, Any] = json.loads(Path(os.environ["BENCH_ME_BODY_FILE"]).read_text())

app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)


@app.get("/v1/me")
async def get_me() -> dict[str, Any]:
    return _BODY
