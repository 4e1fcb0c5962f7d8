"""Scaffolding until the settings pages land."""

from fastapi import APIRouter

router = APIRouter()
