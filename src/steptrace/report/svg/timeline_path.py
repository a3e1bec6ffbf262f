"""The critical-path strips of a timeline view as SVG: one row per step under the lanes.

Presentation only (``timeline_path`` lays the pieces out): each piece is a rect on the
lanes' x scale, inside the group the page's script zooms and pans, coloured by kind
(merged pieces of mixed kinds paler). Its times, name and the bar it ran in are
``data-*`` attributes that the script describes on hover and follows on a click; names
are read from the figure's JSON block. Every text from the trace is escaped.
"""

from __future__ import annotations

from steptrace import units
from steptrace.report.document import PathPiece, TimelineFigure, TimelineView
from steptrace.safe_text import html_text

STRIP_H = 10
PATH_COLORS = ("#4e79a7", "#f28e2b", "#59a14f", "#d62728", "#c7c7c7")  # by KIND_NAMES
STYLE = (
    "".join(f".tl .p{i}{{fill:{c}}}" for i, c in enumerate(PATH_COLORS))
    # every piece of a strip is as high: said once here, not on each of its thousands
    # crisp edges: no pale seam between pieces that touch
    + f".tl g.cps{{shape-rendering:crispEdges}}.tl g.cps rect{{height:{STRIP_H - 1}px}}"
    ".tl g.cps rect.m{fill-opacity:.55}"
    ".tl g.cps rect[data-t]{cursor:pointer}"
)


def strips(
    view: TimelineView, scale: float, y: int, labels: list[str], left: int
) -> tuple[list[str], int]:
    """The view's strips from ``y`` down (their labels right-aligned at ``left``), and
    where they end."""
    rows: list[str] = []
    for strip in view.paths:
        y += 3
        label = "critical path" if len(view.paths) == 1 else f"path: {units.short(strip.step, 22)}"
        about = f"{strip.step}: the critical path, {units.ms(strip.length_ns / 1e6)} ms"
        if any(p.count > 1 for p in strip.pieces):
            about += f"; neighbours under {units.ms(strip.resolution_ns / 1e6)} ms merged"
        if strip.hidden_ns:
            about += f"; its last {units.ms(strip.hidden_ns / 1e6)} ms are past this view"
        labels.append(
            f'<text x="{left}" y="{y + 8}" text-anchor="end"><title>{html_text(about)}'
            f"</title>{html_text(label)}</text>"
        )
        pieces = "".join(_piece(p, scale) for p in strip.pieces)
        rows.append(f'<g class="cps" transform="translate(0,{y})">{pieces}</g>')
        y += STRIP_H
    return rows, y


def _piece(piece: PathPiece, scale: float) -> str:
    x, w = piece.start_ns * scale, (piece.end_ns - piece.start_ns) * scale
    merged = piece.count > 1
    mixed = merged and piece.kind_ns < piece.end_ns - piece.start_ns  # drawn paler
    extra = f' data-n="{piece.name}"' if piece.name >= 0 else ""
    extra += f' data-c="{piece.count}" data-k="{piece.kind_ns}"' if merged else ""
    extra += f' data-t="{piece.bar}"' if piece.bar >= 0 else ""
    return (
        f'<rect class="p{piece.kind}{" m" if mixed else ""}" x="{x:.2f}" '
        f'width="{max(w, 0.2):.2f}" data-s="{piece.start_ns}" '
        f'data-d="{piece.end_ns - piece.start_ns}"{extra}/>'
    )


def legend(block: TimelineFigure) -> str:
    """The kinds' keys, when a view draws a path."""
    if not any(v.paths for v in block.views):
        return ""
    keys = "".join(
        f'<span class="key" style="background:{PATH_COLORS[k]}"></span>{html_text(kind)}'
        for k, kind in enumerate(block.path_kinds)
    )
    return f'<div class="bar">critical path (under the lanes):{keys}</div>'
