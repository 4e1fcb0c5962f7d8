"""Every domain's tables, imported in one place so migrations and tests see the whole schema."""

from threadline.keys.tables import api_keys
from threadline.organizations.tables import organizations
from threadline.projects.tables import projects
from threadline.storage.metadata import metadata
from threadline.users.tables import users

__all__ = ["api_keys", "metadata", "organizations", "projects", "users"]
