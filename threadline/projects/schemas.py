from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from threadline.kit.schemas import NOT_BLANK, Documented, RequestModel, ResponseModel, Timestamp
from threadline.projects.repository import Project

ProjectName = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=200),
    Documented({"pattern": NOT_BLANK}),
]


class ProjectCreate(RequestModel):
    name: ProjectName = Field(description="A label for people; 1 to 200 characters, not only whitespace.")


class ProjectOut(ResponseModel):
    id: str
    name: str
    created_at: Timestamp

    @classmethod
    def of(cls, project: Project) -> ProjectOut:
        return cls(id=project.id, name=project.name, created_at=project.created_at)
