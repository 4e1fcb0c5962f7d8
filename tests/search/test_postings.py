"""PostgreSQL's sealed postings answer exactly what the GIN index answers, whatever was written, deleted,
sealed and merged in between, and sealing never passes a message whose transaction is still open."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Backend
from tests.support import make_tenant
from threadline.kit.clock import Clock
from threadline.kit.db import Database
from threadline.messages.service import append_message
from threadline.runtime import Services
from threadline.search import postings, sealed
from threadline.search.postgres import compiled_tsquery
from threadline.search.postings import Segment, mergeable
from threadline.search.query import parse
from threadline.threads.service import create_thread, delete_thread

_GIN = sa.text(
    "SELECT seq FROM messages WHERE organization_id = :organization_id "
    "AND search_vector @@ CAST(:query AS tsquery) AND (CAST(:role AS text) IS NULL OR role = :role) "
    "ORDER BY seq"
)
_VOCABULARY = ["deploy", "deployment", "deploying", "server", "servers", "timeout", "insurance", "ins", "in"]
_VOCABULARY += ["the", "alpha", "beta", "rollback", "rolled"]
_ROLES = ["user", "assistant", "system", "tool"]
_QUERIES = [
    "deploy",
    "deploying servers",
    "server OR timeout",
    "ins",
    "in",
    "the",
    "deploy -server",
    "alpha OR beta -timeout",
    'deploy -"alpha beta"',
    'server -"timeout the rollback"',
    '"alpha beta"',  # narrowed by the postings of both words, then verified
    '"deploying servers timeout"',
    '"deploy the server"',  # a stop word between: '<2>', verified
    '"alpha beta" OR "beta alpha" -"server timeout"',
    "rol",
    "alpha beta deploy",
    "the -alpha",
]
_GIN_ONLY = {"the -alpha"}  # nothing but a negation (``the`` is a stop word): the GIN index's case

_message = st.tuples(
    st.integers(0, 3), st.lists(st.sampled_from(_VOCABULARY), min_size=1, max_size=6), st.sampled_from(_ROLES)
)
_step = st.one_of(
    st.tuples(st.just("write"), st.lists(_message, min_size=1, max_size=6)),
    st.tuples(st.just("delete"), st.integers(0, 3)),
    st.tuples(st.just("seal"), st.integers(1, 7)),
)


async def _gin(db: Database, organization_id: str, compiled: str, role: str | None) -> list[int]:
    async with db.transaction(write=False) as conn:
        values = {"organization_id": organization_id, "query": compiled, "role": role}
        return list((await conn.execute(_GIN, values)).scalars())


async def _compiled(db: Database, text: str) -> str:
    async with db.transaction(write=False) as conn:
        return await compiled_tsquery(conn, parse(text))


async def _thread_with(db: Database, organization_id: str, *texts: str) -> tuple[str, list[int]]:
    """A new thread holding ``texts`` (users' messages, one transaction): its id and the messages' seqs."""
    async with db.transaction() as conn:
        thread = await create_thread(conn, organization_id, title=None, metadata={}, now=Clock().now())
        ids = [
            (
                await append_message(
                    conn, organization_id, thread.id, role="user", content=t, metadata={}, now=Clock().now()
                )
            ).id
            for t in texts
        ]
    return thread.id, [await _seq(db, message_id) for message_id in ids]


async def _seq(db: Database, message_id: str) -> int:
    async with db.transaction(write=False) as conn:
        query = sa.text("SELECT seq FROM messages WHERE id = :id")
        return int((await conn.execute(query, {"id": message_id})).scalar_one())


async def _check_every_query(db: Database, organization_id: str) -> int:
    """Compare both paths for every query and role filter; how many answers came from postings."""
    answered = 0
    for text in _QUERIES:
        compiled = await _compiled(db, text)
        for role in (None, "assistant"):
            async with db.transaction(write=False) as conn:
                found = await sealed.matches(conn, organization_id, compiled, role)
            assert (found is None) == (text in _GIN_ONLY), text
            if found is None:
                continue
            answered += 1
            assert found.tolist() == await _gin(db, organization_id, compiled, role), (text, role)
    return answered


@pytest.mark.distributed
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_step, min_size=1, max_size=10))
async def test_postings_answer_what_gin_answers(services: Services, steps: list[tuple[str, object]]) -> None:
    db = services.db
    tenant = await make_tenant(services, "postings")
    other = await make_tenant(services, "neighbour")  # writes the same words: never in the tenant's answers
    threads: dict[int, str] = {}
    for kind, argument in steps:
        if kind == "write":
            assert isinstance(argument, list)
            async with db.transaction() as conn:
                for thread_index, words, role in argument:
                    if thread_index not in threads:
                        threads[thread_index] = (
                            await create_thread(
                                conn, tenant.org_id, title=None, metadata={}, now=Clock().now()
                            )
                        ).id
                    content = " ".join(words)
                    await append_message(
                        conn,
                        tenant.org_id,
                        threads[thread_index],
                        role=role,
                        content=content,
                        metadata={},
                        now=Clock().now(),
                    )
                neighbour = await create_thread(
                    conn, other.org_id, title=None, metadata={}, now=Clock().now()
                )
                await append_message(
                    conn,
                    other.org_id,
                    neighbour.id,
                    role="user",
                    content="deploy alpha beta",
                    metadata={},
                    now=Clock().now(),
                )
        elif kind == "delete":
            thread_id = threads.pop(int(argument), None)  # type: ignore[call-overload]
            if thread_id is not None:
                async with db.transaction() as conn:
                    await delete_thread(conn, tenant.org_id, thread_id)
        else:
            await postings.seal(db, batch=int(argument))  # type: ignore[call-overload]
        assert await _check_every_query(db, tenant.org_id) > 0


@pytest.mark.distributed
async def test_sealing_waits_for_open_writers(services: Services, backend: Backend) -> None:
    """A message whose transaction is open when sealing starts is not passed over: the watermark stays
    below it until it commits, and then it is found in the postings."""
    db = services.db
    tenant = await make_tenant(services, "frontier")
    thread, _ = await _thread_with(db, tenant.org_id)
    await postings.seal(db)
    assert backend.settings.database_url is not None
    writer = await asyncpg.connect(backend.settings.database_url.get_secret_value())
    try:
        slow = writer.transaction()
        await slow.start()
        early = await writer.fetchval(
            "INSERT INTO messages (id, organization_id, thread_id, role, content, metadata, created_at) "
            "VALUES ('msg_slow', $1, $2, 'user', 'wombat early', '{}', now()) RETURNING seq",
            tenant.org_id,
            thread,
        )
        _, [late] = await _thread_with(db, tenant.org_id, "wombat late")
        report = await postings.seal(db, wait=0.05)
        assert report.sealed_through < early
        await slow.commit()
    finally:
        await writer.close()
    report = await postings.seal(db)
    async with db.transaction(write=False) as conn:
        assert report.sealed_through >= early
        assert await postings.sealed_seq(conn) == report.sealed_through
        found = await sealed.matches(conn, tenant.org_id, "'wombat'", None)
    assert found is not None and found.tolist() == sorted([early, late])


@pytest.mark.distributed
async def test_a_rolled_back_message_does_not_hold_sealing(services: Services, backend: Backend) -> None:
    db = services.db
    tenant = await make_tenant(services, "rollback")
    thread, _ = await _thread_with(db, tenant.org_id)

    async def abandon() -> None:
        async with db.transaction() as conn:
            await append_message(
                conn, tenant.org_id, thread, role="user", content="numbat", metadata={}, now=Clock().now()
            )
            raise RuntimeError("abandoned")

    with pytest.raises(RuntimeError):
        await abandon()
    _, [kept_seq] = await _thread_with(db, tenant.org_id, "numbat")
    report = await postings.seal(db, wait=0.05)
    assert report.sealed_through >= kept_seq
    async with db.transaction(write=False) as conn:
        found = await sealed.matches(conn, tenant.org_id, "'numbat'", None)
    assert found is not None and found.tolist() == [kept_seq]


@pytest.mark.distributed
async def test_messages_are_immutable_and_an_organization_takes_its_postings(services: Services) -> None:
    db = services.db
    tenant = await make_tenant(services, "immutable")
    thread, _ = await _thread_with(db, tenant.org_id, "quokka")
    await postings.seal(db)
    with pytest.raises(sa.exc.DBAPIError, match="immutable"):
        async with db.transaction() as conn:
            await conn.execute(
                sa.text("UPDATE messages SET content = 'other' WHERE thread_id = :t"), {"t": thread}
            )
    count = sa.text("SELECT count(*) FROM search_postings WHERE organization_id = :o")
    async with db.transaction() as conn:
        assert (await conn.execute(count, {"o": tenant.org_id})).scalar() > 0
        await conn.execute(sa.text("DELETE FROM organizations WHERE id = :o"), {"o": tenant.org_id})
        assert (await conn.execute(count, {"o": tenant.org_id})).scalar() == 0


def _segments(*sizes: int) -> list[Segment]:
    bounds = [0]
    for size in sizes:
        bounds.append(bounds[-1] + size)
    return [Segment(i, bounds[i], bounds[i + 1], size) for i, size in enumerate(sizes)]


async def test_the_composition_root_opens_a_sealer_on_postgresql_only(
    services: Services, backend: Backend
) -> None:
    """SQLite's FTS5 counts from its own index: nothing to seal, no chore to run."""
    assert (services.postings is not None) == (backend.name == "distributed")


def test_merges_take_the_newest_run_of_one_size_class() -> None:
    assert mergeable(_segments(100, 5, 5, 5)) == []
    assert [s.id for s in mergeable(_segments(100, 5, 5, 5, 7))] == [1, 2, 3, 4]
    assert [s.id for s in mergeable(_segments(20, 17, 16, 30, 1))] == [0, 1, 2, 3]
    assert [s.id for s in mergeable(_segments(1, 2, 3, 1, 2))] == [1, 2, 3, 4]
    assert mergeable(_segments(*[4**11] * 4)) == []


@pytest.mark.distributed
async def test_concurrent_sealers_seal_each_message_once(services: Services) -> None:
    db = services.db
    tenant = await make_tenant(services, "concurrent")
    await _thread_with(db, tenant.org_id, *(f"echidna {i}" for i in range(30)))
    reports = await asyncio.gather(*(postings.seal(db, batch=4) for _ in range(3)))
    assert sum(report.merges for report in reports) > 0
    async with db.transaction(write=False) as conn:
        found = await sealed.matches(conn, tenant.org_id, "'echidna'", None)
        overlaps = sa.text(
            "SELECT count(*) FROM search_segments a JOIN search_segments b ON a.id < b.id "
            "AND a.after_seq < b.through_seq AND b.after_seq < a.through_seq"
        )
        assert (await conn.execute(overlaps)).scalar() == 0
    assert found is not None and len(found) == 30


@pytest.mark.distributed
async def test_phrases_match_from_positions_as_postgresql_does(services: Services) -> None:
    """Phrases are matched from the stored positions (no row read), with PostgreSQL's own semantics:
    words in order, a stop word keeping its place, a repeated word, a phrase of three."""
    db = services.db
    tenant = await make_tenant(services, "phrases")
    texts = [
        "error in the log",
        "log error",
        "the error log error",
        "deploying servers timeout now",
        "servers deploying timeout",
        "timeout timeout timeout",
        "restart, server! timeout?",
    ]
    await _thread_with(db, tenant.org_id, *texts)
    await postings.seal(db)
    queries = [
        '"error log"',
        '"log error"',
        '"error in the log"',
        '"deploying servers timeout"',
        '"deploy server timeout"',
        '"timeout timeout"',
        '"server timeout" -"deploy server"',
        'error -"error log"',
    ]
    for text in queries:
        compiled = await _compiled(db, text)
        async with db.transaction(write=False) as conn:
            found = await sealed.matches(conn, tenant.org_id, compiled, None)
        expected = await _gin(db, tenant.org_id, compiled, None)
        assert found is not None, text
        assert found.tolist() == expected, text
        assert expected, f"{text!r} should match something here"
