"""Log triggers: ingested records matched against the enabled log-triggered automations.

Matching runs on the intake's path, before the commit, so it must cost nothing when no automation
listens: the rules live in memory, by organization (loaded at start, reloaded when automations change:
at once in the process that changed them, on the ``automations.changed`` signal elsewhere, and every
``_REFRESH_SECONDS`` in case a signal was lost). A rule cooling down, as far as this process knows, picks
nothing.

What a rule picks is written as a firing owed (``automation_firings``, one per automation) in the records'
own transaction (``telemetry.writer.RecordWatch``), so an acknowledged record that matched is fired even
if the process dies right after the commit. After the commit the firing runs in the background, one per
automation at a time; the database has the last word (``service.fire_log`` re-checks the cooldown under
the automation's lock). Firings left owed (a process that stopped, a match during a firing) are swept at
start and every ``_REFRESH_SECONDS``, and after each firing of the same automation. While a firing is
owed, further matches add nothing to it: a burst of matching records starts one run, even with
``cooldownSeconds: 0``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from threadline.automations import repository, service
from threadline.automations.repository import Automation
from threadline.billing.prices import Prices
from threadline.config import Settings
from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.kit.errors import ApiError
from threadline.kit.signals import RESET, SignalBus
from threadline.kit.statements import InsertOrIgnore
from threadline.kit.waiting import wait_event
from threadline.telemetry.records import Row
from threadline.telemetry.schemas import levels_at_or_above

log = logging.getLogger(__name__)

AUTOMATIONS_CHANGED = "automations.changed"
_REFRESH_SECONDS = 30.0


@dataclass(slots=True)
class _Rule:
    automation_id: str
    organization_id: str
    project_id: str | None
    levels: frozenset[str]
    contains: str | None  # lower-cased
    cooldown: timedelta
    last_fired: datetime | None

    @classmethod
    def of(cls, automation: Automation) -> _Rule:
        trigger = automation.trigger
        contains = trigger.get("contains")
        return cls(
            automation_id=automation.id,
            organization_id=automation.organization_id,
            project_id=trigger.get("projectId"),
            levels=frozenset(levels_at_or_above(trigger["level"])),
            contains=contains.lower() if contains else None,
            cooldown=timedelta(seconds=int(trigger["cooldownSeconds"])),
            last_fired=automation.last_triggered_at,
        )

    def cooling(self, now: datetime) -> bool:
        return self.last_fired is not None and now < self.last_fired + self.cooldown

    def matches(self, row: Row) -> bool:
        return (
            row["kind"] == "log"
            and row["level"] in self.levels
            and (self.project_id is None or row["project_id"] == self.project_id)
            and (self.contains is None or self.contains in row["message"].lower())
        )


class LogTriggers:
    def __init__(
        self,
        db: Database,
        signals: SignalBus,
        prices: Prices,
        clock: Clock,
        insert_or_ignore: InsertOrIgnore,
        settings: Settings,
    ) -> None:
        self._db = db
        self._settings = settings
        self._insert_or_ignore = insert_or_ignore
        self._signals = signals
        self._prices = prices
        self._clock = clock
        self._rules: dict[str, list[_Rule]] = {}
        self._stale = asyncio.Event()
        self._refresher: asyncio.Task[None] | None = None
        self._firing: dict[str, asyncio.Task[None]] = {}
        self._again: set[str] = set()  # owed firings that arrived while their automation was firing
        # Reloads may overlap (a change's and the refresher's): the result of one that began before the
        # last applied one is older, and is dropped.
        self._reloads_begun = 0
        self._reload_applied = 0
        signals.subscribe(self._on_signal)

    async def start(self) -> None:
        try:
            await self.reload()
            await self.sweep()
        except Exception:  # the database away at start: the refresher tries again
            log.exception("could not load the log triggers")
        self._refresher = asyncio.create_task(self._refresh(), name="log-triggers")

    async def aclose(self) -> None:
        """Stops reloading and lets the firings under way finish (they are short transactions)."""
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresher
        await self.settle()

    async def settle(self) -> None:
        """Returns once the firings under way have ended (at shutdown; tests, before counting runs)."""
        while self._firing:
            await asyncio.wait(list(self._firing.values()))

    async def changed(self) -> None:
        """After a change to automations commits: this process sees it before the request is answered,
        the others on the signal."""
        await self.reload()
        try:
            await self._signals.publish(AUTOMATIONS_CHANGED, "")
        except Exception:  # the others reload within _REFRESH_SECONDS anyway
            log.warning("could not announce a change to automations", exc_info=True)

    async def reload(self) -> None:
        self._reloads_begun += 1
        generation = self._reloads_begun
        async with self._db.transaction(write=False) as conn:
            loaded = await repository.AutomationsAcrossOrganizations(conn).log_triggered()
        if generation < self._reload_applied:
            return
        self._reload_applied = generation
        rules: dict[str, list[_Rule]] = {}
        for automation in loaded:
            rule = _Rule.of(automation)
            known = self._find(automation.organization_id, automation.id)
            if (
                known is not None
                and known.last_fired
                and (rule.last_fired is None or known.last_fired > rule.last_fired)
            ):
                rule.last_fired = known.last_fired  # a firing of ours not yet visible to this read
            rules.setdefault(automation.organization_id, []).append(rule)
        self._rules = rules

    def match(self, rows: Sequence[Row]) -> list[tuple[Any, int]]:
        if not self._rules:
            return []
        now = self._clock.now()
        hits: list[tuple[Any, int]] = []
        picked: set[str] = set()  # one record per automation and request is enough: one firing is owed
        for index, row in enumerate(rows):
            for rule in self._rules.get(row["organization_id"], ()):
                if rule.automation_id not in picked and rule.matches(row) and not rule.cooling(now):
                    picked.add(rule.automation_id)
                    hits.append((rule, index))
        return hits

    def persist(self, connection: Connection, hits: list[tuple[Any, dict[str, Any]]]) -> None:
        now = self._clock.now()
        owed: dict[str, dict[str, Any]] = {}
        for rule, record in hits:
            owed.setdefault(
                rule.automation_id,
                {
                    "automation_id": rule.automation_id,
                    "organization_id": rule.organization_id,
                    "record": record,
                    "matched_at": now,
                },
            )
        try:
            with connection.begin_nested():
                repository.owe_firings(connection, list(owed.values()), self._insert_or_ignore)
        except sa.exc.IntegrityError:  # an automation deleted since the match: owed one by one
            for firing in owed.values():
                try:
                    with connection.begin_nested():
                        repository.owe_firings(connection, [firing], self._insert_or_ignore)
                except sa.exc.IntegrityError:
                    log.info("automation %s was deleted: its firing is dropped", firing["automation_id"])

    def committed(self, hits: list[tuple[Any, dict[str, Any]]]) -> None:
        for rule, _record in hits:
            self._kick(rule.automation_id)

    async def sweep(self) -> None:
        """Fires what is owed, whoever owed it (a process that stopped before firing included)."""
        async with self._db.transaction(write=False) as conn:
            owed = await repository.AutomationsAcrossOrganizations(conn).owed_firings()
        for automation_id in owed:
            self._kick(automation_id)

    def _kick(self, automation_id: str) -> None:
        if automation_id in self._firing:
            self._again.add(automation_id)  # it may have taken its owed firing before this one
            return
        task = asyncio.create_task(self._fire(automation_id), name=f"log-trigger-{automation_id}")
        self._firing[automation_id] = task
        task.add_done_callback(functools.partial(self._fired, automation_id))

    async def _fire(self, automation_id: str) -> None:
        now = self._clock.now()
        try:
            try:
                async with self._db.transaction() as conn:
                    run, last_fired = await service.fire_log(
                        conn, self._signals, self._prices, automation_id, now=now, settings=self._settings
                    )
            except ApiError as error:
                async with self._db.transaction() as conn:
                    if await service.firing_failed(conn, automation_id, "log", error, now=now):
                        log.warning("automation %s fired without a run: %s", automation_id, error.message)
                last_fired = now
            else:
                if run is not None:
                    log.info("automation %s fired: run %s", automation_id, run.id)
            for rule in self._rules_of(automation_id):
                rule.last_fired = last_fired
        except Exception:  # the database away: the sweep fires it later
            log.exception("automation %s could not fire", automation_id)

    def _fired(self, automation_id: str, _task: object) -> None:
        self._firing.pop(automation_id, None)
        if automation_id in self._again:
            self._again.discard(automation_id)
            self._kick(automation_id)

    def _rules_of(self, automation_id: str) -> list[_Rule]:
        return [
            rule for rules in self._rules.values() for rule in rules if rule.automation_id == automation_id
        ]

    def _find(self, organization_id: str, automation_id: str) -> _Rule | None:
        for rule in self._rules.get(organization_id, ()):
            if rule.automation_id == automation_id:
                return rule
        return None

    def _on_signal(self, topic: str, _payload: str) -> None:
        if topic in (AUTOMATIONS_CHANGED, RESET):
            self._stale.set()

    async def _refresh(self) -> None:
        while True:
            await wait_event(self._stale, _REFRESH_SECONDS)
            self._stale.clear()
            try:
                await self.reload()
                await self.sweep()
            except Exception:
                log.exception("could not reload the log triggers")
