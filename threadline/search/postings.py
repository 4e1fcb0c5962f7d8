"""PostgreSQL: sealing messages into postings of our own, so that a search counts its matches without
visiting them (``search/sets.py`` says why; migration 0007 holds the tables).

Messages are sealed in ranges of ``seq``: a *segment* holds, for each organization and lexeme of the
messages of ``(after_seq, through_seq]``, their seqs and the lexeme's positions in each, and
``search_watermark.sealed_seq`` says how far segments reach. A search reads the postings of its lexemes,
subtracts the tombstones of deleted messages, and asks the GIN index only about the messages above the
watermark (a few seconds of writes), all scoped to the caller's organization.

The frontier. ``seq`` values are drawn before their transactions commit, and commit out of order: sealing
up to the newest ``seq`` could miss a message whose transaction is still open, forever. So the sealer
reads the sequence's last value ``V``, then waits until every transaction that was in progress just after
is over. Each insert into ``messages`` takes a transaction id before it draws a ``seq`` (the trigger of
migration 0007), so a transaction that drew a ``seq`` up to ``V`` is either in that list or already over;
after the wait, every message up to ``V`` is committed or never will be. Writers take no lock for this.
A transaction that stays open (for any reason, with any write) holds the frontier back: nothing is
sealed past it until it ends, searches only read more of the GIN index meanwhile.

Merges keep the number of segments small: a run of ``FANOUT`` adjacent segments of one size class
(``messages`` within a factor of four) becomes one, by concatenating each lexeme's postings in order. At
most ``FANOUT - 1`` segments of each class remain, so a lexeme is read from a few dozen rows at most.

Every step is one transaction and idempotent: processes that run it at once serialise on the watermark
row (sealing) or skip (merging), and a crash loses only the step in flight. The background chores
(``threadline.chores``) run it every ``INTERVAL_SECONDS`` (``PostingsSealer``, which the composition root
opens on PostgreSQL only: SQLite's FTS5 counts from its own index); the benchmark runs ``seal`` once after
loading its corpus."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

import sqlalchemy as sa

from threadline.kit.db import Conn, Database
from threadline.kit.waiting import every
from threadline.search.sets import ROLE_MARK

log = logging.getLogger(__name__)

INTERVAL_SECONDS = 2.0
BATCH = 100_000  # messages sealed per transaction at most (about 5 s of building on a small machine)
FANOUT = 4
# Segments of 4**11 messages (about 4.2 million) and more are not merged again: a merge rewrites every list
# of its segments in one transaction, which holds the frontier of every sealer while it runs.
TOP_SIZE_CLASS = 11
FRONTIER_WAIT_SECONDS = 1.0
_MERGE_LOCK = 0x7468726C_0001  # pg_advisory_xact_lock key: one merger at a time, others skip

_LAST_SEQ = sa.text("SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('messages', 'seq')), 0)")
_IN_PROGRESS = sa.text("SELECT array_agg(xid::text) FROM pg_snapshot_xip(pg_current_snapshot()) AS xid")
_STILL_RUNNING = sa.text(
    "SELECT count(*) FROM unnest(CAST(:xids AS text[])) AS xid "
    "WHERE pg_xact_status(xid::xid8) = 'in progress'"
)
_WATERMARK = sa.text("SELECT sealed_seq FROM search_watermark WHERE id = 1")
_LOCK_WATERMARK = sa.text("SELECT sealed_seq FROM search_watermark WHERE id = 1 FOR UPDATE")
_SET_WATERMARK = sa.text("UPDATE search_watermark SET sealed_seq = :seq WHERE id = 1")
_COUNT = sa.text("SELECT count(*) FROM messages WHERE seq > :after AND seq <= :through")
_NEW_SEGMENT = sa.text(
    "INSERT INTO search_segments (after_seq, through_seq, messages) VALUES (:after, :through, :messages) "
    "RETURNING id"
)
# The role rides along as one more lexeme per message (no positions), so a role filter is one more
# posting list. Positions are the tsvector's own (sorted, as PostgreSQL's phrase search reads them).
_BUILD = sa.text(
    "INSERT INTO search_postings (organization_id, lexeme, segment_id, seqs, counts, positions) "
    "SELECT m.organization_id, t.lexeme, :segment, string_agg(int8send(m.seq), ''::bytea ORDER BY m.seq), "
    "string_agg(int2send(t.count), ''::bytea ORDER BY m.seq), "
    "string_agg(t.positions, ''::bytea ORDER BY m.seq) "
    "FROM messages AS m CROSS JOIN LATERAL ("
    "  SELECT u.lexeme, coalesce(cardinality(u.positions), 0)::int2 AS count,"
    "    coalesce((SELECT string_agg(int2send(p), ''::bytea) FROM unnest(u.positions) AS p), '') AS positions"
    "  FROM unnest(m.search_vector) AS u"
    "  UNION ALL SELECT :role_mark || m.role, 0::int2, ''::bytea"
    ") AS t WHERE m.seq > :after AND m.seq <= :through GROUP BY m.organization_id, t.lexeme"
)
# Segments are disjoint ranges: their postings, concatenated in range order, stay sorted.
_CONCATENATE = sa.text(
    "INSERT INTO search_postings (organization_id, lexeme, segment_id, seqs, counts, positions) "
    "SELECT p.organization_id, p.lexeme, :segment, string_agg(p.seqs, ''::bytea ORDER BY s.after_seq), "
    "string_agg(p.counts, ''::bytea ORDER BY s.after_seq), "
    "string_agg(p.positions, ''::bytea ORDER BY s.after_seq) "
    "FROM search_postings AS p JOIN search_segments AS s ON s.id = p.segment_id "
    "WHERE p.segment_id = ANY(CAST(:ids AS bigint[])) GROUP BY p.organization_id, p.lexeme"
)
_DROP_POSTINGS = sa.text("DELETE FROM search_postings WHERE segment_id = ANY(CAST(:ids AS bigint[]))")
_DROP_SEGMENTS = sa.text("DELETE FROM search_segments WHERE id = ANY(CAST(:ids AS bigint[]))")
_SEGMENTS = sa.text("SELECT id, after_seq, through_seq, messages FROM search_segments ORDER BY after_seq")
# Building aggregates a whole batch in memory: the default work_mem (4 MB) would spill it to disk.
_WORK_MEM = sa.text("SET LOCAL work_mem = '256MB'")


@dataclass(frozen=True, slots=True)
class Segment:
    id: int
    after_seq: int
    through_seq: int
    messages: int

    @property
    def size_class(self) -> int:
        """``floor(log4(messages))``: segments within a factor of four of each other merge."""
        return (max(self.messages, 1).bit_length() - 1) // 2


@dataclass(slots=True)
class Report:
    sealed_through: int = 0
    messages: int = 0
    merges: int = 0


async def frontier(db: Database, wait: float = FRONTIER_WAIT_SECONDS) -> int | None:
    """The highest ``seq`` up to which every message is committed or never will be; ``None`` if a
    transaction that may hold one stayed open longer than ``wait`` seconds (try again later)."""
    # Two transactions, so the list of open transactions is surely taken after V is read, whatever the
    # database's default isolation (under REPEATABLE READ two statements would share one snapshot).
    async with db.transaction(write=False) as conn:
        last = int((await conn.execute(_LAST_SEQ)).scalar_one())
    async with db.transaction(write=False) as conn:
        open_xids = (await conn.execute(_IN_PROGRESS)).scalar_one() or []
    deadline = time.monotonic() + wait
    delay = 0.002
    while open_xids:
        async with db.transaction(write=False) as conn:
            running = int((await conn.execute(_STILL_RUNNING, {"xids": open_xids})).scalar_one())
        if not running:
            break
        if time.monotonic() >= deadline:
            return None
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.1)
    return last


async def sealed_seq(conn: Conn) -> int:
    return int((await conn.execute(_WATERMARK)).scalar_one())


async def seal(db: Database, batch: int = BATCH, wait: float = FRONTIER_WAIT_SECONDS) -> Report:
    """Seal every message up to the frontier, ``batch`` at a time, merging as segments accumulate."""
    report = Report()
    target = await frontier(db, wait)
    if target is None:
        log.info("search postings: a transaction is still open; sealing waits for the next round")
        async with db.transaction(write=False) as conn:
            report.sealed_through = await sealed_seq(conn)
        return report
    while True:
        async with db.transaction() as conn:
            sealed = int((await conn.execute(_LOCK_WATERMARK)).scalar_one())
            if sealed >= target:
                report.sealed_through = sealed
                break
            through = min(target, sealed + batch)
            report.messages += await _build(conn, sealed, through)
            await conn.execute(_SET_WATERMARK, {"seq": through})
        report.sealed_through = through
        report.merges += await merge(db)
    return report


async def _build(conn: Conn, after: int, through: int) -> int:
    """The segment of ``(after, through]``; a range with no message left (rolled back, deleted) gets
    none, the watermark passes it all the same."""
    messages = int((await conn.execute(_COUNT, {"after": after, "through": through})).scalar_one())
    if messages:
        await conn.execute(_WORK_MEM)
        values = {"after": after, "through": through, "messages": messages}
        segment = int((await conn.execute(_NEW_SEGMENT, values)).scalar_one())
        build = {"segment": segment, "role_mark": ROLE_MARK, "after": after, "through": through}
        await conn.execute(_BUILD, build)
    return messages


def mergeable(segments: list[Segment]) -> list[Segment]:
    """The newest run of ``FANOUT`` adjacent segments of one size class (``segments`` in range order), or
    nothing. Newest first: the small segments of recent writes accumulate there."""
    for end in range(len(segments), FANOUT - 1, -1):
        run = segments[end - FANOUT : end]
        classes = {segment.size_class for segment in run}
        if len(classes) == 1 and classes.pop() < TOP_SIZE_CLASS:
            return run
    return []


async def merge(db: Database) -> int:
    """Merge until no run is left; how many merges. Another process merging meanwhile: leave it to it."""
    merges = 0
    while True:
        async with db.transaction() as conn:
            locked = (await conn.execute(sa.select(sa.func.pg_try_advisory_xact_lock(_MERGE_LOCK)))).scalar()
            if not locked:
                return merges
            rows = (await conn.execute(_SEGMENTS)).mappings().all()
            run = mergeable([Segment(**row) for row in rows])
            if not run:
                return merges
            await conn.execute(_WORK_MEM)
            values = {
                "after": run[0].after_seq,
                "through": run[-1].through_seq,
                "messages": sum(segment.messages for segment in run),
            }
            merged = int((await conn.execute(_NEW_SEGMENT, values)).scalar_one())
            ids = [segment.id for segment in run]
            await conn.execute(_CONCATENATE, {"segment": merged, "ids": ids})
            await conn.execute(_DROP_POSTINGS, {"ids": ids})
            await conn.execute(_DROP_SEGMENTS, {"ids": ids})
        merges += 1


class PostingsSealer:
    """The sealing of one PostgreSQL database's postings, as a chore."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def run_once(self) -> Report:
        report = await seal(self.db)
        if report.messages >= BATCH:
            log.info(
                "search postings: sealed %d messages through seq %d", report.messages, report.sealed_through
            )
        return report


async def run_periodically(sealer: PostingsSealer, interval: float = INTERVAL_SECONDS) -> None:
    """Until cancelled; started by the background chores (``threadline.chores``)."""
    await every(interval, sealer.run_once, "sealing search postings")
