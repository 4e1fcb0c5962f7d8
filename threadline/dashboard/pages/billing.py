"""Scaffolding until the billing pages land."""

from fastapi import APIRouter

router = APIRouter()
