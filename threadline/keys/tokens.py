"""Key values: generated once, shown once, stored only as a hash.

Keys carry 238 bits of entropy, so a single SHA-256 is the right hash: unlike a password there is nothing to
slow a guesser down for, and authentication stays a constant-time dictionary lookup on every request.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import string

from threadline.access.caller import KeyType as KeyType

PREFIXES: dict[KeyType, str] = {"public": "pk_", "secret": "sk_"}
_ALPHABET = string.ascii_letters + string.digits
_BODY_LENGTH = 40
_SHAPE = re.compile(rb"^(pk|sk)_[A-Za-z0-9]{32,128}$")


def generate_key(key_type: KeyType) -> str:
    return PREFIXES[key_type] + "".join(secrets.choice(_ALPHABET) for _ in range(_BODY_LENGTH))


def hash_key(value: str | bytes) -> str:
    return hashlib.sha256(value.encode() if isinstance(value, str) else value).hexdigest()


def looks_like_key(value: bytes) -> bool:
    """Cheap shape check, so garbage never costs a database lookup."""
    return _SHAPE.match(value) is not None
