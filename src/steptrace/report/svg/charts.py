"""Tiny inline-SVG charts for the HTML report: bars, stacked bars, strip plots, heatmaps.

Presentation only: they scale the numbers they are given to pixels, nothing else. Every
text is escaped (control characters made visible); no script, no external resource.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from steptrace.safe_text import html_text
from steptrace.units import short

PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
MUTED = "#d9d9d9"


def _finite(values: Sequence[float]) -> list[float]:
    """Non-finite values are drawn as 0 (their tables still show them as they are)."""
    return [v if math.isfinite(v) and v >= 0 else 0.0 for v in values]


CHAR_PX = 6.0  # the width of a character of the 10-11 px labels, generously (no font metrics)
LABEL_TILT = 90  # degrees: step labels that do not fit under their bar are drawn upright
TEXT_GREY = "#9a9a9a"  # a series drawn grey (``muted``): darker than the total behind it


def bars(
    labels: Sequence[str], values: Sequence[float], unit: str, highlight: int | None = None
) -> str:
    """Vertical bars, one per label; ``highlight`` marks one bar (the first step). Labels
    that do not fit under their bar are turned upright, and thinned (every k-th, the
    highlighted one always) when even upright ones would touch."""
    values = _finite(values)
    names = [short(label, 18) for label in labels]
    widest = max((len(n) for n in names), default=0) * CHAR_PX
    top = max(values, default=0) or 1.0
    top_text = _axis_number(top)
    width = max(320, 60 * len(values))
    pad = max(40.0, len(top_text) * CHAR_PX + 8)  # room for the axis' top value
    step = (width - pad) / max(len(values), 1)
    tilted = widest > step * 0.9
    drop = widest * math.sin(math.radians(LABEL_TILT)) + 8 if tilted else 0.0
    height = 220 + drop
    every = math.ceil(14 / step) if tilted else 1  # upright labels need ~14 px apart
    base = 180  # the bars' baseline, as without labels below
    parts = [_axis(width, base + 40, pad, top_text, unit)]
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        h = (base - 40) * value / top
        x = pad + i * step + step * 0.15
        color = PALETTE[1] if i == highlight else PALETTE[0]
        tip = f"{label}: {value:.3f} {unit}"
        parts.append(_rect(x, base - h, step * 0.7, h, color, tip))
        if i % every and i != highlight:
            continue
        middle = x + step * 0.35
        if tilted:
            parts.append(_tilted(middle, base + 12, names[i]))
        else:
            parts.append(_text(middle, base + 14, names[i], "middle"))
    return _svg(width, height, parts)


def stacked(
    rows: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    totals: Sequence[float],
    unit: str,
    muted: Sequence[str] = (),
) -> str:
    """Horizontal stacked bars: one row per step, one colour per series (grey for the
    ``muted`` ones), over the total; a time axis under them and a legend that wraps."""
    totals = _finite(totals)
    series = [(name, _finite(values)) for name, values in series]
    width, row_h, pad = 720, 26, 130
    scale_top = _nice(max(totals, default=0) or 1.0)
    scale = (width - pad - 20) / scale_top
    colors = _series_colors([name for name, _ in series], muted)
    parts = []
    for r, (row, total) in enumerate(zip(rows, totals, strict=True)):
        y = 20 + r * row_h
        parts.append(_text(pad - 6, y + 15, short(row, 18), "end", 11))
        parts.append(_rect(pad, y, total * scale, row_h - 6, MUTED, f"{row}: {total:.3f} {unit}"))
        x = float(pad)
        for (name, values), color in zip(series, colors, strict=True):
            w = values[r] * scale
            if w > 0:
                parts.append(_rect(x, y, w, row_h - 6, color, f"{name}: {values[r]:.3f} {unit}"))
                x += w
    axis_y = 20 + row_h * len(rows)
    parts += _time_axis(pad, axis_y, scale, scale_top, unit)
    legend, legend_h = _legend_items([n for n, _ in series], colors, pad, axis_y + 36, width)
    parts += legend
    return _svg(width, axis_y + 36 + legend_h, parts)


def _series_colors(names: Sequence[str], muted: Sequence[str]) -> list[str]:
    colors, k = [], 0
    for name in names:
        if name in muted:
            colors.append(TEXT_GREY)
        else:
            colors.append(PALETTE[k % len(PALETTE)])
            k += 1
    return colors


def _nice(top: float) -> float:
    """The smallest 1, 2 or 5 × 10^k at or above ``top``: the axis' end."""
    power = 10.0 ** math.floor(math.log10(top))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= top * (1 - 1e-12)))


