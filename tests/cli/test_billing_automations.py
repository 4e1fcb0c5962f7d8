"""`threadline billing` (the operator's grant, the client's balance and ledger) and `threadline automations`,
against one real server process per storage shape. Organizations are made in-process and checks that are
not about the CLI go through the SDK; commands that do not depend on each other run side by side (each is
mostly interpreter start-up)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from threadline_client import NotFoundError, Threadline

from tests.conftest import Backend
from tests.support import ServerProcess, Tenant, running_server, threadline
from threadline.billing.ledger import LedgerRepository
from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.provisioning import create_organization


@dataclass(frozen=True)
class Served:
    server: ServerProcess
    operator_env: dict[str, str]
    db: Database

    async def organization(self, name: str) -> Tenant:
        async with self.db.transaction() as conn:
            return Tenant(await create_organization(conn, name, now=Clock().now()))

    def client_env(self, tenant: Tenant) -> dict[str, str]:
        return {
            **self.operator_env,
            "THREADLINE_API_KEY": tenant.created.secret_value,
            "THREADLINE_BASE_URL": f"{self.server.api_url}/v1",
        }

    @contextmanager
    def sdk(self, tenant: Tenant) -> Iterator[Threadline]:
        with Threadline(tenant.created.secret_value, f"{self.server.api_url}/v1") as client:
            yield client


@pytest.fixture(scope="module")
async def served(backend: Backend) -> AsyncIterator[Served]:
    """One server for the module (each start costs seconds); it executes runs itself in both shapes."""
    settings = backend.fresh()
    operator_env = backend.env(settings)
    db = Database(settings.resolved_database_url)
    try:
        with running_server({**operator_env, "THREADLINE_RUN_EXECUTION": "server"}) as server:
            yield Served(server, operator_env, db)
    finally:
        await db.dispose()


def together(env: dict[str, str], *commands: tuple[str, ...]) -> list[subprocess.CompletedProcess[str]]:
    """``threadline ARGS`` for each command, started at once; their results in the same order."""
    started = [
        subprocess.Popen(
            [sys.executable, "-m", "threadline", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args in commands
    ]
    done = []
    for process in started:
        stdout, stderr = process.communicate(timeout=60)
        done.append(subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr))
    return done


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, f"{result.args[3:]} exited {result.returncode}: {result.stderr}"
    return result


async def test_grant_shows_in_the_balance_and_the_ledger(served: Served) -> None:
    tenant = await served.organization("Credits")
    env = served.client_env(tenant)

    first = threadline("billing", "grant", tenant.org_id, "100", env=served.operator_env).stdout
    first_id, org_id, amount, _, _, balance_after = first.split()
    assert first_id.startswith("txn_") and org_id == tenant.org_id
    assert (amount, balance_after) == ("+100", "100")
    second = json.loads(
        threadline(
            "billing",
            "grant",
            tenant.org_id,
            "25",
            "--description",
            "Top-up",
            "--json",
            env=served.operator_env,
        ).stdout
    )
    assert second["id"] > first_id and second["runId"] is None
    assert {k: second[k] for k in ("type", "amount", "balanceAfter", "description")} == {
        "type": "credit",
        "amount": 25,
        "balanceAfter": 125,
        "description": "Top-up",
    }

    balance, balance_text, ledger, ledger_text, last_page = together(
        env,
        ("billing", "balance", "--json"),
        ("billing", "balance"),
        ("billing", "transactions", "--json"),
        ("billing", "transactions"),
        ("billing", "transactions", "--page", "2", "--limit", "1", "--json"),
    )
    assert json.loads(ok(balance).stdout) == {"balance": 125, "updatedAt": second["createdAt"]}
    assert ok(balance_text).stdout == f"125 credits  (last entry {second['createdAt']})\n"
    body = json.loads(ok(ledger).stdout)
    assert [(t["id"], t["type"], t["amount"], t["balanceAfter"]) for t in body["data"]] == [
        (second["id"], "credit", 25, 125),
        (first_id, "credit", 100, 100),
    ]
    assert body["data"][1]["description"] == "Credits granted by an operator."
    assert body["pagination"] == {"page": 1, "limit": 20, "totalPages": 1, "total": 2}
    lines = ok(ledger_text).stdout.splitlines()
    assert [line.split()[:5] for line in lines] == [
        [second["id"], "credit", "+25", "balance", "125"],
        [first_id, "credit", "+100", "balance", "100"],
    ]
    assert lines[0].endswith("Top-up") and ledger_text.stderr == "page 1 of 1 (2 entries)\n"
    paged = json.loads(ok(last_page).stdout)
    assert [t["id"] for t in paged["data"]] == [first_id]
    assert paged["pagination"] == {"page": 2, "limit": 1, "totalPages": 2, "total": 2}


async def test_grant_errors_are_clear(served: Served) -> None:
    tenant = await served.organization("Refused")
    unknown, zero, negative, too_much = together(
        served.operator_env,
        ("billing", "grant", "org_missing", "10"),
        ("billing", "grant", tenant.org_id, "0"),
        ("billing", "grant", tenant.org_id, "-5"),
        ("billing", "grant", tenant.org_id, str(10**13)),
    )
    assert unknown.returncode == 1 and unknown.stderr == "error: organization org_missing was not found\n"
    for refused, amount in ((zero, "0"), (negative, "-5"), (too_much, str(10**13))):
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr == (
            "error: the amount must be a positive integer of credits, at most 1,000,000,000,000 "
            f"(got {amount})\n"
        )
    assert all(result.stdout == "" for result in (unknown, zero, negative, too_much))
    with served.sdk(tenant) as client:
        assert client.billing.balance().to_dict() == {"balance": 0, "updatedAt": None}
        pagination = client.billing.transactions().pagination
        assert pagination is not None and pagination.total_pages == 0


TRIAGE = {"type": "json_schema", "name": "triage", "schema": {"type": "object"}}


async def test_automations_create(served: Served) -> None:
    tenant = await served.organization("Creating automations")
    schedule, log, both, neither, foreign, invalid = together(
        served.client_env(tenant),
        ("automations", "create", "--name", "Nightly", "--cron", "0 3 * * *", "--timezone",
         "Europe/Paris", "--prompt", "Summarise the day", "--json"),
        ("automations", "create", "--name", "Timeouts", "--on-log", "--project-id", tenant.project_id,
         "--level", "warn", "--contains", "timeout", "--cooldown-seconds", "60", "--prompt", "Investigate",
         "--model", "offline/scripted", "--disabled"),
        ("automations", "create", "--name", "x", "--prompt", "p", "--cron", "@daily", "--on-log"),
        ("automations", "create", "--name", "x", "--prompt", "p"),
        ("automations", "create", "--name", "x", "--prompt", "p", "--cron", "@daily", "--level", "warn"),
        ("automations", "create", "--name", "x", "--prompt", "p", "--cron", "every day"),
    )  # fmt: skip
    nightly = json.loads(ok(schedule).stdout)
    assert nightly["id"].startswith("aut_") and nightly["enabled"] is True
    assert nightly["trigger"] == {"type": "schedule", "cron": "0 3 * * *", "timezone": "Europe/Paris"}
    assert nightly["action"] == {
        "prompt": "Summarise the day",
        "threadId": None,
        "model": None,
        "agentId": None,
        "agentVersion": None,
        "responseFormat": None,
    }
    assert nightly["nextRunAt"] is not None and nightly["lastTriggeredAt"] is None
    timeouts_id = ok(log).stdout.split()[0]
    assert ok(log).stdout == (
        f"{timeouts_id}  disabled  on log >= warn in {tenant.project_id} containing 'timeout' cooldown 60s"
        "  Timeouts\n"
    )
    assert both.returncode == 2 and "exclude each other" in both.stderr
    assert neither.returncode == 2 and "a trigger is required" in neither.stderr
    assert foreign.returncode == 2 and "go with a log trigger (--on-log)" in foreign.stderr
    assert invalid.returncode == 1 and "trigger.cron" in invalid.stderr
    assert "VALIDATION_FAILED" in invalid.stderr
    assert all(result.stdout == "" for result in (both, neither, foreign, invalid))

    with served.sdk(tenant) as client:
        timeouts = client.automations.get(timeouts_id).to_dict()
        assert {a.id for a in client.automations.list()} == {timeouts_id, nightly["id"]}
    assert timeouts["enabled"] is False
    assert timeouts["trigger"] == {
        "type": "log",
        "projectId": tenant.project_id,
        "level": "warn",
        "contains": "timeout",
        "cooldownSeconds": 60,
    }
    assert timeouts["action"] == {
        "prompt": "Investigate",
        "threadId": None,
        "model": "offline/scripted",
        "agentId": None,
        "agentVersion": None,
        "responseFormat": None,
    }


async def test_automations_list_show_update_trigger_delete(served: Served) -> None:
    tenant = await served.organization("Running automations")
    env = served.client_env(tenant)
    with served.sdk(tenant) as client:
        nightly = client.automations.create(
            name="Nightly",
            trigger={"type": "schedule", "cron": "0 3 * * *", "timezone": "Europe/Paris"},
            action={"prompt": "#notools Summarise the day"},
        ).to_dict()
        timeouts = client.automations.create(
            name="Timeouts",
            trigger={"type": "log", "projectId": tenant.project_id, "level": "warn", "contains": "timeout"},
            action={"prompt": "#notools Investigate", "model": "offline/scripted"},
            enabled=False,
        ).to_dict()
    listed, listed_text, shown, shown_text, nothing = together(
        env,
        ("automations", "list", "--json"),
        ("automations", "list", "--limit", "1"),
        ("automations", "show", timeouts["id"], "--json"),
        ("automations", "show", nightly["id"]),
        ("automations", "update", timeouts["id"]),
    )
    assert [a["id"] for a in json.loads(ok(listed).stdout)] == [timeouts["id"], nightly["id"]]
    assert ok(listed_text).stdout.split()[:2] == [timeouts["id"], "disabled"]
    assert len(listed_text.stdout.splitlines()) == 1
    assert json.loads(ok(shown).stdout) == timeouts
    assert ok(shown_text).stdout.splitlines() == [
        f"{nightly['id']}  enabled   cron '0 3 * * *' Europe/Paris  Nightly",
        "thread (a new one per firing)  model (default)  answer text",
        f"last triggered never  next run {nightly['nextRunAt']}",
        "prompt: #notools Summarise the day",
    ]
    assert (
        nothing.returncode == 2 and nothing.stderr == "error: nothing to change: give at least one option\n"
    )

    retimed, enabled, fired, fired_text = together(
        env,
        (
            "automations",
            "update",
            nightly["id"],
            "--timezone",
            "UTC",
            "--prompt",
            "#notools Again",
            "--response-format",
            json.dumps(TRIAGE),
            "--json",
        ),
        ("automations", "update", timeouts["id"], "--enable", "--contains", "", "--name", "Any timeout"),
        ("automations", "trigger", nightly["id"], "--json"),
        ("automations", "trigger", timeouts["id"]),
    )
    updated = json.loads(ok(retimed).stdout)
    assert updated["trigger"] == {"type": "schedule", "cron": "0 3 * * *", "timezone": "UTC"}
    assert updated["action"] == {
        "prompt": "#notools Again",
        "threadId": None,
        "model": None,
        "agentId": None,
        "agentVersion": None,
        "responseFormat": {**TRIAGE, "strict": True},
    }
    (text,) = together(env, ("automations", "update", nightly["id"], "--response-format", "", "--json"))
    assert json.loads(ok(text).stdout)["action"]["responseFormat"] is None
    assert ok(enabled).stdout == (
        f"{timeouts['id']}  enabled   on log >= warn in {tenant.project_id} cooldown 300s  Any timeout\n"
    )
    run = json.loads(ok(fired).stdout)
    assert run["id"].startswith("run_") and run["automationId"] == nightly["id"]
    assert run["metadata"] == {"trigger": "manual"}
    assert ok(fired_text).stdout.startswith("run_") and "  queued  " in fired_text.stdout

    deleted, switched = together(
        env,
        ("automations", "delete", nightly["id"], "--json"),
        ("automations", "update", timeouts["id"], "--cron", "@hourly"),
    )
    assert json.loads(ok(deleted).stdout)["id"] == nightly["id"]
    assert ok(switched).stdout == f"{timeouts['id']}  enabled   cron '@hourly' UTC  Any timeout\n"
    with served.sdk(tenant) as client:
        with pytest.raises(NotFoundError):
            client.automations.get(nightly["id"])
        assert [a.id for a in client.automations.list()] == [timeouts["id"]]
        assert client.automations.get(timeouts["id"]).last_triggered_at is not None
        assert client.runs.get(run["id"]).automation_id == nightly["id"]  # the run outlives it


async def test_export_writes_the_whole_ledger_once(served: Served, tmp_path: Path) -> None:
    """Three pages of 100 and the rest, as CSV and as JSON lines; the summary on standard error."""
    tenant = await served.organization("Export")
    async with served.db.transaction() as conn:
        ledger = LedgerRepository(conn, tenant.org_id)
        for amount in range(1, 251):
            await ledger.post("credit", amount, f"grant, number {amount}", now=Clock().now())
    env = served.client_env(tenant)

    as_csv = ok(threadline("billing", "export", "--output", str(tmp_path / "ledger.csv"), env=env))
    assert as_csv.stdout == ""
    assert as_csv.stderr.startswith(f"exported 250 entries to {tmp_path / 'ledger.csv'} in ")
    with (tmp_path / "ledger.csv").open(newline="") as written:
        rows = list(csv.DictReader(written))
    assert [int(row["amount"]) for row in rows] == list(range(250, 0, -1))  # newest first, each once
    assert rows[0]["description"] == "grant, number 250" and rows[0]["runId"] == ""
    assert [int(row["balanceAfter"]) for row in rows][:2] == [250 * 251 // 2, 250 * 251 // 2 - 250]

    as_lines = ok(threadline("billing", "export", "--format", "jsonl", env=env))
    entries = [json.loads(line) for line in as_lines.stdout.splitlines()]
    assert [entry["id"] for entry in entries] == [row["id"] for row in rows]
    assert set(entries[0]) == {"id", "type", "amount", "balanceAfter", "description", "runId", "createdAt"}
    assert as_lines.stderr.startswith("exported 250 entries in ")

    nowhere = str(tmp_path / "no" / "x.csv")
    refused = threadline("billing", "export", "--output", nowhere, env=env, check=False)
    assert refused.returncode == 2 and refused.stderr.startswith(f"error: cannot write {tmp_path / 'no'}")
