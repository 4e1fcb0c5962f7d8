"""What users write themselves, for ``bench/intake.py``: FastAPI + SQLAlchemy, one row per request.

A validated body, a session per request, one INSERT and one COMMIT, in a plain ``def`` endpoint (FastAPI
runs it in its thread pool), on a SQLite file with the same durability as ours (WAL, synchronous=FULL):
a fair "before" for an intake that commits before it answers.

Run by ``bench/intake.py`` with ``BENCH_NAIVE_DB`` naming the SQLite file to create.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from fastapi import FastAPI
from pydantic import BaseModel
from sqlalchemy.orm import Session

engine = sa.create_engine(f"sqlite:///{os.environ['BENCH_NAIVE_DB']}")


@sa.event.listens_for(engine, "connect")
def _pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.close()


metadata = sa.MetaData()
logs = sa.Table(
    "logs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("level", sa.String(8), nullable=False),
    sa.Column("timestamp", sa.DateTime, nullable=False),
    sa.Column("attributes", sa.Text, nullable=False),
)
metadata.create_all(engine)


class LogIn(BaseModel):
    message: str
    level: str = "info"
    timestamp: datetime | None = None
    attributes: dict[str, Any] = {}


app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)


@app.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@app.post("/v1/logs", status_code=202)
def ingest(record: LogIn) -> dict[str, int]:
    with Session(engine) as session:
        session.execute(
            logs.insert().values(
                message=record.message,
                level=record.level,
                timestamp=record.timestamp or datetime.now(UTC),
                attributes=json.dumps(record.attributes),
            )
        )
        session.commit()
    return {"accepted": 1}
