"""``/``: the organization at a glance. Every figure is one bounded query on an index that leads with the
organization. Runs and log records of the last 24 hours (from the top of the hour 24 hours ago, as the
charts) are read from the hourly counts (``run_counts``, ``log_counts``): exact, at the cost of the 25
hours read. Threads count the newest ``COUNT_CAP`` at most ("10,000+" beyond), and the recent errors look
among the newest ``SCAN_WINDOW`` records, so the page costs the same with a million records as with ten."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Annotated, Protocol

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse

from threadline.billing import service as billing
from threadline.billing.ledger import Balance
from threadline.dashboard.charts import stacked
from threadline.dashboard.web import ViewerDep, render
from threadline.kit.clock import Clock, isoformat
from threadline.kit.db import Database
from threadline.kit.deps import get_services
from threadline.kit.timebuckets import TimeBuckets
from threadline.runs.activity import Activity, RunActivity
from threadline.runs.repository import Run, RunRepository
from threadline.runs.tables import RUN_STATUSES
from threadline.telemetry.repository import SCAN_WINDOW, LogFilters, LogRepository
from threadline.telemetry.schemas import LEVELS, LogRecordOut
from threadline.telemetry.volume import volume
from threadline.threads.repository import ThreadRepository

router = APIRouter()

COUNT_CAP = SCAN_WINDOW
RECENT = 8


class OverviewServices(Protocol):
    """What the overview reads from the process's services."""

    db: Database
    clock: Clock


ServicesDep = Annotated[OverviewServices, Depends(get_services)]


class Tally:
    """Counts by one column (summed over the buckets of ``counts``' keys), in a fixed order."""

    def __init__(self, names: tuple[str, ...], counts: dict[tuple[int, str], int]) -> None:
        totals = dict.fromkeys(names, 0)
        for (_, name), n in counts.items():
            totals[name] = totals.get(name, 0) + n
        self.items = [(name, totals[name]) for name in names]
        self.total = sum(totals.values())


@router.get("/", response_class=HTMLResponse)
async def overview(request: Request, viewer: ViewerDep, services: ServicesDep) -> HTMLResponse:
    organization_id = viewer.organization_id
    since: datetime = services.clock.now() - timedelta(days=1)

    hours = TimeBuckets.covering(since, services.clock.now(), most=25)

    # Three read transactions at once: the error list reads thousands of rows, and on SQLite (queries on
    # worker threads, the GIL released while SQLite steps) as on PostgreSQL (pooled connections) they
    # overlap, so the page costs its slowest read rather than their sum.
    async def tally_logs() -> Tally:
        async with services.db.transaction(write=False) as conn:
            counted = await volume(conn, organization_id, LogFilters(), hours, SCAN_WINDOW)
        return Tally(LEVELS, counted.counts)

    async def recent_errors() -> list[LogRecordOut]:
        async with services.db.transaction(write=False) as conn:
            return await LogRepository(conn, organization_id).newest_of_level("error", since, RECENT)

    async def the_rest() -> tuple[tuple[int, bool], list[Run], Balance, Activity]:
        async with services.db.transaction(write=False) as conn:
            threads = await ThreadRepository(conn, organization_id).count(COUNT_CAP)
            recent_runs = await RunRepository(conn, organization_id).newest(RECENT)
            balance = await billing.get_balance(conn, organization_id)
            hourly = await RunActivity(conn, organization_id).by_bucket(hours)
        return threads, recent_runs, balance, hourly

    logs, errors, ((threads, threads_capped), recent_runs, balance, hourly) = await asyncio.gather(
        tally_logs(), recent_errors(), the_rest()
    )
    runs = Tally(RUN_STATUSES, hourly.runs)
    charts = [
        stacked("runs-chart", "Runs by status, per hour", hours, RUN_STATUSES, hourly.runs, "runs"),
        stacked(
            "tokens-chart",
            "Tokens per hour (ended runs, by the hour they were created)",
            hours,
            ("tokens",),
            {(i, "tokens"): n for i, n in hourly.tokens.items()},
            "tokens",
        ),
    ]
    return render(
        request,
        "overview/index.html",
        viewer,
        threads=threads,
        threads_capped=threads_capped,
        runs=runs,
        logs=logs,
        recent_runs=recent_runs,
        errors=errors,
        balance=balance,
        cap=COUNT_CAP,
        charts=charts,
        since_input=isoformat(hours.start)[:16],
    )
