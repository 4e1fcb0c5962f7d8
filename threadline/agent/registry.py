"""Model names (``provider/model``) to providers: the one place a new provider is added."""

from __future__ import annotations

from threadline.agent.models import Model
from threadline.agent.offline import scripted_model
from threadline.agent.openai_chat import openai_model
from threadline.config import Settings

PROVIDERS = ("offline", "openai")


def check_model_name(name: str) -> str:
    """Refuses, when a run is created, names no provider can serve (ValueError with a message for humans)."""
    provider, _, model = name.partition("/")
    if provider not in PROVIDERS or not model:
        raise ValueError(f"unknown model {name!r}: use offline/scripted or openai/<model>")
    if provider == "offline":
        scripted_model(model)
    return name


def model_for(name: str, settings: Settings) -> Model:
    provider, _, model = check_model_name(name).partition("/")
    if provider == "offline":
        return scripted_model(model)
    return openai_model(model, settings)
