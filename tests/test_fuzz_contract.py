"""Schemathesis against a live ``threadline serve``: every operation of the committed contract, the API with
a secret key and the intake with a public key, ``--checks all``, a bounded number of cases per operation.

A pytest test rather than a step of its own in scripts/test.sh: it runs wherever the suite runs (CI
included), reuses the suite's server and ``init`` helpers, and fails like any other test. What schemathesis
flags and is right by design is accepted in tests/fuzz_allowlist.json (schemathesis's own baseline file,
each entry with its reason); anything else fails the test, with schemathesis's report in the message."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import init_database, running_server

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT / "openapi.json"
ALLOWLIST = Path(__file__).resolve().parent / "fuzz_allowlist.json"
MAX_EXAMPLES = 10  # per operation and phase: about 1,600 cases, well under a minute on two cores
SEED = 20261125  # the same cases every run: a failure reproduces, and the allowlist stays small

# The API in three runs. Revoking a key runs alone, so that no generated link (GET /v1/keys → DELETE
# /v1/keys/{id}) revokes the key the runs authenticate with. The live tail runs alone with a short request
# timeout: without ``until`` it never ends, and each case would otherwise wait the whole timeout.
# The MCP server and webhook operations that resolve or call a tenant's URL are not fuzzed: generated host
# names would be looked up, and generated public addresses called, and no test may send anything beyond this
# machine (tests/mcp_servers and tests/webhooks cover them, against servers on 127.0.0.1).
CALLS_OUT = [
    "mcpServers.create",
    "mcpServers.update",
    "mcpServers.listTools",
    "webhooks.create",
    "webhooks.update",
]
API_RUNS: list[list[str]] = [
    [
        "--exclude-tag",
        "intake",
        "--exclude-operation-id",
        "keys.revoke",
        "--exclude-operation-id",
        "logs.stream",
        *(argument for operation in CALLS_OUT for argument in ("--exclude-operation-id", operation)),
        "--request-timeout",
        "10",
    ],
    ["--include-operation-id", "keys.revoke", "--request-timeout", "10"],
    ["--include-operation-id", "logs.stream", "--request-timeout", "1"],
]
INTAKE_RUN = ["--include-tag", "intake", "--request-timeout", "10"]


def schemathesis(
    base_url: str, header: str, selection: list[str], report: Path
) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "run",
        str(CONTRACT),
        "--url",
        base_url,
        "--header",
        header,
        # The credential is the header above; generated ones would make two (400 AMBIGUOUS_CREDENTIAL).
        "--generation-with-security-parameters",
        "false",
        "--checks",
        "all",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        str(SEED),
        "--generation-database",
        "none",
        # Text with NUL (U+0000) is refused everywhere, by design (PostgreSQL cannot store it; tested in
        # tests/telemetry and the domains' own tests): generated positive data must not hold any.
        "--generation-allow-x00",
        "false",
        "--baseline",
        str(ALLOWLIST),
        "--no-color",
        "--report",
        "junit",
        "--report-dir",
        str(report),
        *selection,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=report)


@pytest.mark.embedded  # one shape: the contract is the same on both, and the run is the suite's longest
def test_the_live_service_keeps_its_contract(empty_env: dict[str, str], tmp_path: Path) -> None:
    # Thousands of requests a minute from one key: the default limit would answer most of them 429.
    env = {**empty_env, "THREADLINE_DEFAULT_RATE_LIMIT_PER_MINUTE": "1000000"}
    keys = init_database(env)
    started = time.monotonic()
    failures = []
    with running_server(env) as server:
        runs = [(server.api_url, f"Authorization: Bearer {keys['secretKey']}", s) for s in API_RUNS]
        runs.append((server.intake_url, f"x-service-key: {keys['publicKey']}", INTAKE_RUN))
        for index, (url, header, selection) in enumerate(runs):
            report = tmp_path / f"run{index}"
            report.mkdir()
            result = schemathesis(url, header, selection, report)
            if result.returncode != 0 or "passed" not in result.stdout:
                # From schemathesis's list of failures on (each with a curl line to replay it).
                found = result.stdout[result.stdout.find("=== FAILURES ===") :]
                failures.append(f"st run {' '.join(selection)} exited {result.returncode}:\n{found[:15000]}")
    elapsed = time.monotonic() - started
    assert not failures, "\n\n".join(failures)
    assert elapsed < 180, f"the contract's fuzzing took {elapsed:.0f} s (more than 3 minutes)"


def test_the_allowlist_gives_a_reason_for_each_entry() -> None:
    entries = json.loads(ALLOWLIST.read_text())["entries"]
    assert entries
    for entry in entries:
        assert len(entry.get("reason", "")) > 20, entry
