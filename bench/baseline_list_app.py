"""The bare FastAPI baseline for ``bench/threads.py``: ``GET`` and ``POST /v1/threads`` from memory.

Both answer with the same shapes as Threadline (a page of 20 threads with a ``nextCursor``; one created
thread with status 201) but with no authentication, middleware, database, validation or rate limit, so the
gap between it and our server is exactly what Threadline adds per request: the query, the insert (with its
full-text index update), the checks. ``POST`` deliberately ignores its body: parsing and validating it is
part of what ours is measured doing. Bodies are returned as typed ``dict``s and serialised by FastAPI's own
response path (as ours are), not as pre-encoded bytes: the targets compare against "a bare FastAPI
endpoint", not against the cheapest possible socket write.

Run by ``bench/threads.py`` with ``BENCH_THREADS_BODY_FILE`` naming a JSON file that holds
``{"page": <list body>, "created": <thread>}``, built from our server's real answers.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from fastapi import FastAPI

_BODIES: dict[str, Any] = json.loads(Path(os.environ["BENCH_THREADS_BODY_FILE"]).read_text())
_PAGE: dict[str, Any] = _BODIES["page"]
_CREATED: dict[str, Any] = _BODIES["created"]

app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)


@app.get("/v1/threads")
async def list_threads() -> dict[str, Any]:
    return _PAGE


@app.post("/v1/threads", status_code=201)
async def create_thread() -> dict[str, Any]:
    return _CREATED
