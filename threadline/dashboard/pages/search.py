"""Scaffolding until the search pages land."""

from fastapi import APIRouter

router = APIRouter()
