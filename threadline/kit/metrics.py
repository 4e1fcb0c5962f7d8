"""The process's Prometheus metrics (``GET /metrics``), defined once so every layer counts into one registry.

One registry per process, exposed by that process (the API's port; ``threadline worker --metrics-port``),
not prometheus-client's multiprocess mode. Every process that does work is a scrape target of its own
(``serve``: API, intake, executor and chores in one process; each worker; each API process behind a load
balancer), and Prometheus keeps them apart by their ``instance``. The one helper process, SQLite's log store
(``telemetry.log_store``), commits only what its server hands it and answers it; the server counts those
records when the store answers, so nothing it does goes uncounted. Multiprocess mode would have cost a
directory of memory-mapped files to clean at every start, a file per process ever started, and an mmap
write per increment, to merge what Prometheus already merges at query time (``sum by (...)``).

Labels are operation ids, status codes, reasons, run statuses and dependency names: closed sets written in
the code. Never an organization, a key, an id or anything a user sent (``tests/test_metrics.py`` drives
traffic full of such values and scans the exposition for them).

Webhook deliveries and MCP calls are counted by result, where each attempt or call ends (the webhooks'
dispatcher, the MCP session's ``call_tool``).
"""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)

from threadline.kit.faults import on_dependency_error

REGISTRY = CollectorRegistry()
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)

# From a cached read (~1 ms) to a search or a slow commit (seconds); a stream's time is to its first byte.
_DURATION_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

REQUESTS = Counter(
    "threadline_requests",
    "Requests answered, by operationId and HTTP status (the API and the intake; not the dashboard's pages).",
    ["operation", "status"],
    registry=REGISTRY,
)
REQUEST_SECONDS = Histogram(
    "threadline_request_duration_seconds",
    "Time from a request's arrival to its response's start (for a stream: until it opens).",
    ["operation"],
    buckets=_DURATION_BUCKETS,
    registry=REGISTRY,
)
INTAKE_RECORDS_ACCEPTED = Counter(
    "threadline_intake_records_accepted",
    "Log records and events committed by the intake (what its 202s acknowledged).",
    registry=REGISTRY,
)
INTAKE_REFUSED = Counter(
    "threadline_intake_refused",
    "Intake requests refused, by the error's reason (or code when it has none); none of their records "
    "was stored.",
    ["reason"],
    registry=REGISTRY,
)
RUNS_ENDED = Counter(
    "threadline_runs_ended",
    "Runs this process ended, by final status.",
    ["status"],
    registry=REGISTRY,
)
RUNS = Gauge(
    "threadline_runs",
    "Runs queued (waiting for a slot) or running, across the deployment, as the database counted them at "
    "the scrape (every process reports the same figure: aggregate with max, not sum).",
    ["status"],
    registry=REGISTRY,
)
OPEN_STREAMS = Gauge(
    "threadline_open_streams",
    "Streams open in this process (run and thread streams, live tails, the dashboard's live views).",
    registry=REGISTRY,
)
EXECUTOR_SLOTS = Gauge(
    "threadline_executor_slots",
    "Runs this process may execute at once (THREADLINE_MAX_CONCURRENT_RUNS; 0 where it executes none).",
    registry=REGISTRY,
)
EXECUTOR_SLOTS_IN_USE = Gauge(
    "threadline_executor_slots_in_use",
    "Runs this process is executing now.",
    registry=REGISTRY,
)
WEBHOOK_DELIVERIES = Counter(
    "threadline_webhook_deliveries",
    "Webhook delivery attempts ended, by result (succeeded: a 2xx in time; failed: anything else).",
    ["result"],
    registry=REGISTRY,
)
MCP_CALLS = Counter(
    "threadline_mcp_calls",
    "MCP tool calls ended, by result (ok, error: the tool's own error, timeout, failed: the connection).",
    ["result"],
    registry=REGISTRY,
)
DEPENDENCY_ERRORS = Counter(
    "threadline_dependency_errors",
    "Outages of a dependency met (a 503 DEPENDENCY_DOWN answered, a run's retry or end), by dependency.",
    ["dependency"],
    registry=REGISTRY,
)


def _count_outage(dependency: str, _exc: BaseException) -> None:
    DEPENDENCY_ERRORS.labels(dependency).inc()


# Every outage met is heard here from the one classification (``kit.faults``): a 503 answered, a run's
# retry, a run ended by it.
on_dependency_error(_count_outage)
