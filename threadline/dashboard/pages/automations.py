"""Scaffolding until the automations pages land."""

from fastapi import APIRouter

router = APIRouter()
