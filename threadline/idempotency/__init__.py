"""Idempotency keys: a POST sent again with the same ``Idempotency-Key`` answers the first response."""
