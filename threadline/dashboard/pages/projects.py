"""Scaffolding until the projects pages land."""

from fastapi import APIRouter

router = APIRouter()
