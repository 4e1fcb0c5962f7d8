"""One organization's schedules against another's: ``python bench/fair_schedules.py``.

Organization B holds ``--crowd`` automations (100, the default limit; the limits are raised to fit) and
organization A one, all ``* * * * *`` and all due at the same instant; the process's scheduler
(``automations.scheduler``) fires them once, on the real clock, as a server would. The figures: how long
after the due time A's schedule fired (its ``lastTriggeredAt``), B's last, and the whole tick. Target
(issue 36): A within 1 s (before the round robin, A waited behind every one of B's: 10.7 s for 200).
Runs are left queued (nothing executes them here): the firing is what is measured. Embedded SQLite in a
temporary directory unless ``--database-url`` names another database (an empty one; it is migrated).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import sqlalchemy as sa

from threadline.automations import service
from threadline.automations.scheduler import Scheduler
from threadline.automations.schemas import AutomationCreate
from threadline.automations.tables import automations
from threadline.config import Settings
from threadline.kit.clock import Clock
from threadline.provisioning import create_organization
from threadline.runtime import open_services
from threadline.storage.migrate import upgrade

SCHEDULE = {"name": "every minute", "trigger": {"type": "schedule", "cron": "* * * * *"}}


async def run(settings: Settings, crowd: int) -> None:
    clock = Clock()
    async with open_services(settings, "off", clock=clock) as services:
        async with services.db.transaction() as conn:
            alone = (await create_organization(conn, "alone", now=clock.now())).organization.id
            crowded = (await create_organization(conn, "crowded", now=clock.now())).organization.id
        body = AutomationCreate.model_validate({**SCHEDULE, "action": {"prompt": "Summarise."}})

        async def changed() -> None:
            return None

        for organization_id, count in ((crowded, crowd), (alone, 1)):  # A's made last, as in the issue
            for _ in range(count):
                async with services.db.transaction() as conn:
                    await service.create_automation(
                        conn, organization_id, body, now=clock.now(), changed=changed, settings=settings
                    )
        due = clock.now()
        async with services.db.transaction() as conn:
            await conn.execute(automations.update().values(next_run_at=due))
        scheduler = Scheduler(services.db, services.signals, services.prices, clock, settings)
        started = time.perf_counter()
        fired = await scheduler.tick()
        took = time.perf_counter() - started
        async with services.db.transaction(write=False) as conn:
            rows = (
                await conn.execute(sa.select(automations.c.organization_id, automations.c.last_triggered_at))
            ).all()
    alone_at = max(at for org, at in rows if org == alone) - due
    crowd_last = max(at for org, at in rows if org == crowded) - due
    print(f"fired {fired} schedules in {took:.2f} s ({took / max(fired, 1) * 1000:.1f} ms each)")
    milliseconds = timedelta(milliseconds=1)
    print(f"A's one schedule fired {alone_at / milliseconds:.0f} ms after it was due (target < 1000)")
    print(f"B's last of {crowd} fired {crowd_last / milliseconds:.0f} ms after it was due")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crowd", type=int, default=100)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        settings = Settings(
            data_dir=Path(data_dir),
            database_url=args.database_url,
            default_automation_limit=args.crowd,
            default_queued_run_limit=args.crowd + 1,  # every firing starts its run, as before the limit
        )
        upgrade(settings.resolved_database_url)
        asyncio.run(run(settings, args.crowd))


if __name__ == "__main__":
    main()
