"""Tiny inline-SVG charts for the HTML report: bars, stacked bars, strip plots.

Presentation only: they scale the numbers they are given to pixels, nothing else. Every
text is escaped; no script, no external resource.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from steptrace.units import short

PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
    "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
)  # fmt: skip
MUTED = "#d9d9d9"


def _finite(values: Sequence[float]) -> list[float]:
    """Non-finite values are drawn as 0 (their tables still show them as they are)."""
    return [v if math.isfinite(v) and v >= 0 else 0.0 for v in values]


def bars(
    labels: Sequence[str], values: Sequence[float], unit: str, highlight: int | None = None
) -> str:
    """Vertical bars, one per label; ``highlight`` marks one bar (the first step)."""
    values = _finite(values)
    width, height, pad = max(320, 60 * len(values)), 220, 40
    top = max(values, default=0) or 1.0
    step = (width - pad) / max(len(values), 1)
    parts = [_axis(width, height, pad, top, unit)]
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        h = (height - 2 * pad) * value / top
        x = pad + i * step + step * 0.15
        color = PALETTE[1] if i == highlight else PALETTE[0]
        tip = f"{label}: {value:.3f} {unit}"
        parts.append(_rect(x, height - pad - h, step * 0.7, h, color, tip))
        parts.append(_text(x + step * 0.35, height - pad + 14, short(label, 14), "middle"))
    return _svg(width, height, parts)


def stacked(
    rows: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    totals: Sequence[float],
    unit: str,
) -> str:
    """Horizontal stacked bars: one row per step, one colour per series, over the total."""
    totals = _finite(totals)
    series = [(name, _finite(values)) for name, values in series]
    width, row_h, pad = 720, 26, 130
    height = 40 + row_h * len(rows) + 20 * ((len(series) + 3) // 4)
    scale = (width - pad - 20) / (max(totals, default=0) or 1.0)
    parts = []
    for r, (row, total) in enumerate(zip(rows, totals, strict=True)):
        y = 20 + r * row_h
        parts.append(_text(pad - 6, y + 15, short(row, 18), "end", 11))
        parts.append(_rect(pad, y, total * scale, row_h - 6, MUTED, f"{row}: {total:.3f} {unit}"))
        x = float(pad)
        for s, (name, values) in enumerate(series):
            w = values[r] * scale
            if w > 0:
                tip = f"{name}: {values[r]:.3f} {unit}"
                parts.append(_rect(x, y, w, row_h - 6, PALETTE[s % len(PALETTE)], tip))
                x += w
    legend_y = 30 + row_h * len(rows)
    for s, (name, _) in enumerate(series):
        lx, ly = pad + (s % 4) * 150, legend_y + (s // 4) * 18
        parts.append(_rect(lx, ly, 10, 10, PALETTE[s % len(PALETTE)], name))
        parts.append(_text(lx + 14, ly + 9, short(name, 22), "start"))
    return _svg(width, height, parts)


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
        f"<title>{escape(tip)}</title></rect>"
    )


def _text(x: float, y: float, text: str, anchor: str, size: int = 10) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}">'
        f"{escape(text)}</text>"
    )


def _axis(width: int, height: int, pad: int, top: float, unit: str) -> str:
    return (
        f'<line x1="{pad}" y1="{height - pad}" x2="{width}" y2="{height - pad}" stroke="#888"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#888"/>'
        + _text(pad - 4, pad + 4, f"{top:.3g}", "end")
        + _text(pad - 4, height - pad, "0", "end")
        + _text(4, pad - 10, unit, "start")
    )


def _svg(width: float, height: float, parts: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img">{"".join(parts)}</svg>'
    )
