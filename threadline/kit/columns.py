"""The one ``MetaData`` every table registers on, with stable constraint names for migrations."""

import sqlalchemy as sa

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


def id_column() -> sa.Column[str]:
    """The prefixed, time-ordered id every table is keyed by (``kit.ids.new_id``)."""
    return sa.Column("id", sa.String(40), primary_key=True)


def organization_column() -> sa.Column[str]:
    """The tenant column: every row of every tenant table names its organization, and goes with it."""
    target = sa.ForeignKey("organizations.id", ondelete="CASCADE")
    return sa.Column("organization_id", sa.String(40), target, nullable=False)


def search_key_column() -> sa.Column[int]:
    """An integer primary key for tables a full-text index points into.

    SQLite's FTS5 refers to rows by rowid, and only an ``INTEGER PRIMARY KEY`` keeps a rowid stable across
    ``VACUUM``; PostgreSQL gets a bigint identity. The public, time-ordered id stays a unique column."""
    return sa.Column(
        "seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
