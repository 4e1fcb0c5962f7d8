"""Progress of long operator commands (backup, restore, migrate) on standard error.

On a terminal a line rewrites itself as the work advances; piped or redirected (cron, CI, a log file)
nothing is printed until the command's one summary line, so logs hold no carriage returns or half lines.
Standard output stays for the result alone."""

from __future__ import annotations

import sys
import time
from typing import TextIO

# A terminal redraws at most this often: a copy of a large database reports thousands of steps.
_REDRAW_SECONDS = 0.1


class Progress:
    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty()
        self.started = time.monotonic()
        self._drawn = 0.0
        self._width = 0

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def fraction(self, done: int, total: int, unit: str) -> None:
        """``done`` of ``total`` ``unit`` (pages, steps): a percentage redrawn in place on a terminal."""
        now = time.monotonic()
        if not self.live or (done < total and now - self._drawn < _REDRAW_SECONDS):
            return
        self._drawn = now
        percent = 100 * done // total if total else 100
        self._draw(f"{self.label}: {percent:3d}% ({done:,} of {total:,} {unit})")

    def line(self, text: str) -> None:
        """A line of its own (one migration step), on a terminal only."""
        if self.live:
            self._clear()
            self.stream.write(f"{self.label}: {text}\n")
            self.stream.flush()

    def done(self) -> None:
        """Leave the terminal's line empty for the summary that follows."""
        if self.live:
            self._clear()

    def _draw(self, text: str) -> None:
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = len(text)

    def _clear(self) -> None:
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0


def size_text(size: int) -> str:
    """Bytes as people read them: 812 KB, 11.2 MB, 3.4 GB."""
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit in ("bytes", "KB") else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")
