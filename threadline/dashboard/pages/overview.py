"""Scaffolding until the overview pages land."""

from fastapi import APIRouter

router = APIRouter()
