"""Model names (``provider/model``) to providers: the one place a new provider is added."""

from __future__ import annotations

from typing import TYPE_CHECKING

from threadline.agent.models import Model
from threadline.agent.offline import scripted_model
from threadline.config import Settings

if TYPE_CHECKING:
    from threadline.agent.openai_chat import OpenAIChatModel

PROVIDERS = ("offline", "openai")


def check_model_name(name: str) -> str:
    """Refuses, when a run is created, names no provider can serve (ValueError with a message for humans)."""
    provider, _, model = name.partition("/")
    if provider not in PROVIDERS or not model:
        raise ValueError(f"unknown model {name!r}: use offline/scripted or openai/<model>")
    if provider == "offline":
        scripted_model(model)
    return name


class Models:
    """The models of one process's runs. Every ``openai/…`` model shares one client, so runs reuse its
    connections instead of each opening (and leaking) a pool of its own."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._openai: OpenAIChatModel | None = None

    def get(self, name: str) -> Model:
        provider, _, model = check_model_name(name).partition("/")
        if provider == "offline":
            return scripted_model(model)
        # Imported on first use: the openai package takes ~0.25 s to import, a good part of a process's
        # start-up, and most processes (every CLI command, servers whose runs are offline) never need it.
        from threadline.agent.openai_chat import openai_model

        if self._openai is None:
            self._openai = openai_model(model, self._settings)  # owns the shared client
        return openai_model(model, self._settings, client=self._openai.client)

    async def aclose(self) -> None:
        if self._openai is not None:
            await self._openai.aclose()
