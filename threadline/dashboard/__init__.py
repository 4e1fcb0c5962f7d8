"""The web dashboard: server-rendered pages for the people of one organization, served by the API process
at ``/`` and calling the same services as ``/v1`` (docs/dashboard.md has its security model)."""
