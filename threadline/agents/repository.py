"""Agent rows, scoped to one organization when the repository is made. An agent is read as one of its
versions joined to the agent's own row (its id, its creation), so the latest version and a pinned one
come back in the same shape."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from threadline.agents.tables import agent_versions, agents
from threadline.kit.db import Conn
from threadline.kit.pagination import CursorParams, fetch_cursor_page


@dataclass(frozen=True, slots=True)
class Agent:
    """One version of an agent as it was written; ``updated_at`` is when that version was made."""

    id: str
    organization_id: str
    version: int
    version_id: str
    name: str
    model: str | None
    instructions: str | None
    tools: list[dict[str, Any]] | None
    response_format: dict[str, Any] | None
    action_timeout_seconds: int | None
    metadata: dict[str, str]
    created_at: datetime
    updated_at: datetime


# The version's own columns as they are (so a page may key on ``agent_id`` or on the version's ``id``),
# with the agent's creation beside them.
_SELECT = sa.select(*agent_versions.c, agents.c.created_at.label("agent_created_at"))


def _from_row(row: sa.RowMapping) -> Agent:
    return Agent(
        id=row["agent_id"],
        organization_id=row["organization_id"],
        version=row["version"],
        version_id=row["id"],
        name=row["name"],
        model=row["model"],
        instructions=row["instructions"],
        tools=row["tools"],
        response_format=row["response_format"],
        action_timeout_seconds=row["action_timeout_seconds"],
        metadata=dict(row["meta"]),
        created_at=row["agent_created_at"],
        updated_at=row["created_at"],
    )


class AgentRepository:
    """The agents of one organization and their versions."""

    __slots__ = ("_conn", "_organization_id")

    def __init__(self, conn: Conn, organization_id: str) -> None:
        self._conn = conn
        self._organization_id = organization_id

    def _joined(self, *, latest: bool) -> sa.Select[Any]:
        on = agent_versions.c.agent_id == agents.c.id
        if latest:
            on = sa.and_(on, agent_versions.c.version == agents.c.version)
        return _SELECT.select_from(agents.join(agent_versions, on)).where(
            agents.c.organization_id == self._organization_id
        )

    async def insert(self, agent: Agent) -> None:
        """A new agent with its first version."""
        await self._conn.execute(
            agents.insert().values(
                id=agent.id,
                organization_id=self._organization_id,
                version=agent.version,
                created_at=agent.created_at,
                updated_at=agent.updated_at,
            )
        )
        await self.add_version(agent)

    async def add_version(self, agent: Agent) -> None:
        """Writes ``agent`` as its next version and makes it the latest (the caller holds the row's lock)."""
        await self._conn.execute(
            agent_versions.insert().values(
                id=agent.version_id,
                organization_id=self._organization_id,
                agent_id=agent.id,
                version=agent.version,
                name=agent.name,
                model=agent.model,
                instructions=agent.instructions,
                tools=agent.tools,
                response_format=agent.response_format,
                action_timeout_seconds=agent.action_timeout_seconds,
                meta=agent.metadata,
                created_at=agent.updated_at,
            )
        )
        await self._conn.execute(
            agents.update()
            .where(agents.c.id == agent.id, agents.c.organization_id == self._organization_id)
            .values(version=agent.version, updated_at=agent.updated_at)
        )

    async def get(
        self, agent_id: str, version: int | None = None, *, for_update: bool = False
    ) -> Agent | None:
        """The latest version (or ``version``); ``for_update``: the agent's row locked until the end of the
        transaction, so two changes never make the same version."""
        query = self._joined(latest=version is None).where(agents.c.id == agent_id)
        if version is not None:
            query = query.where(agent_versions.c.version == version)
        if for_update:
            query = query.with_for_update(of=agents)
        row = (await self._conn.execute(query)).mappings().first()
        return _from_row(row) if row else None

    async def page(self, params: CursorParams) -> tuple[Sequence[Agent], str | None]:
        query = self._joined(latest=True)
        rows, next_cursor = await fetch_cursor_page(self._conn, query, agent_versions.c.agent_id, params)
        return [_from_row(row._mapping) for row in rows], next_cursor

    async def page_of_versions(
        self, agent_id: str, params: CursorParams
    ) -> tuple[Sequence[Agent], str | None]:
        query = self._joined(latest=False).where(agents.c.id == agent_id)
        rows, next_cursor = await fetch_cursor_page(self._conn, query, agent_versions.c.id, params)
        return [_from_row(row._mapping) for row in rows], next_cursor

    async def delete(self, agent_id: str) -> None:
        """The agent and its versions; its runs keep naming it (they hold no foreign key to it)."""
        mine = agents.c.organization_id == self._organization_id
        await self._conn.execute(
            agent_versions.delete().where(
                agent_versions.c.agent_id == agent_id,
                agent_versions.c.organization_id == self._organization_id,
            )
        )
        await self._conn.execute(agents.delete().where(agents.c.id == agent_id, mine))
