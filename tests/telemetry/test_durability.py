"""The intake's promise, tested on a real ``threadline serve`` process: a 202 means the records are
committed. Killed with SIGKILL mid-traffic, the restarted server still has every record of every batch it
acknowledged, exactly once, and no batch half-stored; stopped with SIGTERM, it drains and exits 0, having
answered every request whose records it committed.

Each record carries a unique marker (``attributes.marker``, ``<round>c<client>-b<batch>-r<record>``) and
nothing is retried, so a marker seen twice can only be the server's doing."""

from __future__ import annotations

import itertools
import signal
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.support import ServerProcess, all_log_records, init_database, running_server

CLIENTS = 6
BATCH = 20  # records per request
ENOUGH = 40  # acknowledged batches (per round) before the server is stopped
TRAFFIC_DEADLINE = 10.0  # seconds for ENOUGH acknowledgements to arrive


@dataclass
class Traffic:
    """Clients posting batches to one intake until it stops answering; what was sent and acknowledged."""

    intake_url: str
    public_key: str
    label: str
    sent: list[str] = field(default_factory=list)
    acknowledged: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    enough: threading.Event = field(default_factory=threading.Event)
    halting: threading.Event = field(default_factory=threading.Event)

    def client(self, number: int) -> None:
        headers = {"x-service-key": self.public_key}
        with httpx.Client(timeout=10, headers=headers) as http:
            for batch in itertools.count():
                name = f"{self.label}c{number}-b{batch}"
                self.sent.append(name)
                try:
                    response = http.post(f"{self.intake_url}/v1/logs", json=records(name))
                except httpx.TransportError as exc:
                    if not self.halting.is_set():
                        self.problems.append(f"{name}: {exc!r} before the server was stopped")
                    return  # the server is gone (or going): this batch's fate is unknown
                if response.status_code != 202 or response.json() != {"accepted": BATCH}:
                    self.problems.append(f"{name}: {response.status_code} {response.text}")
                    return
                self.acknowledged.append(name)
                if len(self.acknowledged) >= ENOUGH:
                    self.enough.set()


def records(batch: str) -> list[dict[str, Any]]:
    return [
        {
            "message": f"durability {batch}-r{r}",
            "level": ("info", "warn", "error")[r % 3],
            "attributes": {"marker": f"{batch}-r{r}", "record": r},
        }
        for r in range(BATCH)
    ]


def run_traffic(
    server: ServerProcess, public_key: str, label: str, halt: Callable[[ServerProcess], None]
) -> Traffic:
    """Clients sending until enough batches are acknowledged, then ``halt`` (the server) while they are
    still sending; returns once every client has stopped (each stops when the server stops answering)."""
    load = Traffic(server.intake_url, public_key, label)
    threads = [threading.Thread(target=load.client, args=(n,), daemon=True) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    try:
        load.enough.wait(TRAFFIC_DEADLINE)
        assert not load.problems, load.problems
        assert load.enough.is_set(), f"only {len(load.acknowledged)} batches acknowledged in time"
        load.halting.set()
        halt(server)
    finally:
        load.halting.set()
        if server.process.poll() is None:  # a failed check above: the clients stop once it is gone
            server.process.kill()
        for thread in threads:
            thread.join(timeout=15)
    assert not any(thread.is_alive() for thread in threads), "a client did not stop"
    assert not load.problems, load.problems
    return load


def sigkill(server: ServerProcess) -> None:
    """No drain, no cleanup: whatever is in flight (a commit included) dies with the process."""
    server.process.kill()
    assert server.process.wait(timeout=10) == -signal.SIGKILL


def sigterm(server: ServerProcess) -> None:
    assert server.stop(signal.SIGTERM) == 0, "the server did not exit 0 after SIGTERM"


def durable_env(env: dict[str, str], log_store: str) -> dict[str, str]:
    # The organization's default budget (1,000 requests a minute) would refuse the load with 429s.
    return {**env, "THREADLINE_DEFAULT_RATE_LIMIT_PER_MINUTE": "10000000", "THREADLINE_LOG_STORE": log_store}


def stored_batches(records: list[dict[str, Any]]) -> Counter[str]:
    """Records stored per batch, after checking that no marker is stored twice and each record's message
    matches its marker."""
    markers = Counter(r["attributes"]["marker"] for r in records)
    duplicated = {marker: n for marker, n in markers.items() if n > 1}
    assert not duplicated, f"records stored more than once: {sorted(duplicated)[:20]}"
    for record in records:
        assert record["message"] == f"durability {record['attributes']['marker']}", record
    return Counter(marker.rsplit("-r", 1)[0] for marker in markers)


def check_batches(stored: Counter[str], sent: set[str], acknowledged: set[str]) -> None:
    partial = {batch: n for batch, n in stored.items() if n != BATCH}
    assert not partial, f"batches stored in part (all or nothing was promised): {partial}"
    assert set(stored) <= sent, f"records of batches never sent: {sorted(set(stored) - sent)[:20]}"
    lost = acknowledged - set(stored)
    assert not lost, f"{len(lost)} acknowledged batches lost: {sorted(lost)[:20]}"


def test_sigkill_mid_traffic_loses_no_acknowledged_record(empty_env: dict[str, str], log_store: str) -> None:
    env = durable_env(empty_env, log_store)
    keys = init_database(env)
    sent: set[str] = set()
    acknowledged: set[str] = set()
    for label in ("k1", "k2"):  # the second crash hits a database recovered from the first
        with running_server(env) as server:
            load = run_traffic(server, keys["publicKey"], label, sigkill)
        sent |= set(load.sent)
        acknowledged |= set(load.acknowledged)

    with running_server(env) as server:
        # The recovered server takes new records after the ones that survived.
        response = httpx.post(
            f"{server.intake_url}/v1/logs",
            json=records("after"),
            headers={"x-service-key": keys["publicKey"]},
            timeout=10,
        )
        assert response.status_code == 202, response.text
        stored = stored_batches(all_log_records(server.api_url, keys["secretKey"]))
    check_batches(stored, sent | {"after"}, acknowledged | {"after"})


def test_sigterm_mid_traffic_drains_and_answers_every_commit(
    empty_env: dict[str, str], log_store: str
) -> None:
    env = durable_env(empty_env, log_store)
    keys = init_database(env)
    with running_server(env) as server:
        load = run_traffic(server, keys["publicKey"], "t", sigterm)
    acknowledged = set(load.acknowledged)
    with running_server(env) as server:
        stored = stored_batches(all_log_records(server.api_url, keys["secretKey"]))
    check_batches(stored, set(load.sent), acknowledged)
    # A graceful stop finishes the requests it has read: none was committed and left unanswered.
    unanswered = set(stored) - acknowledged
    assert not unanswered, f"committed but never acknowledged: {sorted(unanswered)}"
