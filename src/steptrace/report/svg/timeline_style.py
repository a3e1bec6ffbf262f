"""The timeline figure's look: the colours of the kinds of work, of the GPU's idle gaps by
cause, of memory and launch queues, and the figure's CSS (``STYLE``, with the critical
path's, ``timeline_path_svg.STYLE``), put in the HTML page once."""

from __future__ import annotations

from steptrace.report.svg import timeline_path as timeline_path_svg

ALLOCATED, RESERVED, QUEUED = "#e15759", "#9c755f", "#76b7b2"
COLORS = (
    "#4e79a7",
    "#a0cbe8",
    "#59a14f",
    "#b07aa1",
    "#edc948",
    "#f28e2b",
    "#e15759",
    "#17becf",
    "#9c755f",
)
GAP_COLORS = ("#f6b8b8", "#fbd78b", "#d5d5d5", "#eeeeee")
STYLE = (
    # the figure spans the window, wider than the page's text; its SVGs scale to it
    ".tl{margin:.5rem 0 .5rem calc(50% - 50vw + 1.5rem);width:calc(100vw - 3rem)}"
    ".tl svg{display:block;background:#fff;cursor:grab;user-select:none}"
    ".tl svg.tlv{width:100%;height:auto;max-width:none}"
    # names drawn on bars and gaps never take the pointer from what is under them
    ".tl g.tx{pointer-events:none}"
    ".tl .bar{font-size:.8rem;margin:.2rem 0}.tl .info{font-size:.8rem;color:#333;"
    "min-height:1.2em;font-family:ui-monospace,monospace}.tl .sel{stroke:#000;"
    "stroke-width:1.5px;vector-effect:non-scaling-stroke}.tl .band{fill-opacity:.45;"
    "stroke:#555;stroke-dasharray:2 2;stroke-width:.6px;vector-effect:non-scaling-stroke}"
    # a finding's place and lanes are outlined, never filled: the colours under them stay
    ".tl .mark{fill:none;stroke:#4e79a7;stroke-width:2px;stroke-dasharray:6 3;"
    "vector-effect:non-scaling-stroke}"
    ".tl rect.lane.hl{stroke:#e0a800;stroke-width:2px;vector-effect:non-scaling-stroke}"
    ".tl text.hl{font-weight:bold}"
    ".tl .bd{stroke:#222;stroke-width:1.2px;stroke-dasharray:5 3;"
    "vector-effect:non-scaling-stroke}.tl text.bdn{font-weight:bold}"
    ".tl .key{display:inline-block;width:.8em;height:.8em;"
    "margin:0 .2em 0 .8em;vertical-align:-.1em}.tl text{font-size:10px;fill:#222}"
    ".tl g.tx text{font-size:9px}"  # a name fits its 11-unit row however wide the figure
    ".tl .lnk{stroke:#000;stroke-width:1.2px;vector-effect:non-scaling-stroke}"
    ".tl .mem{fill:none;stroke-width:1.4px;vector-effect:non-scaling-stroke}"
    ".tl .mpk{stroke:#e15759;stroke-width:1px;stroke-dasharray:3 2;"
    "vector-effect:non-scaling-stroke}"
    f".tl .que{{fill:{QUEUED};fill-opacity:.7;stroke:#3d8a85;stroke-width:.8px;"
    "vector-effect:non-scaling-stroke}"
    + "".join(f".tl .k{i}{{fill:{c}}}" for i, c in enumerate(COLORS))
    + "".join(f".tl .c{i}{{fill:{c}}}" for i, c in enumerate(GAP_COLORS))
    + timeline_path_svg.STYLE
)
