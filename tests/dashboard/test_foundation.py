"""Sign-in, sessions, CSRF and the headers every dashboard response carries."""

from __future__ import annotations

from tests.dashboard.support import Dashboard, Member, csrf_in
from threadline.dashboard.security import CONTENT_SECURITY_POLICY


async def test_pages_redirect_to_sign_in_and_back(anonymous: Dashboard, member: Member) -> None:
    response = await anonymous.get("/settings/api-keys?x=1")
    assert response.status_code == 303
    assert response.headers["location"] == "/login?next=/settings/api-keys%3Fx%3D1"
    form = await anonymous.get(response.headers["location"])
    assert form.status_code == 200
    assert 'name="next" value="/settings/api-keys?x=1"' in form.text
    signed_in = await anonymous.http.post(
        "/login",
        data={
            "email": member.email.upper(),
            "password": member.password,
            "csrf_token": csrf_in(form.text),
            "next": "/settings/api-keys?x=1",
        },
    )
    assert signed_in.status_code == 303
    assert signed_in.headers["location"] == "/settings/api-keys?x=1"
    cookie = signed_in.headers["set-cookie"]
    assert "threadline_session=" in cookie and "HttpOnly" in cookie and "SameSite=lax" in cookie
    assert "Path=/" in cookie and "Secure" not in cookie  # plain http here; https gets __Host- and Secure


async def test_wrong_password_and_unknown_email_read_the_same(anonymous: Dashboard, member: Member) -> None:
    answers = []
    for email, password in ((member.email, "wrong"), ("nobody@acme.test", "wrong")):
        form = await anonymous.get("/login")
        response = await anonymous.http.post(
            "/login", data={"email": email, "password": password, "csrf_token": csrf_in(form.text)}
        )
        assert response.status_code == 400
        answers.append(response.text.replace(email, "EMAIL"))
    assert "The email or password is not right." in answers[0]
    assert csrf_in(answers[0]) and answers[0].split("csrf_token")[0] == answers[1].split("csrf_token")[0]


async def test_sign_in_without_its_token_is_refused(anonymous: Dashboard, member: Member) -> None:
    await anonymous.get("/login")
    response = await anonymous.http.post("/login", data={"email": member.email, "password": member.password})
    assert response.status_code == 403
    assert "threadline_session" not in response.headers.get("set-cookie", "")


async def test_sign_out_ends_the_session_on_the_server(dashboard: Dashboard) -> None:
    cookie = dashboard.http.cookies["threadline_session"]
    assert (await dashboard.post("/logout")).status_code == 303
    dashboard.http.cookies.set("threadline_session", cookie)  # a copy kept by an attacker opens nothing
    assert (await dashboard.get("/settings/api-keys")).status_code == 303


async def test_state_changes_need_the_session_token_and_our_origin(dashboard: Dashboard) -> None:
    assert (await dashboard.http.post("/logout", data={"csrf_token": "forged"})).status_code == 403
    assert (await dashboard.http.post("/logout")).status_code == 403
    foreign = await dashboard.post("/logout", headers={"Origin": "https://evil.test"})
    assert foreign.status_code == 403
    header = await dashboard.http.post("/logout", headers={"X-CSRF-Token": dashboard.csrf})
    assert header.status_code == 303


async def test_every_response_carries_the_security_headers(
    dashboard: Dashboard, anonymous: Dashboard
) -> None:
    for client, url in (
        (anonymous, "/login"),
        (dashboard, "/no-such-page"),
        (dashboard, "/settings/api-keys"),
    ):
        response = await client.get(url)
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert (
            "frame-ancestors 'none'" in CONTENT_SECURITY_POLICY
            and "unsafe-inline" not in CONTENT_SECURITY_POLICY
        )
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "same-origin"
        assert response.headers["cache-control"] == "no-store"
    assert (await dashboard.get("/no-such-page")).status_code == 404
    static = await anonymous.get("/static/vendor/htmx/htmx.min.js")
    assert static.status_code == 200 and static.headers["cache-control"].startswith("public")


async def test_the_api_is_unchanged_beside_the_dashboard(anonymous: Dashboard) -> None:
    response = await anonymous.get("/v1/no-such-thing")
    assert response.status_code == 401 and response.json()["code"] == "UNAUTHORIZED"
    assert (await anonymous.get("/healthz")).json()["status"] == "ok"
