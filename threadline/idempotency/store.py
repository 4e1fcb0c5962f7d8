"""Claims and answers of idempotency keys, each kind group-committed (``kit.group_commit``): a keyed POST
costs two writes of its own, and on SQLite two transactions a request (each a turn of the one writer)
held keyed ``POST /v1/threads`` to 0.67-0.75x of the unkeyed rate; concurrent requests' claims (and
answers) now share one transaction. ``Services.idempotency``; ``claim`` and ``answer`` return once their
transaction has committed, so the guarantees are those of a transaction per request. An endpoint that
stores its answer in its own transaction (``carried.py``) writes it with ``write_answers`` too."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from threadline.idempotency.tables import idempotency_keys
from threadline.kit.db import Database
from threadline.kit.group_commit import GroupCommit
from threadline.kit.statements import insert_or_ignore


@dataclass(slots=True)
class _Claim:
    organization_id: str
    key: str
    fingerprint: str
    at: datetime
    won: bool = False  # set by the write: this request's row is the key's


@dataclass(frozen=True, slots=True)
class Answer:
    """What a key's first request answered, to replay; ``status`` None releases the key instead."""

    organization_id: str
    key: str
    status: int | None  # None: release the key (a 5xx, a failure)
    content_type: str | None
    body: bytes


# Built once, bound per call (executemany): a statement built per answer cost more on the writer's thread
# than the rest of the keyed request's writes together (its construction and cache key, ~0.4 ms of CPU a
# keyed POST /v1/threads in process, 2026-12-02, bench/HISTORY.md), and the writer's turn is everyone's.
_k = idempotency_keys.c
_MINE = sa.and_(_k.organization_id == sa.bindparam("b_organization"), _k.key == sa.bindparam("b_key"))
_STORE = (
    idempotency_keys.update()
    .where(_MINE)
    .values(
        status=sa.bindparam("b_status"),
        content_type=sa.bindparam("b_content_type"),
        body=sa.bindparam("b_body"),
    )
)
_RELEASE = idempotency_keys.delete().where(_MINE)


def write_answers(connection: Connection, answers: Sequence[Answer]) -> None:
    """Inside the caller's transaction: each answer stored on its key's row (or the row deleted)."""
    stored = [
        {
            "b_organization": a.organization_id,
            "b_key": a.key,
            "b_status": a.status,
            "b_content_type": a.content_type,
            "b_body": a.body,
        }
        for a in answers
        if a.status is not None
    ]
    released = [{"b_organization": a.organization_id, "b_key": a.key} for a in answers if a.status is None]
    if stored:
        connection.execute(_STORE, stored)
    if released:
        connection.execute(_RELEASE, released)


class IdempotencyStore:
    def __init__(self, db: Database) -> None:
        self._insert = insert_or_ignore(db.dialect_name)(idempotency_keys, ["organization_id", "key"])
        self._claims = GroupCommit(db, self._write_claims, name="idempotency-claims")
        self._answers = GroupCommit(db, write_answers, name="idempotency-answers")

    def _write_claims(self, connection: Connection, claims: Sequence[_Claim]) -> None:
        for claim in claims:  # one statement each: its rowcount says whether this claim's row was made
            values = {
                "organization_id": claim.organization_id,
                "key": claim.key,
                "fingerprint": claim.fingerprint,
                "created_at": claim.at,
            }
            claim.won = connection.execute(self._insert, values).rowcount == 1

    async def claim(self, organization_id: str, key: str, fingerprint: str, at: datetime) -> bool:
        """True when this request is the key's first (its row, in flight, is committed)."""
        claim = _Claim(organization_id, key, fingerprint, at)
        await self._claims.submit(claim)
        return claim.won

    async def answer(
        self, organization_id: str, key: str, status: int | None, content_type: str | None, body: bytes
    ) -> None:
        """Stores the first request's answer, or releases the key (``status`` None)."""
        await self._answers.submit(Answer(organization_id, key, status, content_type, body))

    async def aclose(self) -> None:
        await self._claims.aclose()
        await self._answers.aclose()
