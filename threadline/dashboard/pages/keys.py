"""Settings > API Keys (``/settings/api-keys``): the organization's keys, making one, revoking one.

A new key's value is in one response only, the answer to the POST that made it (the htmx fragment, or
the whole page when scripts are off), which the browser may not cache (``no-store``) and a reload does
not repeat: the list is a GET. Making or revoking a secret key asks for the password again, since that
key reaches the whole organization."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response

from threadline.config import Settings
from threadline.dashboard.forms import FieldErrors, error_of, validate
from threadline.dashboard.passwords import password_problem
from threadline.dashboard.sessions import Viewer
from threadline.dashboard.web import ViewerDep, is_htmx, render
from threadline.keys import service
from threadline.keys.repository import ApiKey
from threadline.keys.schemas import KeyCreate
from threadline.keys.tokens import PREFIXES
from threadline.kit.clock import Clock
from threadline.kit.db import Conn, Database
from threadline.kit.deps import ConnDep, CursorDep, get_services
from threadline.kit.errors import ApiError, NotFound
from threadline.kit.pagination import MAX_LIMIT, CursorParams
from threadline.kit.ratelimit import RateLimiter
from threadline.kit.signals import SignalBus
from threadline.projects import service as projects

PATH = "/settings/api-keys"
FIRST_PAGE = CursorParams(limit=20, after_id=None)
# The Project field offers the newest projects; past this many, older ones are reached by id.
PROJECT_CHOICES = CursorParams(limit=MAX_LIMIT, after_id=None)
_FIELDS = {"name": "name", "type": "type", "projectId": "project"}
# Bounds on what is read from the form at all; the schema's own limits give the messages.
_TEXT = Form(max_length=10_000)
_PASSWORD = Form(max_length=1024)


class KeysPageServices(Protocol):
    clock: Clock
    settings: Settings
    db: Database
    limiter: RateLimiter
    signals: SignalBus


ServicesDep = Annotated[KeysPageServices, Depends(get_services)]

router = APIRouter()


@dataclass
class CreateForm:
    """The "Create key" form as last sent, with its problems by field."""

    name: str = ""
    type: str = "public"
    project: str = ""
    errors: FieldErrors = field(default_factory=dict)


@dataclass(frozen=True)
class Created:
    key: ApiKey
    value: str


@dataclass(frozen=True)
class RevokeProblem:
    key_id: str
    message: str


async def _listing(conn: Conn, viewer: Viewer, page: CursorParams) -> dict[str, Any]:
    """The page's keys, the projects the form offers, and the name of each listed key's project."""
    keys, next_cursor = await service.list_keys(conn, viewer.organization_id, page, None)
    choices, more_projects = await projects.list_projects(conn, viewer.organization_id, PROJECT_CHOICES)
    names = {p.id: p.name for p in choices}
    for key in keys:
        if key.project_id is not None and key.project_id not in names:
            names[key.project_id] = await _project_name(conn, viewer, key.project_id)
    return {
        "keys": keys,
        "next_cursor": next_cursor,
        "paged": page.after_id is not None,
        "projects": choices,
        "more_projects": more_projects is not None,
        "project_names": names,
        "prefixes": PREFIXES,
    }


async def _project_name(conn: Conn, viewer: Viewer, project_id: str) -> str:
    try:
        return (await projects.get_project(conn, viewer.organization_id, project_id)).name
    except NotFound:
        return project_id


@router.get(PATH)
async def api_keys(
    request: Request, viewer: ViewerDep, conn: ConnDep, page: CursorDep, revoked: str | None = None
) -> Response:
    listing = await _listing(conn, viewer, page)
    revoked_key = None
    if revoked:
        try:
            revoked_key = await service.get_key(conn, viewer.organization_id, revoked[:100])
        except NotFound:
            revoked_key = None
    return render(request, "keys/index.html", viewer, form=CreateForm(), revoked=revoked_key, **listing)


@router.post(PATH)
async def create_key(
    request: Request,
    viewer: ViewerDep,
    services: ServicesDep,
    name: Annotated[str, _TEXT] = "",
    key_type: Annotated[str, Form(alias="type", max_length=20)] = "public",
    project: Annotated[str, _TEXT] = "",
    password: Annotated[str, _PASSWORD] = "",
) -> Response:
    form = CreateForm(name=name, type=key_type, project=project)
    # A secret key covers the whole organization: the Project field (hidden then) is not its business.
    body = {"name": name, "type": key_type, "projectId": (project or None) if key_type == "public" else None}
    checked = validate(KeyCreate, body, _FIELDS)
    created = None
    if isinstance(checked, dict):
        form.errors = checked
    elif checked.type == "public" and checked.project_id is None:
        form.errors["project"] = "A public key belongs to one project: choose it."
    elif checked.type == "secret" and (
        problem := await password_problem(request, services, viewer, password)
    ):
        form.errors["password"] = problem
    if not form.errors and not isinstance(checked, dict):
        try:
            async with services.db.transaction(write=True) as conn:
                key, value = await service.create_key(
                    conn,
                    viewer.organization_id,
                    name=checked.name,
                    key_type=checked.type,
                    project_id=checked.project_id,
                    now=services.clock.now(),
                )
        except ApiError as exc:  # the project is gone, or not this organization's
            form.errors["project"] = error_of(exc)
        else:
            created = Created(key, value)
            form = CreateForm(type=checked.type, project=project)
    async with services.db.transaction(write=False) as conn:
        listing = await _listing(conn, viewer, FIRST_PAGE)
    status = 400 if form.errors and not is_htmx(request) else 200
    template = "keys/create.html" if is_htmx(request) else "keys/index.html"
    return render(request, template, viewer, status_code=status, form=form, created=created, **listing)


@router.post(PATH + "/{key_id}/revoke")
async def revoke_key(
    request: Request,
    key_id: str,
    viewer: ViewerDep,
    services: ServicesDep,
    password: Annotated[str, _PASSWORD] = "",
) -> Response:
    """Another organization's key, or none, is the 404 page (``get_key``), before any password is read."""
    async with services.db.transaction(write=False) as conn:
        key = await service.get_key(conn, viewer.organization_id, key_id)
    if key.type == "secret" and key.revoked_at is None:
        problem = await password_problem(request, services, viewer, password)
        if problem is not None:
            async with services.db.transaction(write=False) as conn:
                listing = await _listing(conn, viewer, FIRST_PAGE)
            return render(
                request,
                "keys/index.html",
                viewer,
                status_code=400,
                form=CreateForm(),
                revoke_problem=RevokeProblem(key.id, problem),
                **_with_key(listing, key),
            )
    async with services.db.transaction(write=True) as conn:
        await service.revoke_key(
            conn, services.signals, viewer.organization_id, key.id, now=services.clock.now()
        )
    return RedirectResponse(f"{PATH}?revoked={key.id}", status_code=303)


def _with_key(listing: dict[str, Any], key: ApiKey) -> dict[str, Any]:
    """The key whose revocation was refused stays on the page even when it is past the first one, so its
    dialog can show the problem."""
    keys: Sequence[ApiKey] = listing["keys"]
    if all(k.id != key.id for k in keys):
        listing = {**listing, "keys": [key, *keys]}
    return listing
