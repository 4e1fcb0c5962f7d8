"""Secrets Threadline must use again later (MCP header values, webhook secrets), sealed at rest.

AES-256-GCM (``cryptography``) under the operator's keys: ``THREADLINE_ENCRYPTION_KEY`` holds one or
more comma-separated keys (32 bytes each, URL-safe base64); the first seals, every one opens, so a key is
rotated by putting the new one first and dropping the old one once nothing sealed under it remains. A
sealed value names its key by a short fingerprint, so opening never tries keys in turn. Each value is bound
to its owner (``associated``: e.g. the row's id), so a sealed value copied onto another row does not open
there. A copy of the database alone therefore reveals no secret; the key lives in the environment, or on
the embedded shape in a file of the data dir (``encryption.key``, mode 0600) that ``threadline init``
writes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import secrets
from collections.abc import Sequence
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

KEY_FILE = "encryption.key"
_VERSION = "v1"
_NONCE_BYTES = 12


class SealError(Exception):
    """A sealed value that cannot be opened: malformed, sealed under a key no longer configured, altered, or
    bound to another owner."""


class KeyConfigError(ValueError):
    """``THREADLINE_ENCRYPTION_KEY`` (or the key file) holds something that is not a list of 32-byte keys."""


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _fingerprint(key: bytes) -> str:
    return hashlib.sha256(b"threadline-key-id:" + key).hexdigest()[:12]


def generate_key() -> str:
    """A new key, as ``THREADLINE_ENCRYPTION_KEY`` takes it."""
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")


class SecretBox:
    """Seals with the first key, opens with any; see the module docstring."""

    __slots__ = ("_ciphers", "_first")

    def __init__(self, keys: Sequence[bytes]) -> None:
        if not keys:
            raise KeyConfigError("At least one encryption key is needed.")
        self._ciphers: dict[str, AESGCM] = {}
        for key in keys:
            if len(key) != 32:
                raise KeyConfigError("Each encryption key must be 32 bytes (URL-safe base64, 43 characters).")
            self._ciphers.setdefault(_fingerprint(key), AESGCM(key))
        self._first = _fingerprint(keys[0])

    @classmethod
    def from_setting(cls, value: str) -> SecretBox:
        """``THREADLINE_ENCRYPTION_KEY``'s form: comma-separated URL-safe base64 keys, the sealing one
        first."""
        try:
            keys = [_b64decode(part.strip()) for part in value.split(",") if part.strip()]
        except (binascii.Error, ValueError) as exc:
            message = "THREADLINE_ENCRYPTION_KEY must be URL-safe base64 keys, comma-separated."
            raise KeyConfigError(message) from exc
        return cls(keys)

    def seal(self, plaintext: bytes, *, associated: bytes) -> str:
        nonce = secrets.token_bytes(_NONCE_BYTES)
        sealed = self._ciphers[self._first].encrypt(nonce, plaintext, associated)
        body = base64.urlsafe_b64encode(nonce + sealed).decode().rstrip("=")
        return f"{_VERSION}.{self._first}.{body}"

    def open(self, token: str, *, associated: bytes) -> bytes:
        version, _, rest = token.partition(".")
        fingerprint, _, body = rest.partition(".")
        cipher = self._ciphers.get(fingerprint)
        if version != _VERSION or cipher is None:
            raise SealError("The value was sealed under a key that is not configured.")
        try:
            raw = _b64decode(body)
            return cipher.decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], associated)
        except (binascii.Error, ValueError, InvalidTag) as exc:
            raise SealError("The sealed value is damaged or belongs to another record.") from exc


def ensure_key_file(data_dir: Path) -> str:
    """The embedded shape's key: read from ``data_dir/encryption.key``, written there first (mode 0600) when
    absent. Written whole to a file of its own and then linked into place, which fails if another process
    got there first: two processes starting at once end up with one key, and none reads a half-written one."""
    path = data_dir / KEY_FILE
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        draft = data_dir / f".{KEY_FILE}.{secrets.token_hex(8)}"
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "w") as handle:
                handle.write(generate_key() + "\n")
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return path.read_text().strip()


def configured_box(key_setting: str | None, data_dir: Path, *, embedded: bool) -> SecretBox | None:
    """The process's box: from ``THREADLINE_ENCRYPTION_KEY`` when set; else, on the embedded shape, from the
    data dir's key file (made now if an older ``init`` did not); else none, and storing a secret is refused
    (a distributed deployment must give every process the same key)."""
    if key_setting:
        return SecretBox.from_setting(key_setting)
    if embedded:
        return SecretBox.from_setting(ensure_key_file(data_dir))
    return None
