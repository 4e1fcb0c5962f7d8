"""Scaffolding until the API keys page lands: a signed-in page for the foundation's tests."""

from fastapi import APIRouter, Request
from fastapi.responses import Response

from threadline.dashboard.web import ViewerDep, render

router = APIRouter()


@router.get("/settings/api-keys")
async def api_keys(request: Request, viewer: ViewerDep) -> Response:
    return render(request, "error.html", viewer, title="API keys", message="")
