"""PostgreSQL: postings of our own for message search (``search/postings.py``), beside the GIN index.

* ``search_watermark``: one row, ``sealed_seq``: every message up to it is in a segment.
* ``search_segments``: the messages of ``(after_seq, through_seq]``, sealed together.
* ``search_postings``: per organization, lexeme and segment, the ``seq`` of every message holding the
  lexeme, as concatenated big-endian ``int8`` (sorted), and for each of them how many positions the
  lexeme has in the message (``counts``, ``int2``) and those positions (``positions``, ``int2``, the
  tsvector's own): what phrases are matched with. The message's role is a lexeme of its own,
  ``' role:user'`` (no stored lexeme starts with a space). ``COLLATE "C"`` makes a prefix a byte range of
  the primary key; ``STORAGE EXTERNAL`` skips compressing what is read whole and is hardly compressible.
* ``search_tombstones``: every deleted message, subtracted from the postings at query time.

Triggers on ``messages``: before an insert statement, the inserting transaction takes its transaction id
(``pg_current_xact_id``), so that it is in every snapshot taken after it drew a ``seq``: the sealer waits
for those transactions, never for a lock the writers take. After a delete statement, the deleted rows
become tombstones. An update of what is indexed is refused: postings are never rewritten in place, and
messages are immutable in the API. A deleted organization's postings and tombstones go with it.

SQLite is unchanged: FTS5 already counts from its own doclists.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 10:00:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_MESSAGE_TRIGGERS = ("search_refuse_update", "search_tombstone", "search_take_xid")
_TABLES = ("search_tombstones", "search_postings", "search_segments", "search_watermark")
_UPGRADE = """
CREATE TABLE search_watermark (
    id smallint PRIMARY KEY CHECK (id = 1),
    sealed_seq bigint NOT NULL
);

INSERT INTO search_watermark (id, sealed_seq) VALUES (1, 0);

CREATE TABLE search_segments (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    after_seq bigint NOT NULL,
    through_seq bigint NOT NULL,
    messages integer NOT NULL,
    CHECK (after_seq < through_seq)
);

CREATE TABLE search_postings (
    organization_id varchar(40) NOT NULL,
    lexeme text COLLATE "C" NOT NULL,
    segment_id bigint NOT NULL,
    seqs bytea NOT NULL,
    counts bytea NOT NULL,
    positions bytea NOT NULL,
    PRIMARY KEY (organization_id, lexeme, segment_id)
);

ALTER TABLE search_postings ALTER COLUMN seqs SET STORAGE EXTERNAL,
    ALTER COLUMN counts SET STORAGE EXTERNAL, ALTER COLUMN positions SET STORAGE EXTERNAL;

CREATE INDEX ix_search_postings_segment_id ON search_postings (segment_id);

CREATE TABLE search_tombstones (
    organization_id varchar(40) NOT NULL,
    seq bigint NOT NULL,
    PRIMARY KEY (organization_id, seq)
);

CREATE FUNCTION search_take_xid() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_current_xact_id();
    RETURN NULL;
END $$;

CREATE TRIGGER search_take_xid BEFORE INSERT ON messages
    FOR EACH STATEMENT EXECUTE FUNCTION search_take_xid();

CREATE FUNCTION search_tombstone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search_tombstones (organization_id, seq)
        SELECT organization_id, seq FROM gone ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER search_tombstone AFTER DELETE ON messages REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION search_tombstone();

CREATE FUNCTION search_refuse_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'messages are immutable: their content, role and organization are indexed for search';
END $$;

CREATE TRIGGER search_refuse_update BEFORE UPDATE OF seq, organization_id, role, content ON messages
    FOR EACH ROW WHEN (
        old.seq IS DISTINCT FROM new.seq OR old.organization_id IS DISTINCT FROM new.organization_id
        OR old.role IS DISTINCT FROM new.role OR old.content IS DISTINCT FROM new.content
    ) EXECUTE FUNCTION search_refuse_update();

CREATE FUNCTION search_forget_organization() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM search_postings WHERE organization_id = old.id;
    DELETE FROM search_tombstones WHERE organization_id = old.id;
    RETURN NULL;
END $$;

CREATE TRIGGER search_forget_organization AFTER DELETE ON organizations
    FOR EACH ROW EXECUTE FUNCTION search_forget_organization();
"""

_DOWNGRADE = "\n\n".join(
    [
        "DROP TRIGGER IF EXISTS search_forget_organization ON organizations",
        *(f"DROP TRIGGER IF EXISTS {name} ON messages" for name in _MESSAGE_TRIGGERS),
        *(f"DROP FUNCTION IF EXISTS {name}()" for name in (*_MESSAGE_TRIGGERS, "search_forget_organization")),
        *(f"DROP TABLE IF EXISTS {table}" for table in _TABLES),
    ]
)


def _run(script: str) -> None:
    """One statement at a time (the driver prepares each): statements are separated by a blank line."""
    for statement in script.split("\n\n"):
        if statement.strip():
            op.execute(statement)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _run(_UPGRADE)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _run(_DOWNGRADE)