def _time_axis(x0: float, y: float, scale: float, top: float, unit: str) -> list[str]:
    """A line with five ticks from 0 to ``top`` and the unit after them."""
    parts = [f'<line x1="{x0}" y1="{y}" x2="{x0 + top * scale:.1f}" y2="{y}" stroke="#888"/>']
    for k in range(5):
        value = top * k / 4
        x = x0 + value * scale
        parts.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" stroke="#888"/>')
        parts.append(_text(x, y + 15, f"{value:g}", "middle"))
    parts.append(_text(x0 - 6, y + 15, unit, "end"))
    return parts


def _legend_items(
    names: Sequence[str], colors: Sequence[str], x0: float, y0: float, width: float
) -> tuple[list[str], float]:
    """Swatches with their whole names (up to 80 characters), flowed into rows that fit."""
    parts: list[str] = []
    x, y = x0, y0
    for name, color in zip(names, colors, strict=True):
        shown = short(name, 80)
        item = 14 + len(shown) * CHAR_PX + 16
        if x > x0 and x + item > width:
            x, y = x0, y + 18
        parts.append(_rect(x, y, 10, 10, color, name))
        parts.append(_text(x + 14, y + 9, shown, "start"))
        x += item
    return parts, (y - y0 + 18 if names else 0)


def strips(groups: Sequence[tuple[str, Sequence[float]]], unit: str) -> str:
    """Every raw value as a dot, one row per group, on a shared axis: the distributions."""
    groups = [(name, [v for v in group if math.isfinite(v)]) for name, group in groups]
    width, row_h, pad = 720, 40, 110
    values = [v for _, vs in groups for v in vs] or [0.0, 1.0]
    low, high = min(values), max(values)
    scale = (width - pad - 30) / ((high - low) or 1.0)
    parts = []
    for g, (name, group) in enumerate(groups):
        y = 20 + g * row_h
        parts.append(_text(pad - 8, y + 4, name, "end", 11))
        color = PALETTE[g % len(PALETTE)]
        for i, v in enumerate(group):
            jitter = ((i * 7919) % 17 - 8) * 1.2  # a fixed spread, to see the density
            parts.append(
                f'<circle cx="{pad + (v - low) * scale:.1f}" cy="{y + jitter:.1f}" r="2" '
                f'fill="{color}" fill-opacity="0.6"/>'
            )
    bottom = 20 + row_h * len(groups)
    parts.append(_text(pad, bottom, f"{low:.3f} {unit}", "start"))
    parts.append(_text(width - 30, bottom, f"{high:.3f} {unit}", "end"))
    return _svg(width, bottom + 10, parts)


def _rect(x: float, y: float, w: float, h: float, color: str, tip: str) -> str:
    return (
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{color}">'
        f"<title>{html_text(tip)}</title></rect>"
    )


def _text(x: float, y: float, text: str, anchor: str, size: int = 10) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}">'
        f"{html_text(text)}</text>"
    )


def _tilted(x: float, y: float, text: str, size: int = 10) -> str:
    """A label ending under ``x``, rising at ``LABEL_TILT`` degrees (upright: read upwards)."""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="end" '
        f'transform="rotate(-{LABEL_TILT} {x:.1f} {y:.1f})">{html_text(text)}</text>'
    )


def _axis_number(value: float) -> str:
    """An axis value in plain digits: 13,336 rather than 1.33e+04."""
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def _axis(width: float, height: float, pad: float, top: str, unit: str) -> str:
    """The left and bottom axes of the bars, ``pad`` px in from the left, 40 from the edges
    at the top and bottom."""
    return (
        f'<line x1="{pad}" y1="{height - 40}" x2="{width}" y2="{height - 40}" stroke="#888"/>'
        f'<line x1="{pad}" y1="40" x2="{pad}" y2="{height - 40}" stroke="#888"/>'
        + _text(pad - 4, 44, top, "end")
        + _text(pad - 4, height - 40, "0", "end")
        + _text(4, 30, unit, "start")
    )


