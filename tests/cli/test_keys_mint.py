"""``threadline keys mint``: a key made on the database by the operator, for when every key is lost; the
key works at once on a running server, like one made through the API. Also, through the same server:
telemetry sent to the API's port is told the intake's address."""

from __future__ import annotations

import json
import signal

import httpx

from tests.cli.one_process import threadline_each
from tests.support import running_server, threadline


def test_minted_keys_work_on_a_running_server(empty_env: dict[str, str]) -> None:
    boot = json.loads(threadline("init", "--json", env=empty_env).stdout)
    org_id, project_id = boot["organization"]["id"], boot["project"]["id"]

    shown = threadline("keys", "mint", "--org", org_id, "--name", "rescue", env=empty_env).stdout.splitlines()
    assert len(shown) == 3 and shown[0].startswith("key    key_") and "secret  rescue" in shown[0]
    assert shown[1].startswith("value  sk_")
    assert (
        shown[2] == "This key is shown once and cannot be recovered (only its hash is stored); store it now."
    )
    secret = shown[1].split()[1]

    minted = threadline(
        "keys", "mint", "--org", org_id, "--type", "public", "--project-id", project_id, "--name", "app",
        "--json", env=empty_env,
    )  # fmt: skip
    public = json.loads(minted.stdout)
    assert public["key"].startswith("pk_") and public["last4"] == public["key"][-4:]
    assert (public["type"], public["projectId"], public["organizationId"]) == ("public", project_id, org_id)

    with running_server(empty_env) as server:
        me = httpx.get(f"{server.api_url}/v1/me", headers={"Authorization": f"Bearer {secret}"})
        assert me.status_code == 200, me.text
        assert me.json()["organization"]["id"] == org_id and me.json()["key"]["name"] == "rescue"
        accepted = httpx.post(
            f"{server.intake_url}/v1/logs", json={"message": "hi"}, headers={"x-service-key": public["key"]}
        )
        assert accepted.status_code == 202, accepted.text

        # The same record sent to the API's port: told where the intake is, by the address it used.
        misdirected = httpx.post(
            f"{server.api_url}/v1/logs", json={"message": "hi"}, headers={"x-service-key": public["key"]}
        )
        assert misdirected.status_code == 421 and misdirected.json()["reason"] == "USE_INTAKE"
        assert f"send them to {server.intake_url}/v1/logs" in misdirected.json()["message"]
        listed = httpx.get(f"{server.api_url}/v1/keys", headers={"Authorization": f"Bearer {secret}"}).json()
        assert {k["name"] for k in listed["data"]} >= {"rescue", "app"}
        assert all("key" not in k for k in listed["data"])  # shown once: never again
        assert server.stop(signal.SIGTERM) == 0


def test_mint_refuses_clearly(empty_env: dict[str, str]) -> None:
    boot = json.loads(threadline("init", "--json", env=empty_env).stdout)
    org_id, project_id = boot["organization"]["id"], boot["project"]["id"]
    refusals = [
        (("--org", "org_missing", "--name", "n"), 1, "organization org_missing was not found"),
        (("--org", org_id, "--name", "n", "--type", "public"), 2, "give --project-id PROJECT_ID"),
        (("--org", org_id, "--name", "n", "--project-id", project_id), 2, "only for public keys"),
        (("--org", org_id, "--name", "  "), 2, "1 to 200 characters"),
        (("--org", org_id, "--name", "n", "--type", "admin"), 2, "'admin' is not one of"),
        (("--org", org_id, "--name", "n", "--type", "public", "--project-id", "proj_x"), 1, "proj_x"),
        (("--name", "n"), 2, "--org"),
    ]
    results = threadline_each(*(("keys", "mint", *arguments) for arguments, _, _ in refusals), env=empty_env)
    for (arguments, status, cause), result in zip(refusals, results, strict=True):
        assert result.returncode == status, (arguments, result.stderr)
        assert cause in result.stderr and result.stdout == "", (arguments, result.stderr)
    keys = [
        line for line in threadline("keys", "--help", env=empty_env).stdout.splitlines() if "mint" in line
    ]
    assert any("print it once" in line for line in keys), keys  # the command's row in the group's help
