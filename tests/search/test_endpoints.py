"""Search over threads and messages, one suite for both backends (FTS5 and tsvector)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import NamedTuple

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import Tenant, assert_error, make_tenant, new_thread
from threadline.runtime import Services
from threadline.search import backend
from threadline.search.postings import PostingsSealer


async def say(
    client: httpx.AsyncClient, tenant: Tenant, thread_id: object, content: str, role: str = "user"
) -> str:
    response = await client.post(
        f"/v1/threads/{thread_id}/messages", headers=tenant.secret, json={"content": content, "role": role}
    )
    assert response.status_code == 201, response.text
    message_id: str = response.json()["id"]
    return message_id


_sealing: list[PostingsSealer] = []


@pytest.fixture(autouse=True)
def seal_before_searching(services: Services) -> Iterator[None]:
    """On PostgreSQL each search first seals what the test wrote (``search/postings.py``), as the chores
    of every API process and worker do every two seconds: the endpoints are tested on the postings;
    test_postings.py covers the rest."""
    sealers = [] if services.postings is None else [services.postings]
    _sealing.extend(sealers)
    yield
    for sealer in sealers:
        _sealing.remove(sealer)


async def search(client: httpx.AsyncClient, tenant: Tenant, kind: str, **params: object) -> dict[str, object]:
    for sealer in _sealing:
        await sealer.run_once()
    response = await client.get(f"/v1/search/{kind}", headers=tenant.secret, params=params)
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


def ids(body: dict[str, object]) -> list[str]:
    return [hit["id"] for hit in body["data"]]  # type: ignore[attr-defined]


class Spread(NamedTuple):
    """Messages with one word, spread over two threads and two organizations (filters and isolation)."""

    first: str  # thread holding ``mine`` and ``answer``
    theirs: str  # the other organization's thread
    mine: str
    answer: str
    elsewhere: str


async def spread_word(client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant, word: str) -> Spread:
    first = (await new_thread(client, tenant))["id"]
    second = (await new_thread(client, tenant))["id"]
    mine = await say(client, tenant, first, f"{word} sighting", role="user")
    answer = await say(client, tenant, first, f"{word} facts", role="assistant")
    elsewhere = await say(client, tenant, second, f"{word} again")
    theirs = (await new_thread(client, other_tenant))["id"]
    await say(client, other_tenant, theirs, f"{word} in another organization")
    return Spread(first, theirs, mine, answer, elsewhere)


class TestMessages:
    async def test_requires_a_key(self, client: httpx.AsyncClient) -> None:
        response = await client.get("/v1/search/messages", params={"q": "x"})
        assert_error(response, 401, "UNAUTHORIZED", operation_id="search.messages", missing=["Authorization"])

    async def test_refuses_a_public_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/search/messages", headers=tenant.public, params={"q": "x"})
        assert_error(
            response, 403, "FORBIDDEN", operation_id="search.messages", reason="PUBLIC_KEY_NOT_ALLOWED"
        )

    async def test_q_is_required(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        for params in ({}, {"q": ""}, {"q": "  "}):
            response = await client.get("/v1/search/messages", headers=tenant.secret, params=params)
            assert_error(response, 400, "BAD_REQUEST", operation_id="search.messages", missing=["q"])

    @pytest.mark.parametrize(
        ("params", "reason"),
        [
            ({"q": "-only"}, "INVALID_QUERY"),
            ({"q": "x", "page": 0}, "VALIDATION_FAILED"),
            ({"q": "x", "limit": 101}, "VALIDATION_FAILED"),
            ({"q": "x", "role": "robot"}, "VALIDATION_FAILED"),
        ],
    )
    async def test_bad_input(
        self, client: httpx.AsyncClient, tenant: Tenant, params: dict[str, object], reason: str
    ) -> None:
        response = await client.get("/v1/search/messages", headers=tenant.secret, params=params)
        assert_error(response, 400, "BAD_REQUEST", operation_id="search.messages", reason=reason)

    async def test_stems_prefixes_phrases_or_and_exclusion(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = (await new_thread(client, tenant))["id"]
        deployment = await say(client, tenant, thread, "The deployment to production failed at midnight")
        deploying = await say(client, tenant, thread, "We are deploying the billing service now")
        rollback = await say(client, tenant, thread, "Rollback finished; staging is healthy")
        staging = await say(client, tenant, thread, "Deploy to staging went fine")

        assert set(ids(await search(client, tenant, "messages", q="deploy"))) == {
            deployment,
            deploying,
            staging,
        }
        assert set(ids(await search(client, tenant, "messages", q="produc"))) == {deployment}  # prefix
        assert ids(await search(client, tenant, "messages", q='"production failed"')) == [deployment]
        assert ids(await search(client, tenant, "messages", q='"failed production"')) == []
        assert set(ids(await search(client, tenant, "messages", q="billing OR rollback"))) == {
            deploying,
            rollback,
        }
        assert set(ids(await search(client, tenant, "messages", q="deploy -staging"))) == {
            deployment,
            deploying,
        }
        assert set(ids(await search(client, tenant, "messages", q="DEPLOY Staging"))) == {staging}

    async def test_short_words_match_as_typed(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        """Not by stem: PostgreSQL stems "ins" to "in", whose prefix would also find "index"."""
        thread = (await new_thread(client, tenant))["id"]
        insurance = await say(client, tenant, thread, "The insurance claim was filed")
        ins = await say(client, tenant, thread, "Outs and ins of the rollout")
        await say(client, tenant, thread, "Rebuild the index tonight")
        assert set(ids(await search(client, tenant, "messages", q="ins"))) == {insurance, ins}
        assert set(ids(await search(client, tenant, "messages", q="rollout -ins"))) == set()
        assert set(ids(await search(client, tenant, "messages", q="claim OR ins"))) == {insurance, ins}

    async def test_snippet_marks_the_match(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        thread = (await new_thread(client, tenant))["id"]
        await say(client, tenant, thread, "Nothing to see here. The database migration stalled on a lock.")
        hit = (await search(client, tenant, "messages", q="migration"))["data"][0]  # type: ignore[index]
        assert "<mark>migration</mark>" in hit["snippet"]
        assert hit["threadId"] == thread and hit["content"].endswith("lock.")

    async def test_relevance_then_recency(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        thread = (await new_thread(client, tenant))["id"]
        older = await say(client, tenant, thread, "outage report")
        dense = await say(client, tenant, thread, "outage outage outage: the outage lasted an hour")
        newer = await say(client, tenant, thread, "outage report")
        assert ids(await search(client, tenant, "messages", q="outage")) == [dense, newer, older]

    async def test_filters_and_isolation(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        first, theirs, mine, answer, elsewhere = await spread_word(client, tenant, other_tenant, "kangaroo")

        assert set(ids(await search(client, tenant, "messages", q="kangaroo"))) == {mine, answer, elsewhere}
        assert set(ids(await search(client, tenant, "messages", q="kangaroo", threadId=first))) == {
            mine,
            answer,
        }
        assert ids(
            await search(client, tenant, "messages", q="kangaroo", threadId=first, role="assistant")
        ) == [answer]
        assert ids(await search(client, tenant, "messages", q="kangaroo", threadId=theirs)) == []
        for odd in ("nope", "thr_", '"x"', "_"):
            assert ids(await search(client, tenant, "messages", q="kangaroo", threadId=odd)) == []

    async def test_pagination_totals_and_past_the_end(
        self, client: httpx.AsyncClient, tenant: Tenant
    ) -> None:
        thread = (await new_thread(client, tenant))["id"]
        for i in range(7):
            await say(client, tenant, thread, f"platypus note {i}")
        first = await search(client, tenant, "messages", q="platypus", limit=3)
        assert first["pagination"] == {"page": 1, "limit": 3, "totalPages": 3, "totalResults": 7}
        last = await search(client, tenant, "messages", q="platypus", limit=3, page=3)
        assert len(last["data"]) == 1  # type: ignore[arg-type]
        past = await search(client, tenant, "messages", q="platypus", limit=3, page=4)
        assert past["data"] == [] and past["pagination"]["totalResults"] == 7  # type: ignore[index]
        nothing = await search(client, tenant, "messages", q="wombat")
        assert nothing["pagination"] == {"page": 1, "limit": 20, "totalPages": 0, "totalResults": 0}


class TestThreads:
    async def test_requires_a_key(self, client: httpx.AsyncClient) -> None:
        response = await client.get("/v1/search/threads", params={"q": "x"})
        assert_error(response, 401, "UNAUTHORIZED", operation_id="search.threads", missing=["Authorization"])

    async def test_refuses_a_public_key(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/search/threads", headers=tenant.public, params={"q": "x"})
        assert_error(
            response, 403, "FORBIDDEN", operation_id="search.threads", reason="PUBLIC_KEY_NOT_ALLOWED"
        )

    async def test_q_is_required(self, client: httpx.AsyncClient, tenant: Tenant) -> None:
        response = await client.get("/v1/search/threads", headers=tenant.secret)
        assert_error(response, 400, "BAD_REQUEST", operation_id="search.threads", missing=["q"])

    async def test_matches_title_and_metadata_values_and_follows_updates(
        self, client: httpx.AsyncClient, tenant: Tenant, other_tenant: Tenant
    ) -> None:
        titled = await new_thread(client, tenant, title="Checkout latency investigation")
        tagged = await new_thread(client, tenant, title="Untitled", metadata={"service": "checkout-api"})
        await new_thread(client, other_tenant, title="Checkout elsewhere")
        body = await search(client, tenant, "threads", q="checkout")
        assert set(ids(body)) == {titled["id"], tagged["id"]}
        hit = next(h for h in body["data"] if h["id"] == titled["id"])  # type: ignore[attr-defined]
        assert "<mark>Checkout</mark>" in hit["snippet"] and hit["messageCount"] == 0

        await client.patch(f"/v1/threads/{titled['id']}", headers=tenant.secret, json={"title": "Payments"})
        assert ids(await search(client, tenant, "threads", q="checkout")) == [tagged["id"]]
        assert ids(await search(client, tenant, "threads", q="payments")) == [titled["id"]]


async def walk_pages(
    client: httpx.AsyncClient, tenant: Tenant, q: str, limit: int, matches: int
) -> list[str]:
    """Every page of a search, checking each page's pagination; the ids in page order."""
    seen: list[str] = []
    page = 1
    while True:
        body = await search(client, tenant, "messages", q=q, limit=limit, page=page)
        pagination = body["pagination"]
        assert pagination == {  # type: ignore[comparison-overlap]
            "page": page,
            "limit": limit,
            "totalPages": math.ceil(matches / limit),
            "totalResults": matches,
        }
        seen.extend(ids(body))
        if page >= pagination["totalPages"]:  # type: ignore[index]
            return seen
        page += 1


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(matches=st.integers(min_value=0, max_value=45), noise=st.integers(0, 5), limit=st.integers(1, 12))
async def test_every_match_once_across_pages(
    client: httpx.AsyncClient, services: Services, matches: int, noise: int, limit: int
) -> None:
    """Property: paging through N matches returns each exactly once, totalPages = ceil(N / limit)."""
    tenant = await make_tenant(services, "paging")
    thread = (await new_thread(client, tenant))["id"]
    expected = {await say(client, tenant, thread, f"quokka entry {i}") for i in range(matches)}
    for i in range(noise):
        await say(client, tenant, thread, f"unrelated entry {i}")
    seen = await walk_pages(client, tenant, "quokka", limit, matches)
    assert len(seen) == len(set(seen)) == matches
    assert set(seen) == expected


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(matches=st.integers(min_value=0, max_value=14), limit=st.integers(1, 5))
async def test_pages_cross_from_ranked_to_newest_first(
    client: httpx.AsyncClient, services: Services, monkeypatch: pytest.MonkeyPatch, matches: int, limit: int
) -> None:
    """Property, with only the 4 newest matches ranked: they come first, by relevance, and every older
    match follows newest first; each match once, across any page size."""
    monkeypatch.setattr(backend, "CANDIDATES", 4)
    tenant = await make_tenant(services, "ranked-head")
    thread = (await new_thread(client, tenant))["id"]
    # Older messages say it more often: relevance and recency disagree inside the ranked head.
    written = [
        await say(client, tenant, thread, " ".join(["numbat"] * (matches - i))) for i in range(matches)
    ]
    seen = await walk_pages(client, tenant, "numbat", limit, matches)
    newest_first = written[::-1]
    head = newest_first[:4]
    assert seen[: len(head)] == sorted(head, key=written.index)  # denser first
    assert seen[len(head) :] == newest_first[4:]


