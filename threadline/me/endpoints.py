from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from threadline.access.principal import principal_of
from threadline.keys.schemas import KeyOut
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.kit.schemas import ResponseModel
from threadline.organizations.schemas import OrganizationOut

router = APIRouter(prefix="/v1", tags=["me"])


class MeOut(ResponseModel):
    organization: OrganizationOut
    key: KeyOut


@router.get("/me", operation_id="me.get", response_model=MeOut, responses=errors(*AUTHENTICATED))
async def get_me(request: Request) -> Response:
    """Answered from the authenticated principal, without a database round trip."""
    principal = principal_of(request)
    body: bytes | None = principal.memo.get("me.body")
    if body is None:
        me = MeOut(
            organization=OrganizationOut.of(principal.organization, principal.organization_limit),
            key=KeyOut.of(principal.key),
        )
        body = principal.memo["me.body"] = me.model_dump_json().encode()
    return Response(body, media_type="application/json")
