"""How every SQLite connection of ours is set up, in one light module: the server's pool (``kit.db``) and
the log store process (``telemetry.log_store``, which must not import SQLAlchemy) use the same settings.

WAL lets readers go on beside the one writer; ``synchronous=FULL`` makes a commit durable before it
returns (an answered request is on disk); the busy timeout lets another process's writer finish."""

from __future__ import annotations

import sqlite3

PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=FULL",
    "PRAGMA foreign_keys=ON",
    "PRAGMA busy_timeout=10000",
)


def configure(connection: sqlite3.Connection) -> None:
    cursor = connection.cursor()
    for pragma in PRAGMAS:
        cursor.execute(pragma)
    cursor.close()


def _bind_none(value: None) -> None:
    return value


def bind_none_fast() -> None:
    """Python 3.11's driver binds a None only after looking for an adapter the slow way: two attribute
    lookups that each build and discard an AttributeError. Naming an adapter for None (it stays None)
    makes that a dict hit: measured 0.35 us less per None parameter, a fifth of a log record's insert
    time (a record binds five). Registering for NoneType leaves str, int and float unadapted."""
    sqlite3.register_adapter(type(None), _bind_none)