def _svg(width: float, height: float, parts: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img">{"".join(parts)}</svg>'
    )


GRID_WIDTH = 960  # the heatmap's width in pixels, whatever the number of columns
GRID_LABEL = 74  # room for the row labels on the left
_LOW, _HIGH, _NEGATIVE = (247, 251, 255), (8, 48, 107), (178, 24, 43)
NOT_OBSERVED_FILL = "#e0e0e0"


def heatmap(
    rows: Sequence[str],
    columns: Sequence[str],
    values: Sequence[Sequence[float | None]],
    unit: str,
    *,
    diverging: bool = False,
    marked: Sequence[int] = (),
) -> str:
    """A grid, one row per rank (or bin), one column per step or phase; labels only where
    they fit (every k-th, and the ``marked`` rows always, in bold), cells shrink with the
    rows (2 to 18 px high)."""
    cell_h = min(18.0, max(2.0, 560 / max(len(rows), 1)))
    cell_w = (GRID_WIDTH - GRID_LABEL - 12) / max(len(columns), 1)
    top, every_row = 30, math.ceil(12 / cell_h)
    every_col = math.ceil(64 / cell_w)
    numbers = [v for row in values for v in row if v is not None and math.isfinite(v)]
    scale = max((abs(v) for v in numbers), default=0.0) or 1.0
    parts = []
    for c, name in enumerate(columns):
        if c % every_col == 0:
            room = max(3, int(cell_w * every_col / 6.5))
            x = GRID_LABEL + c * cell_w + (cell_w / 2 if every_col == 1 else 0)
            parts.append(
                _text(x, top - 8, short(name, room), "middle" if every_col == 1 else "start")
            )
    labelled = set(marked) | {
        r for r in range(0, len(rows), every_row) if all(abs(r - m) >= every_row for m in marked)
    }
    for r, (name, row) in enumerate(zip(rows, values, strict=True)):
        y = top + r * cell_h
        if r in labelled:
            middle = y + cell_h / 2 + 3.5  # the label's baseline: centred on its row
            label = _text(GRID_LABEL - 6, middle, short(name, 11), "end")
            parts.append(
                label.replace("<text ", '<text font-weight="bold" ') if r in marked else label
            )
        for c, value in enumerate(row):
            color = _cell_color(value, scale, diverging)
            shown = "not observed" if value is None else f"{value:.3f} {unit}"
            tip = f"{name}, {columns[c]}: {shown}"
            parts.append(_rect(GRID_LABEL + c * cell_w, y, cell_w, cell_h, color, tip))
    bottom = top + cell_h * len(rows) + 14
    parts += _legend(bottom, scale, unit, diverging, len(numbers) < sum(len(r) for r in values))
    return _svg(GRID_WIDTH, bottom + 24, parts)


def _cell_color(value: float | None, scale: float, diverging: bool) -> str:
    if value is None or not math.isfinite(value):
        return NOT_OBSERVED_FILL
    share = min(1.0, abs(value) / scale)
    far = _NEGATIVE if diverging and value > 0 else _HIGH
    return _mix(_LOW, far, share)


def _mix(low: tuple[int, int, int], high: tuple[int, int, int], share: float) -> str:
    return "#" + "".join(
        f"{round(a + (b - a) * share):02x}" for a, b in zip(low, high, strict=True)
    )


def _legend(y: float, scale: float, unit: str, diverging: bool, unobserved: bool) -> list[str]:
    """Five swatches from the lowest to the highest colour, with their values."""
    stops = [-1.0, -0.5, 0.0, 0.5, 1.0] if diverging else [0.0, 0.25, 0.5, 0.75, 1.0]
    parts, x = [], float(GRID_LABEL)
    for stop in stops:
        value = stop * scale
        parts.append(_rect(x, y, 12, 12, _cell_color(value, scale, diverging), f"{value:.3g}"))
        label = f"{value:+.3g}" if diverging else f"{value:.3g}"
        parts.append(_text(x + 16, y + 10, label, "start"))
        x += 80
    parts.append(_text(x + 4, y + 10, unit, "start"))
    if unobserved:
        x += 70
        parts.append(_rect(x, y, 12, 12, NOT_OBSERVED_FILL, "not observed"))
        parts.append(_text(x + 16, y + 10, "not observed", "start"))
    return parts
