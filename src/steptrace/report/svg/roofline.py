"""The roofline chart for the HTML report: operators as points under the device's roofs.

Presentation only: log-log axes (FLOP per byte, TFLOP/s), the memory roof (bandwidth ×
intensity) up to each flat compute roof, one point per row (its area: its time; its
colour: its kind of work) with the table's row in its ``<title>`` (shown on hover).
Points of no FLOPs or no time cannot sit on log axes: the table lists them. Every text
is escaped; no script.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from steptrace.report.document import Roof, RooflineChart, RooflinePoint
from steptrace.report.svg.charts import MUTED, PALETTE
from steptrace.safe_text import html_text

WIDTH, HEIGHT = 760, 420
LEFT, RIGHT, TOP, BOTTOM = 64, 170, 16, 46  # margins: axis labels left, roof labels right
KINDS = ("GEMM", "convolution", "attention", "elementwise", "reduction", "normalization")


def roofline(chart: RooflineChart) -> str:
    """The chart as one ``<svg>`` element."""
    points = [p for p in chart.points if p.intensity > 0 and p.achieved_tflops > 0 and p.ms > 0]
    roofs = [r for r in chart.roofs if r.tflops > 0]
    bandwidth = chart.bandwidth_tbps if chart.bandwidth_tbps and chart.bandwidth_tbps > 0 else None
    x_lo, x_hi, y_lo, y_hi = _extent(points, roofs, bandwidth)
    scale = _Scale(x_lo, x_hi, y_lo, y_hi)
    parts = [*_grid(scale), *_roofs(scale, roofs, bandwidth)]
    biggest = max((p.ms for p in points), default=1.0)
    for point in sorted(points, key=lambda p: -p.ms):  # the small ones drawn on top
        parts.append(_point(scale, point, biggest))
    parts += _legend(sorted({p.kind for p in points}, key=_kind_order))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" class="roofline">{"".join(parts)}</svg>'
    )


class _Scale:
    """Log10 of the data to pixels."""

    def __init__(self, x_lo: float, x_hi: float, y_lo: float, y_hi: float) -> None:
        self.x = (math.log10(x_lo), math.log10(x_hi))
        self.y = (math.log10(y_lo), math.log10(y_hi))

    def px(self, intensity: float) -> float:
        lo, hi = self.x
        return LEFT + (math.log10(intensity) - lo) / (hi - lo) * (WIDTH - LEFT - RIGHT)

    def py(self, tflops: float) -> float:
        lo, hi = self.y
        return HEIGHT - BOTTOM - (math.log10(tflops) - lo) / (hi - lo) * (HEIGHT - TOP - BOTTOM)


def _extent(
    points: Sequence[RooflinePoint], roofs: Sequence[Roof], bandwidth: float | None
) -> tuple[float, float, float, float]:
    """A factor of 2 around the points, the roofs and the ridge points."""
    xs = [p.intensity for p in points] + [r.tflops / bandwidth for r in roofs if bandwidth]
    ys = [p.achieved_tflops for p in points] + [r.tflops for r in roofs]
    if not xs or not ys:
        return 0.01, 1000.0, 0.001, 1000.0
    return min(xs) / 2, max(xs) * 2, min(ys) / 2, max(ys) * 2


def _grid(scale: _Scale) -> list[str]:
    """A line and a label at each power of ten inside the axes."""
    parts = []
    for k in range(math.ceil(scale.x[0]), math.floor(scale.x[1]) + 1):
        x = scale.px(10.0**k)
        parts.append(_line(x, TOP, x, HEIGHT - BOTTOM, MUTED))
        parts.append(_text(x, HEIGHT - BOTTOM + 14, _power(k), "middle"))
    for k in range(math.ceil(scale.y[0]), math.floor(scale.y[1]) + 1):
        y = scale.py(10.0**k)
        parts.append(_line(LEFT, y, WIDTH - RIGHT, y, MUTED))
        parts.append(_text(LEFT - 6, y + 4, _power(k), "end"))
    parts.append(_line(LEFT, HEIGHT - BOTTOM, WIDTH - RIGHT, HEIGHT - BOTTOM, "#888"))
    parts.append(_line(LEFT, TOP, LEFT, HEIGHT - BOTTOM, "#888"))
    parts.append(_text((LEFT + WIDTH - RIGHT) / 2, HEIGHT - 10, "FLOP per byte", "middle"))
    middle = (TOP + HEIGHT - BOTTOM) / 2
    parts.append(
        f'<text x="14" y="{middle:.1f}" font-size="10" text-anchor="middle" '
        f'transform="rotate(-90 14 {middle:.1f})">TFLOP/s</text>'
    )
    return parts


def _roofs(scale: _Scale, roofs: Sequence[Roof], bandwidth: float | None) -> list[str]:
    """The memory roof up to the highest ridge; each compute roof from its ridge on."""
    parts: list[str] = []
    x_lo, x_hi = 10.0 ** scale.x[0], 10.0 ** scale.x[1]
    top = max((r.tflops for r in roofs), default=None)
    if bandwidth is not None:
        end = min(top / bandwidth, x_hi) if top else x_hi
        start = max(x_lo, 10.0 ** scale.y[0] / bandwidth)
        if end > start:
            tip = f"memory roof: {bandwidth:g} TB/s × FLOP per byte"
            parts.append(_roof(scale, (start, bandwidth * start), (end, bandwidth * end), tip))
    for roof in roofs:
        ridge = roof.tflops / bandwidth if bandwidth else x_lo
        begin = max(ridge, x_lo)
        tip = f"{roof.label} roof: {roof.tflops:g} TFLOP/s"
        parts.append(_roof(scale, (begin, roof.tflops), (x_hi, roof.tflops), tip))
        y = scale.py(roof.tflops)
        parts.append(_text(WIDTH - RIGHT + 6, y + 4, f"{roof.label} {roof.tflops:g}", "start"))
    return parts


def _roof(scale: _Scale, a: tuple[float, float], b: tuple[float, float], tip: str) -> str:
    x1, y1, x2, y2 = scale.px(a[0]), scale.py(a[1]), scale.px(b[0]), scale.py(b[1])
    return (
        f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="#333" '
        f'stroke-width="2"><title>{html_text(tip)}</title></line>'
    )


def _point(scale: _Scale, point: RooflinePoint, biggest: float) -> str:
    radius = 3 + 9 * math.sqrt(point.ms / biggest)
    color = PALETTE[_kind_order(point.kind) % len(PALETTE)]
    return (
        f'<circle cx="{scale.px(point.intensity):.1f}" cy="{scale.py(point.achieved_tflops):.1f}" '
        f'r="{radius:.1f}" fill="{color}" fill-opacity="0.7" stroke="#fff">'
        f"<title>{html_text(point.tip)}</title></circle>"
    )


def _legend(kinds: Sequence[str]) -> list[str]:
    parts = []
    for k, kind in enumerate(kinds):
        y = HEIGHT - BOTTOM - 14 * (len(kinds) - k)
        color = PALETTE[_kind_order(kind) % len(PALETTE)]
        parts.append(f'<circle cx="{WIDTH - RIGHT + 12}" cy="{y - 4}" r="5" fill="{color}"/>')
        parts.append(_text(WIDTH - RIGHT + 22, y, kind, "start"))
    return parts


def _kind_order(kind: str) -> int:
    return KINDS.index(kind) if kind in KINDS else len(KINDS)


def _power(k: int) -> str:
    return f"{10.0**k:g}" if -3 <= k <= 4 else f"1e{k}"


def _line(x1: float, y1: float, x2: float, y2: float, color: str) -> str:
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}"/>'


def _text(x: float, y: float, text: str, anchor: str) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="10" text-anchor="{anchor}">'
        f"{html_text(text)}</text>"
    )
