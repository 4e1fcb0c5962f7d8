"""Scaffolding until the logs pages land."""

from fastapi import APIRouter

router = APIRouter()
