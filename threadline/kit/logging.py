"""Logging set-up, with a filter that masks anything shaped like a key before it is written anywhere."""

from __future__ import annotations

import logging
import re

_KEY = re.compile(r"\b(sk|pk)_[A-Za-z0-9]{8,}")


def redact(text: str) -> str:
    return _KEY.sub(lambda m: f"{m.group(1)}_[redacted]", text)


class RedactingFormatter(logging.Formatter):
    """Redacts the whole formatted record, tracebacks and exception messages included."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
