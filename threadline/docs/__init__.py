"""The API reference at ``/docs``: Swagger UI rendering ``/v1/openapi.json``, every asset served from here
(no CDN), so the reference works on an air-gapped host."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import HTMLResponse
from starlette.staticfiles import StaticFiles

ASSETS = Path(__file__).parent / "vendor" / "swagger-ui"

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Threadline API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="reference"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({url: "/v1/openapi.json", dom_id: "#reference", deepLinking: true});
</script>
</body>
</html>
"""

router = APIRouter(include_in_schema=False)


@router.get("/docs")
async def reference() -> HTMLResponse:
    return HTMLResponse(_PAGE)


assets = StaticFiles(directory=ASSETS)
