"""Charts drawn on the server: the geometry of an inline SVG (``templates/_chart.html`` draws it) from
counts the database aggregated per time bucket (``kit.timebuckets``).

Inline SVG needs no script and no request of its own, so it keeps to the dashboard's policy (no script
but our files, no inline style: colours are classes of ``dashboard.css``, shapes are attributes) and
renders in the page's first response. Each chart says what it shows twice for those who do not see it:
a ``<title>``/``<desc>`` summary on the SVG, and the numbers themselves in a table under it. Every bar
carries its own ``<title>``, which browsers show on hover.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from threadline.kit.timebuckets import TimeBuckets

WIDTH, HEIGHT = 720, 180
_LEFT, _RIGHT, _TOP, _BOTTOM = 52, 8, 10, 22
_PLOT_W, _PLOT_H = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM
_X_LABELS = 6


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    series: str
    label: str


@dataclass(frozen=True, slots=True)
class Chart:
    """What the template draws. ``rows``: the table under the chart, one per bucket (its time, then a
    value per column). ``note``: what the chart leaves out, said under it (and in its description)."""

    id: str
    title: str
    summary: str
    unit: str
    series: Sequence[str]
    columns: Sequence[str]
    rows: Sequence[tuple[str, Sequence[str]]]
    bars: Sequence[Bar] = ()
    line: str = ""
    points: Sequence[tuple[float, float, str]] = ()
    y_ticks: Sequence[tuple[float, str]] = ()
    x_ticks: Sequence[tuple[float, str]] = ()
    note: str | None = None
    width: int = WIDTH
    height: int = HEIGHT
    plot: tuple[int, int, int, int] = field(default=(_LEFT, _TOP, _PLOT_W, _PLOT_H))

    @property
    def empty(self) -> bool:
        return not self.bars and not self.points


def stacked(
    chart_id: str,
    title: str,
    buckets: TimeBuckets,
    series: Sequence[str],
    counts: Mapping[tuple[int, str], int],
    unit: str,
    note: str | None = None,
) -> Chart:
    """Bars per bucket, one segment per series (in ``series``' order, bottom up)."""
    totals = [sum(counts.get((i, name), 0) for name in series) for i in range(buckets.count)]
    top = _nice(max(totals, default=0))
    slot = _PLOT_W / buckets.count
    bars: list[Bar] = []
    labels = [_when(buckets, i) for i in range(buckets.count)]
    for i in range(buckets.count):
        base = 0
        for name in series:
            n = counts.get((i, name), 0)
            if n:
                y0, y1 = _y(base, top), _y(base + n, top)
                label = f"{labels[i]}: {n:,} {name}"
                bars.append(Bar(_LEFT + i * slot + 1, y1, max(slot - 2, 1), y0 - y1, name, label))
                base += n
    rows = [(labels[i], [f"{counts.get((i, name), 0):,}" for name in series]) for i in range(buckets.count)]
    grand = sum(totals)
    peak = max(range(buckets.count), key=lambda i: totals[i]) if grand else None
    summary = f"{grand:,} {unit} in all, " + ", ".join(
        f"{sum(counts.get((i, name), 0) for i in range(buckets.count)):,} {name}" for name in series
    )
    if peak is not None:
        summary += f"; the most, {totals[peak]:,}, in {labels[peak]}"
    return Chart(
        chart_id,
        title,
        _described(summary, buckets, note),
        unit,
        series,
        list(series),
        rows,
        bars=bars,
        y_ticks=_y_ticks(top),
        x_ticks=_x_ticks(buckets),
        note=note,
    )


def line(
    chart_id: str,
    title: str,
    buckets: TimeBuckets,
    name: str,
    values: Sequence[int | None],
    unit: str,
    note: str | None = None,
) -> Chart:
    """A line through each bucket's value (None: unknown there, the line skips it)."""
    known = [v for v in values if v is not None]
    low, high = min([0, *known]), max([0, *known])
    top = _nice(high)
    bottom = -_nice(-low) if low < 0 else 0
    slot = _PLOT_W / buckets.count
    points = [
        (_LEFT + (i + 0.5) * slot, _y(v - bottom, top - bottom), f"{_when(buckets, i)}: {v:,} {unit}")
        for i, v in enumerate(values)
        if v is not None
    ]
    rows = [(_when(buckets, i), ["" if v is None else f"{v:,}"]) for i, v in enumerate(values)]
    summary = f"from {known[0]:,} to {known[-1]:,} {unit}" if known else f"no {unit} recorded"
    return Chart(
        chart_id,
        title,
        _described(summary, buckets, note),
        unit,
        [name],
        [name],
        rows,
        line=" ".join(f"{x:.1f},{y:.1f}" for x, y, _ in points),
        points=points,
        y_ticks=_y_ticks(top, bottom),
        x_ticks=_x_ticks(buckets),
        note=note,
    )


def _described(summary: str, buckets: TimeBuckets, note: str | None) -> str:
    span = f"{_when(buckets, 0)} to {_when(buckets, buckets.count)} UTC, by {_step(buckets.step)}"
    return f"{span}: {summary}." + (f" {note}" if note else "")


def _nice(value: float) -> int:
    """The roundest number (1, 2 or 5 times a power of ten) at or above ``value``; 1 for nothing."""
    if value <= 1:
        return 1
    power = 10 ** math.floor(math.log10(value))
    return int(next(m * power for m in (1, 2, 5, 10) if m * power >= value))


def _y(value: float, top: float) -> float:
    return _TOP + _PLOT_H - (value / top) * _PLOT_H


def _y_ticks(top: int, bottom: int = 0) -> list[tuple[float, str]]:
    steps = [bottom + (top - bottom) * k / 2 for k in range(3)]
    return [(_y(v - bottom, top - bottom), _short(v)) for v in steps]


def _x_ticks(buckets: TimeBuckets) -> list[tuple[float, str]]:
    every = max(1, math.ceil(buckets.count / _X_LABELS))
    slot = _PLOT_W / buckets.count
    return [(_LEFT + i * slot, _when(buckets, i, short=True)) for i in range(0, buckets.count, every)]


def _when(buckets: TimeBuckets, i: int, *, short: bool = False) -> str:
    moment = buckets.start + buckets.step * i
    if buckets.step >= timedelta(days=1):
        return moment.strftime("%b %d")
    if short:
        return moment.strftime("%H:%M")
    return moment.strftime("%b %d %H:%M")


def _step(step: timedelta) -> str:
    minutes = int(step.total_seconds() // 60)
    if minutes % (24 * 60) == 0:
        days = minutes // (24 * 60)
        return "day" if days == 1 else f"{days} days"
    if minutes % 60 == 0:
        return "hour" if minutes == 60 else f"{minutes // 60} hours"
    return "minute" if minutes == 1 else f"{minutes} minutes"


def _short(value: float) -> str:
    for size, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if abs(value) >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"
