"""Scaffolding until the runs pages land."""

from fastapi import APIRouter

router = APIRouter()
