"""What the redacting formatter masks before any line is written: keys, stream tokens, and any ``token=``
query value (a URL's credential, whatever its shape)."""

from __future__ import annotations

import logging
import sys

import pytest

from threadline.kit.logging import RedactingFormatter, redact

TOKEN = "st_" + "Ab3" * 13 + "x"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            f'"GET /v1/runs/run_1/stream?token={TOKEN} HTTP/1.1" 200',
            '"GET /v1/runs/run_1/stream?token=[redacted] HTTP/1.1" 200',
        ),
        (
            f"/v1/threads/t/stream?cursor=run_1.4&token={TOKEN}",
            "/v1/threads/t/stream?cursor=run_1.4&token=[redacted]",
        ),
        ("/v1/runs/r/stream?token=not%20a%20token&x=1", "/v1/runs/r/stream?token=[redacted]&x=1"),
        (f"refused {TOKEN}", "refused st_[redacted]"),
        ("key sk_abcdefghijk and pk_abcdefghijk", "key sk_[redacted] and pk_[redacted]"),
        ("nothing to hide: tokens=3 and ?stoken=", "nothing to hide: tokens=3 and ?stoken="),
    ],
)
def test_redact(line: str, expected: str) -> None:
    assert redact(line) == expected


def test_the_formatter_redacts_arguments_and_tracebacks() -> None:
    try:
        raise ValueError(f"bad stream ?token={TOKEN}")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "open %s", (f"?token={TOKEN}",), None)
        record.exc_info = sys.exc_info()
    text = RedactingFormatter("%(message)s").format(record)
    assert TOKEN not in text and TOKEN[3:] not in text and text.count("token=[redacted]") >= 2
