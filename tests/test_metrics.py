"""``GET /metrics``: what it counts, that its labels never carry a tenant's data, who may read it, and
that each kind of process (``serve`` with its log store process, ``threadline worker --metrics-port``)
answers for what it did.

The registry is the process's (``kit.metrics``), shared by every test of the session, so counts are
compared before and after the traffic a test drives."""

from __future__ import annotations

import errno
import re

import httpx
import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr
from redis.exceptions import ConnectionError as RedisConnectionError

from tests.conftest import Backend
from tests.runs.helpers import read_stream, start_run, types, wait_for_status
from tests.support import Tenant, free_port, make_thread, running_server, running_worker, spawned
from threadline.app import create_app
from threadline.config import Settings
from threadline.kit.errors import ServiceUnavailable, error_response
from threadline.kit.faults import unavailable
from threadline.kit.metrics import REGISTRY

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]

USER_TEXT = "Zanzibar-quokka-7781"  # in titles, messages, log records, paths and queries


def samples(exposition: str) -> Samples:
    found: Samples = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(found: Samples, name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


async def scrape(client: httpx.AsyncClient, **headers: str) -> str:
    response = await client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return response.text


async def test_traffic_is_counted_and_no_label_carries_tenant_data(
    client: httpx.AsyncClient, intake: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
) -> None:
    before = samples(await scrape(client))

    assert (await client.get("/v1/me", headers=tenant.secret)).status_code == 200
    assert (
        await client.get("/v1/me", headers={"Authorization": f"Bearer sk_{USER_TEXT}"})
    ).status_code == 401
    thread_id = await make_thread(client, tenant, title=USER_TEXT, metadata={"customer": USER_TEXT})
    missing = await client.get(f"/v1/threads/thr_{USER_TEXT}", headers=tenant.secret)
    assert missing.status_code == 404
    assert (await client.get(f"/v1/{USER_TEXT}", headers=tenant.secret)).status_code == 404
    found = await client.get("/v1/search/messages", params={"q": USER_TEXT}, headers=other_tenant.secret)
    assert found.status_code == 200
    assert (await client.get("/v1/threads", headers=tenant.secret)).status_code == 200

    run = await start_run(client, tenant, thread_id, input=f"{USER_TEXT} #notools")
    events = await read_stream(client, tenant, f"/v1/runs/{run['id']}/stream")
    assert types(events)[-1] == "[DONE]"
    await wait_for_status(client, tenant, run["id"], "completed")

    records = [{"message": USER_TEXT, "attributes": {"user": USER_TEXT}} for _ in range(3)]
    assert (await intake.post("/v1/logs", json=records, headers=tenant.public)).status_code == 202
    refused = await intake.post("/v1/logs", json={"level": "info"}, headers=tenant.public)
    assert refused.status_code == 400
    assert (await intake.post("/v1/logs", json=records, headers=tenant.secret)).status_code == 403

    exposition = await scrape(client)
    after = samples(exposition)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("threadline_requests_total", operation="me.get", status="200") == 1
    assert grew("threadline_requests_total", operation="me.get", status="401") == 1
    assert grew("threadline_requests_total", operation="threads.create", status="201") == 1
    assert grew("threadline_requests_total", operation="threads.get", status="404") == 1
    assert grew("threadline_requests_total", operation="unknown", status="404") == 1
    assert grew("threadline_requests_total", operation="threads.list", status="200") == 1
    assert grew("threadline_requests_total", operation="runs.stream", status="200") == 1
    assert grew("threadline_requests_total", operation="logs.ingest", status="202") == 1
    assert grew("threadline_request_duration_seconds_count", operation="me.get") == 2
    assert grew("threadline_intake_records_accepted_total") == 3
    assert grew("threadline_intake_refused_total", reason="VALIDATION_FAILED") == 1
    assert grew("threadline_intake_refused_total", reason="SECRET_KEY_NOT_ALLOWED") == 1
    assert grew("threadline_runs_ended_total", status="completed") == 1
    assert value(after, "threadline_runs", status="queued") == 0
    assert value(after, "threadline_runs", status="running") == 0
    assert value(after, "threadline_executor_slots") >= 16
    assert value(after, "threadline_open_streams") == 0

    forbidden = [
        USER_TEXT,
        thread_id,
        run["id"],
        *(t.org_id for t in (tenant, other_tenant)),
        *(t.project_id for t in (tenant, other_tenant)),
        *(t.created.secret_value for t in (tenant, other_tenant)),
        *(t.created.public_value for t in (tenant, other_tenant)),
    ]
    for text in forbidden:
        assert text not in exposition, text
    # Every label value is one of a closed set's: no id of any kind (``org_``, ``thr_``, ``key_``...).
    assert not re.search(r'="(org|proj|key|thr|msg|run|log|usr|txn|sk|pk|st)_', exposition)


async def test_a_token_guards_the_scrape_when_set(settings: Settings) -> None:
    guarded = settings.model_copy(update={"metrics_token": SecretStr("scrape-token-1234")})
    app = create_app(guarded, chores=False)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            refused = await http.get("/metrics")
            assert refused.status_code == 401
            assert refused.json()["missingContext"] == ["Authorization"]
            wrong = await http.get("/metrics", headers={"Authorization": "Bearer scrape-token-9999"})
            assert wrong.status_code == 401
            assert "threadline_requests_total" in await scrape(http, Authorization="Bearer scrape-token-1234")


async def test_metrics_off_serves_no_endpoint(settings: Settings) -> None:
    app = create_app(settings.model_copy(update={"metrics": False}), chores=False)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            response = await http.get("/metrics")
            assert response.status_code == 404
            assert response.headers["content-type"].startswith("text/html")  # the dashboard's page


def test_every_outage_met_is_counted_by_dependency() -> None:
    """Wherever the one classification (``kit.faults``) meets an outage, its dependency is counted once;
    a 503 that is not an outage (draining) is not."""
    before = samples(generate_latest(REGISTRY).decode())
    for cause in (RedisConnectionError("refused"), OSError(errno.ENOSPC, "No space left on device")):
        assert error_response(unavailable(cause), "me.get", None).status_code == 503
    error_response(ServiceUnavailable("draining"), "me.get", None)  # not a dependency's outage
    after = samples(generate_latest(REGISTRY).decode())
    for dependency in ("redis", "disk"):
        grew = value(after, "threadline_dependency_errors_total", dependency=dependency) - value(
            before, "threadline_dependency_errors_total", dependency=dependency
        )
        assert grew == 1, dependency


@pytest.mark.embedded
def test_serve_counts_what_its_log_store_process_commits(
    backend: Backend, settings: Settings, tenant: Tenant
) -> None:
    """``serve`` on SQLite appends through its store process; the server's own /metrics counts them. A
    stream holds the open-streams gauge while it is open."""
    with running_server(backend.env(settings)) as server, httpx.Client(timeout=10) as http:
        records = [{"message": f"record {i}"} for i in range(25)]
        accepted = http.post(f"{server.intake_url}/v1/logs", json=records, headers=tenant.public)
        assert accepted.status_code == 202, accepted.text
        found = samples(http.get(f"{server.api_url}/metrics").text)

        thread = http.post(f"{server.api_url}/v1/threads", json={}, headers=tenant.secret).json()
        body = {"input": "#notools #chunks=100 #delay=20"}
        run = http.post(f"{server.api_url}/v1/threads/{thread['id']}/runs", json=body, headers=tenant.secret)
        stream_url = f"{server.api_url}/v1/runs/{run.json()['id']}/stream"
        with http.stream("GET", stream_url, headers=tenant.secret) as stream:
            # The gauge is taken by the stream's dependency, seen from another connection a frame or two
            # after the first bytes: scraped after each frame until it shows (a bounded number of them).
            for _, _line in zip(range(40), stream.iter_lines(), strict=False):
                streaming = samples(http.get(f"{server.api_url}/metrics").text)
                if value(streaming, "threadline_open_streams") == 1:
                    break
            assert value(streaming, "threadline_open_streams") == 1
            # At least this run: the session's database may hold other tests' runs this server also claims.
            assert value(streaming, "threadline_executor_slots_in_use") >= 1
            assert value(streaming, "threadline_runs", status="running") >= 1
    assert value(found, "threadline_intake_records_accepted_total") == 25
    assert value(found, "threadline_requests_total", operation="logs.ingest", status="202") == 1


@pytest.mark.distributed
def test_worker_answers_on_its_metrics_port(backend: Backend, settings: Settings) -> None:
    port = free_port()
    env = {**backend.env(settings), "THREADLINE_MAX_CONCURRENT_RUNS": "3"}
    with running_worker(env, "--metrics-port", str(port)) as worker, httpx.Client(timeout=10) as http:
        response = http.get(f"http://127.0.0.1:{port}/metrics")
        assert response.status_code == 200, worker.log()
        found = samples(response.text)
        assert http.get(f"http://127.0.0.1:{port}/v1/me").status_code == 404
    assert value(found, "threadline_executor_slots") == 3
    assert value(found, "threadline_executor_slots_in_use") == 0
    assert ("threadline_runs", (("status", "queued"),)) in found


@pytest.mark.embedded
def test_serve_intake_answers_on_its_metrics_port(
    backend: Backend, settings: Settings, tenant: Tenant
) -> None:
    """``serve-intake`` has no API port: ``--metrics-port`` gives its counts a place to be read."""
    intake_port, metrics_port = free_port(), free_port()
    metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    args = ["serve-intake", "--port", str(intake_port), "--metrics-port", str(metrics_port)]
    with httpx.Client(timeout=10) as http:

        def ready(_log: object) -> bool:
            try:
                return http.get(metrics_url).status_code == 200
            except httpx.TransportError:
                return False

        with spawned(args, backend.env(settings), ready, 60) as (_process, log):
            records = [{"message": f"record {i}"} for i in range(7)]
            url = f"http://127.0.0.1:{intake_port}/v1/logs"
            assert http.post(url, json=records, headers=tenant.public).status_code == 202, log()
            found = samples(http.get(metrics_url).text)
    assert value(found, "threadline_intake_records_accepted_total") == 7
    assert value(found, "threadline_requests_total", operation="logs.ingest", status="202") == 1
    assert value(found, "threadline_executor_slots") == 0
