"""Model names (``provider/model``) to providers: a new provider is added here and to the one rule names are
checked by (``settings.schemas.MODEL_PATTERN``).

The ``openai`` provider is imported when first used, or by ``preload`` (which ``threadline.server`` calls in
a thread once its listeners answer): the OpenAI SDK's import was a fifth of every server's start-up CPU
(0.35 s of 1.9 s), paid even where no run ever uses it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from threadline.agent.models import Model
from threadline.agent.offline import scripted_model
from threadline.agent.response_format import JsonSchemaFormat
from threadline.config import Settings
from threadline.settings.schemas import check_model_name

if TYPE_CHECKING:
    from threadline.agent.openai_chat import OpenAIChatModel


class Models:
    """The models of one process's runs. Every ``openai/…`` model shares one client, so runs reuse its
    connections instead of each opening (and leaking) a pool of its own."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._openai: OpenAIChatModel | None = None

    def get(self, name: str, response_format: JsonSchemaFormat | None = None) -> Model:
        """A model for one run: ``response_format`` is the JSON document its answers must be."""
        provider, _, model = check_model_name(name).partition("/")
        if provider == "offline":
            return scripted_model(model, response_format)
        from threadline.agent.openai_chat import openai_model

        if self._openai is None:
            self._openai = openai_model(model, self._settings)  # owns the shared client
        return openai_model(
            model, self._settings, client=self._openai.client, response_format=response_format
        )

    async def aclose(self) -> None:
        if self._openai is not None:
            await self._openai.aclose()


def preload() -> None:
    """Import the ``openai`` provider now, so that no run's first use of it imports it on the event loop."""
    from threadline.agent import openai_chat  # noqa: F401
