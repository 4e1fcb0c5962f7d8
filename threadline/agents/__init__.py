"""Agents: saved, versioned run configurations (``shared/DESIGN.md`` "Agents")."""
