"""What a run's tokens cost: prices per model from configuration, integer credits out."""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal

from threadline.config import DEFAULT_MODEL_PRICE, ModelPrice

_PER = Decimal(1000)


class Prices:
    """Looks a model up by its full name, then ``provider/*``, then ``*``, then the built-in default
    (1 credit per 1,000 tokens either way), so a new model is never free by accident."""

    def __init__(self, table: Mapping[str, ModelPrice]) -> None:
        self._table = dict(table)

    def of(self, model: str) -> ModelPrice:
        provider = model.partition("/")[0]
        for key in (model, f"{provider}/*", "*"):
            price = self._table.get(key)
            if price is not None:
                return price
        return DEFAULT_MODEL_PRICE

    def charge(self, model: str, input_tokens: int, output_tokens: int) -> int:
        """Credits for a run's usage, rounded up: a run that used any paid token costs at least one."""
        price = self.of(model)
        exact = (price.input * input_tokens + price.output * output_tokens) / _PER
        return math.ceil(exact)
