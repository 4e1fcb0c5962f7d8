from __future__ import annotations

from fastapi import APIRouter

from threadline.keys.auth import SecretKeyAuth
from threadline.keys.schemas import KeyOut
from threadline.kit.openapi import AUTHENTICATED, errors
from threadline.kit.schemas import ResponseModel
from threadline.organizations.schemas import OrganizationOut

router = APIRouter(tags=["me"])


class MeOut(ResponseModel):
    organization: OrganizationOut
    key: KeyOut


@router.get("/me", operation_id="me.get", response_model=MeOut, responses=errors(*AUTHENTICATED))
async def get_me(principal: SecretKeyAuth) -> MeOut:
    """Answered from the authenticated principal, without a database round trip."""
    return MeOut(
        organization=OrganizationOut.of(principal.organization, principal.organization_limit),
        key=KeyOut.of(principal.key),
    )
