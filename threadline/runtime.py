"""The long-lived parts of a process, opened once at start-up and closed once at shutdown.

Backends are chosen here, from configuration, and nowhere else: a Redis URL switches the rate limiter and
the signal bus to their Redis implementations; the database URL picks the SQL dialect and the search backend.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError

from threadline.agent.tools import Tools
from threadline.automations.scheduler import Scheduler
from threadline.automations.triggers import LogTriggers
from threadline.billing.prices import Prices
from threadline.chores import Chores
from threadline.config import Settings
from threadline.dashboard.sessions import SessionSweeper
from threadline.idempotency.store import IdempotencyStore
from threadline.idempotency.sweeper import IdempotencySweeper
from threadline.keys.auth import KeyAuthenticator
from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.kit.egress import EgressPolicy
from threadline.kit.encryption import SecretBox, configured_box
from threadline.kit.faults import check_disk_room
from threadline.kit.ratelimit import MemoryRateLimiter, RateLimiter, RedisRateLimiter
from threadline.kit.signals import MemorySignalBus, RedisSignalBus, SignalBus
from threadline.kit.statements import insert_or_ignore
from threadline.kit.streamslots import StreamSlots
from threadline.runs.artifact_tool import CREATE_ARTIFACT
from threadline.runs.executor import RunExecutor
from threadline.runs.feeds import RunFeeds
from threadline.runs.service import ThreadDeletionWithRuns
from threadline.search.backend import SearchBackend
from threadline.search.postgres import PostgresSearch
from threadline.search.postings import PostingsSealer
from threadline.search.sqlite import SqliteSearch
from threadline.search.tool import search_messages_tool
from threadline.telemetry.append_postgres import PostgresAppender
from threadline.telemetry.append_sqlite import SqliteAppender, SqliteStoreAppender
from threadline.telemetry.housekeeping import DeletingRetention, Retention
from threadline.telemetry.partitions import PartitionedRetention
from threadline.telemetry.tail import LogTails
from threadline.telemetry.tool import QUERY_LOGS
from threadline.telemetry.writer import LogAppender, LogWriter
from threadline.threads.service import ThreadDeletion, ThreadInserts, thread_inserts
from threadline.webhooks.dispatcher import WebhookDispatcher
from threadline.webhooks.sweeper import WebhookSweeper

if TYPE_CHECKING:
    from threadline.access.principal import StreamSlotServices
    from threadline.agents.endpoints import AgentServices
    from threadline.automations.endpoints import AutomationServices
    from threadline.dashboard.pages.automations import AutomationPageServices
    from threadline.dashboard.pages.billing import BillingServices
    from threadline.dashboard.pages.keys import KeysPageServices
    from threadline.dashboard.pages.logs import LogServices
    from threadline.dashboard.pages.mcp_servers import McpPageServices
    from threadline.dashboard.pages.overview import OverviewServices
    from threadline.dashboard.pages.runs import RunPageServices
    from threadline.dashboard.pages.search import SearchPageServices
    from threadline.dashboard.pages.settings import SettingsPageServices
    from threadline.dashboard.pages.threads import ThreadPageServices
    from threadline.dashboard.pages.webhooks import WebhookPageServices
    from threadline.dashboard.passwords import AttemptServices
    from threadline.dashboard.signin import SignInServices
    from threadline.dashboard.streams import StreamServices
    from threadline.dashboard.web import PageServices
    from threadline.health import ProbedServices
    from threadline.idempotency.middleware import IdempotencyServices
    from threadline.keys.endpoints import KeyServices
    from threadline.keys.middleware import AccessServices
    from threadline.keys.stream_access import TokenServices
    from threadline.mcp_servers.endpoints import McpServerServices
    from threadline.messages.endpoints import MessageServices
    from threadline.projects.endpoints import ProjectServices
    from threadline.runs.endpoints import RunServices
    from threadline.search.endpoints import SearchServices
    from threadline.settings.endpoints import SettingsServices
    from threadline.telemetry.endpoints import LogReadServices
    from threadline.telemetry.intake import IntakeServices
    from threadline.threads.endpoints import ThreadServices
    from threadline.threads.fast_list import ListServices
    from threadline.webhooks.endpoints import WebhookServices


@dataclass(slots=True)
class Services:
    settings: Settings
    db: Database
    redis: Redis | None
    limiter: RateLimiter
    signals: SignalBus
    authenticator: KeyAuthenticator
    search: SearchBackend
    logs: LogWriter
    log_tails: LogTails
    run_feeds: RunFeeds
    executor: RunExecutor | None
    clock: Clock
    prices: Prices
    log_triggers: LogTriggers
    scheduler: Scheduler | None
    thread_inserts: ThreadInserts
    thread_deletion: ThreadDeletion
    retention: Retention
    postings: PostingsSealer | None  # PostgreSQL's only: SQLite's FTS5 counts from its own index
    idempotency: IdempotencyStore  # the API's keyed POSTs' claims and answers, group-committed
    chores: Chores | None = None
    stream_slots: StreamSlots = field(default_factory=StreamSlots)
    # Where tenants' MCP servers (and webhooks) may be reached, and the box their secrets are sealed in
    # (None: no key configured on the distributed shape, so no secret can be stored).
    egress: EgressPolicy = field(default_factory=EgressPolicy)
    secret_box: SecretBox | None = None
    # Sends webhook deliveries (every process that handles runs; None: the intake alone).
    webhooks: WebhookDispatcher | None = None

    def close_streams(self) -> None:
        """Ends live tails and run streams (at shutdown): their clients resume elsewhere by cursor."""
        self.log_tails.close()
        self.run_feeds.close()

    async def check_ready(self) -> None:
        if self.db.sqlite_path is not None:
            check_disk_room(self.db.sqlite_path.parent)
        await self.db.ping()
        if self.redis is not None:
            await self.redis.ping()


if TYPE_CHECKING:

    def _provides(
        services: Services,
    ) -> tuple[
        AccessServices,
        TokenServices,
        IntakeServices,
        ProbedServices,
        AutomationServices,
        KeyServices,
        RunServices,
        SearchServices,
        SettingsServices,
        LogReadServices,
        ThreadServices,
        ListServices,
        AttemptServices,
        StreamServices,
        PageServices,
        SignInServices,
        ThreadPageServices,
        SearchPageServices,
        AutomationPageServices,
        SettingsPageServices,
        RunPageServices,
        OverviewServices,
        KeysPageServices,
        LogServices,
        McpServerServices,
        WebhookServices,
        IdempotencyServices,
        WebhookPageServices,
        MessageServices,
        ProjectServices,
        AgentServices,
        BillingServices,
        McpPageServices,
        StreamSlotServices,
    ]:
        """Never run: mypy checks here that ``Services`` holds what each consumer reads from it (they
        receive it untyped, from the app's ``Runtime``, and name only what they read): every endpoint's,
        middleware's and dashboard page's protocol."""
        s = services
        return (
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
            s,
        )


def builtin_tools(search: SearchBackend) -> Tools:
    """The tools every run's model is offered, in the order it is shown them."""
    return Tools([search_messages_tool(search), QUERY_LOGS, CREATE_ARTIFACT])


def search_backend(dialect: str) -> SearchBackend:
    return SqliteSearch() if dialect == "sqlite" else PostgresSearch()


# Connections one process opens to Redis at most. redis-py's default pool fails a command at once
# (MaxConnectionsError, answered 503) when its 100 connections are busy, which a burst of 100 concurrent
# requests reached; this pool makes a command wait for a free connection instead, up to the timeout.
_REDIS_CONNECTIONS = 256
_REDIS_POOL_WAIT_SECONDS = 5.0
# After Redis restarts, every pooled connection is dead and fails once on first use: a command that meets
# a closed connection is retried once, at once, on a new one, so a healthy Redis means healthy answers.
# (A retried rate-limit hit may count twice if the first reply was lost: a token, never a wrong answer.)
_REDIS_RETRY = Retry(NoBackoff(), 1)


def connect_redis(settings: Settings) -> Redis | None:
    if settings.redis_url is None:
        return None
    pool = BlockingConnectionPool.from_url(
        settings.redis_url.get_secret_value(),
        decode_responses=True,
        max_connections=_REDIS_CONNECTIONS,
        timeout=_REDIS_POOL_WAIT_SECONDS,
        retry=_REDIS_RETRY,
        retry_on_error=[RedisConnectionError],
    )
    return Redis.from_pool(pool)


# What a process does with runs: "server" executes them (and fires scheduled automations) when the
# configuration says the server does (``Settings.executes_runs_in_server``) and otherwise only ends the runs
# of dead executors; "worker" always executes and schedules; "off" (the intake alone) neither. Every
# process fires the log triggers of the records it ingests.
RunRole = Literal["server", "worker", "off"]


@asynccontextmanager
async def open_services(
    settings: Settings, runs: RunRole = "server", *, chores: bool = False, clock: Clock | None = None
) -> AsyncIterator[Services]:
    """``chores``: run the background chores (``threadline.chores`` says which processes do).
    ``clock``: what automations read the time from (tests pass a ``ManualClock``)."""
    clock = clock or Clock()
    prices = Prices(settings.model_prices)
    # Each part is closed by the stack as soon as it exists, in the reverse of the order it was made in
    # (which is why the parts are made in this order), and a close that raises does not skip the others.
    async with AsyncExitStack() as stack:
        db = Database(settings.resolved_database_url)
        stack.push_async_callback(db.dispose)
        redis = connect_redis(settings)
        if redis is not None:
            stack.push_async_callback(redis.aclose)
        limiter: RateLimiter
        signals: SignalBus
        if redis is not None:
            limiter = RedisRateLimiter(redis, settings.redis_prefix)
            signals = RedisSignalBus(redis, settings.redis_prefix)
        else:
            limiter = MemoryRateLimiter(clock)
            signals = MemorySignalBus()
        stack.push_async_callback(limiter.aclose)
        stack.push_async_callback(signals.aclose)
        authenticator = KeyAuthenticator(db, signals, settings, clock)
        stack.push_async_callback(authenticator.aclose)
        appender, retention, sealer = _per_dialect(settings, db)
        log_triggers = LogTriggers(db, signals, prices, clock, insert_or_ignore(db.dialect_name), settings)
        stack.push_async_callback(log_triggers.aclose)
        inserts = thread_inserts(db)
        stack.push_async_callback(inserts.aclose)
        idempotency = IdempotencyStore(db)
        stack.push_async_callback(idempotency.aclose)
        logs = LogWriter(db, signals, appender, log_triggers)
        stack.push_async_callback(logs.aclose)
        log_tails = LogTails(signals)
        run_feeds = RunFeeds(db, signals)
        search = search_backend(db.dialect_name)
        executor = scheduler = None
        egress = EgressPolicy(settings.egress_allow)
        box = configured_box(
            settings.encryption_key.get_secret_value() if settings.encryption_key else None,
            settings.data_dir,
            embedded=db.dialect_name == "sqlite",
        )
        if runs != "off":
            execute = runs == "worker" or settings.executes_runs_in_server
            executor = RunExecutor(
                db,
                signals,
                builtin_tools(search),
                settings,
                prices,
                execute=execute,
                clock=clock,
                box=box,
                egress=egress,
            )
            if execute:
                scheduler = Scheduler(db, signals, prices, clock, settings)
        services = Services(
            settings=settings,
            db=db,
            redis=redis,
            limiter=limiter,
            signals=signals,
            authenticator=authenticator,
            search=search,
            logs=logs,
            log_tails=log_tails,
            run_feeds=run_feeds,
            executor=executor,
            clock=clock,
            prices=prices,
            log_triggers=log_triggers,
            scheduler=scheduler,
            thread_inserts=inserts,
            thread_deletion=ThreadDeletionWithRuns(signals, prices, clock),
            retention=retention,
            postings=sealer,
            idempotency=idempotency,
            chores=Chores(
                retention,
                sealer,
                SessionSweeper(db, clock, settings),
                [IdempotencySweeper(db, clock), WebhookSweeper(db, clock)],
                clock=clock,
            )
            if chores
            else None,
            egress=egress,
            secret_box=box,
        )
        if runs != "off":
            services.webhooks = WebhookDispatcher(db, signals, clock, services.egress, services.secret_box)
        stack.callback(services.close_streams)  # after the executor's runs end, before the writers close
        await signals.start()
        authenticator.start()
        await log_triggers.start()
        for part in (executor, scheduler, services.chores, services.webhooks):
            if part is not None:
                stack.push_async_callback(part.aclose)
                part.start()
        yield services


def _per_dialect(settings: Settings, db: Database) -> tuple[LogAppender, Retention, PostingsSealer | None]:
    """The dialect's log appends, retention and postings sealer, on one branch. PostgreSQL appends in the
    server, keeps days in partitions and seals postings; SQLite appends in its store process
    (``THREADLINE_LOG_STORE=process``, a database file) or else in the server, deletes expired records and
    needs no postings (FTS5 counts from its own index)."""
    if db.dialect_name == "postgresql":
        return PostgresAppender(), PartitionedRetention(db), PostingsSealer(db)
    path = db.sqlite_path
    if settings.log_store == "process" and path is not None and path.name not in ("", ":memory:"):
        return SqliteStoreAppender(path), DeletingRetention(db), None
    return SqliteAppender(), DeletingRetention(db), None