@pytest.mark.embedded
async def test_sqlite_excluding_the_other_organizations_finds_the_same(
    client: httpx.AsyncClient,
    services: Services,
    tenant: Tenant,
    other_tenant: Tenant,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tenant filter written as an exclusion of every other organization (SQLite, few organizations):
    the same hits and counts as the plain filter, never another organization's messages."""
    from threadline.search import sqlite

    async def sizes(_self: object, _conn: object) -> dict[str, int]:
        return {tenant.org_id: 10**9}

    monkeypatch.setattr(sqlite, "_MAX_EXCLUDED", 10**6)
    monkeypatch.setattr(sqlite._TenantFilter, "_sizes_of", sizes)
    first, theirs, mine, answer, elsewhere = await spread_word(client, tenant, other_tenant, "wallaby")

    body = await search(client, tenant, "messages", q="wallaby")
    assert set(ids(body)) == {mine, answer, elsewhere}
    assert body["pagination"]["totalResults"] == 3  # type: ignore[index]
    assert set(ids(await search(client, tenant, "messages", q="wallaby -again"))) == {mine, answer}
    assert ids(await search(client, tenant, "messages", q="wallaby", threadId=first, role="assistant")) == [
        answer
    ]
    assert ids(await search(client, tenant, "messages", q="wallaby", threadId=theirs)) == []
