"""Signatures as the Standard Webhooks specification defines them: ``v1,`` + base64 of the HMAC-SHA256 of
``{id}.{timestamp}.{body}``, keyed by the base64-decoded part of the ``whsec_`` secret after its prefix.
Tests check every delivery with the specification's own library (``standardwebhooks``), never with this."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

PREFIX = "whsec_"
_KEY_BYTES = 24  # 192 bits, what the specification's reference libraries generate


def new_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(_KEY_BYTES)).decode()


def signature(secret: str, message_id: str, timestamp: int, body: str) -> str:
    key = base64.b64decode(secret.removeprefix(PREFIX))
    signed = f"{message_id}.{timestamp}.{body}".encode()
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def headers(secret: str, message_id: str, timestamp: int, body: str) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(secret, message_id, timestamp, body),
    }
