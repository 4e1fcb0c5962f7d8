"""Scaffolding until the threads pages land."""

from fastapi import APIRouter

router = APIRouter()
