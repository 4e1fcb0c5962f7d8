"""Logging set-up, with a filter that masks anything shaped like a key before it is written anywhere.

uvicorn's "uvicorn.error" logger speaks at INFO for every server of a process (its start, its address,
its application's start-up and shutdown): with the API and the intake in one process each line came twice,
and ``threadline.server`` says where each listener answers in one line of its own. It keeps its warnings
and errors, and says everything at ``debug``. Alembic, whenever the schema is checked (each start) or
migrated, reports each plugin it loads and each context it opens: below warnings, that is chatter.

Stream tokens (``st_``) travel in URLs (``?token=``), so the access log would write them with every stream
opened; both their shape and any ``token=`` query value are masked, whatever the value looks like."""

from __future__ import annotations

import logging
import re

_KEY = re.compile(r"\b(sk|pk|st)_[A-Za-z0-9]{8,}")
_TOKEN_PARAMETER = re.compile(r"([?&]token=)[^&\s\"']+")


def redact(text: str) -> str:
    text = _KEY.sub(lambda m: f"{m.group(1)}_[redacted]", text)
    return _TOKEN_PARAMETER.sub(r"\1[redacted]", text) if "token=" in text else text


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
    chatty = logging.NOTSET if root.level <= logging.DEBUG else logging.WARNING
    logging.getLogger("uvicorn.error").setLevel(chatty)
    logging.getLogger("alembic").setLevel(logging.WARNING)
