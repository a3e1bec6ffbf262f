"""The timeline figure as HTML: one inline SVG per step, its controls, and its data.

Presentation only: ``figure(block, anchor)`` scales the nanoseconds the block holds to
pixels. Each view (a step) is one ``<svg>``, the first shown one visible: a time axis,
lane labels, then a plot whose bars, bands, GPU idle gaps and marks sit in one group that
the page's script (``timeline_script``) zooms and pans. Bars carry their times, name and
launch link in ``data-*`` attributes; names are read from a JSON block made safe for a
``<script>`` element (``safe_json``). Every text from the trace is escaped, control
characters made visible; nothing is fetched.
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from steptrace.analysis.memory.lane import MemoryCurve
from steptrace.analysis.timeline.gaps import AFTER_SYNC, NOT_KNOWN, NOTHING_AFTER, WAITING_ON_HOST
from steptrace.analysis.timeline.model import Lane
from steptrace.analysis.timeline.queue import QueueCurve
from steptrace.report.document import LaneGroup, TimelineFigure, TimelineView
from steptrace.report.svg import timeline_path as timeline_path_svg
from steptrace.report.svg import timeline_workers as workers_svg
from steptrace.report.svg.timeline_style import ALLOCATED, COLORS, GAP_COLORS, QUEUED, RESERVED
from steptrace.safe_text import html_text, visible
from steptrace.units import short, size

WIDTH, LABELS, ROW, LANE_GAP, AXIS = 1060, 210, 11, 5, 30
MEMORY_H = 44  # the memory curve's band, above the lanes
QUEUE_H = 20  # a GPU stream's launch queue, below the group's lanes
QUEUE_MIN = 2  # drawn when this many were queued at once (one is every launch's own wait)
PLOT = WIDTH - LABELS - 10
TICKS = 8
TEXT_MIN_PX = 48  # bars at least this wide at full view carry their name
CAUSES = (WAITING_ON_HOST, AFTER_SYNC, NOT_KNOWN, NOTHING_AFTER)


def safe_json(value: object) -> str:
    """JSON that cannot end or open markup inside ``<script>``: ``<``, ``>``, ``&`` and the
    line separators are written as ``\\u`` escapes (the same value once parsed)."""
    text = msgspec.json.encode(value).decode()
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


def figure(block: TimelineFigure, anchor: str) -> str:
    """The controls, one SVG per view (the shown one visible), the legend and the data."""
    options = "".join(
        f'<option value="{k}"{" selected" if k == block.shown else ""}>'
        f"{html_text(v.label)}</option>"
        for k, v in enumerate(block.views)
    )
    controls = (
        f'<div class="bar"><label>step <select class="pick">{options}</select></label> '
        '<button type="button" data-zoom="2">zoom in</button> '
        '<button type="button" data-zoom="0.5">zoom out</button> '
        '<button type="button" data-zoom="0">whole step</button></div>'
        '<div class="info">hover or click a bar</div>'
    )
    views = "".join(_view(v, k, k == block.shown, block) for k, v in enumerate(block.views))
    data = {
        "names": [visible(n) for n in block.names],
        "kinds": list(block.kinds),
        "causes": list(CAUSES),
        "marks": [
            {
                "view": m.view,
                "start": m.start_ns,
                "end": m.end_ns,
                "lanes": list(m.lanes),
                "names": list(m.names),
                "label": visible(m.label),
            }
            for m in block.marks
        ],
    }
    if block.path_kinds:
        data["pathKinds"] = list(block.path_kinds)
        data["pathNames"] = [visible(n) for n in block.path_names]
    script = f'<script type="application/json" class="tl-data">{safe_json(data)}</script>'
    keys = _legend(block) + timeline_path_svg.legend(block)
    body = f"{controls}{views}{keys}{script}"
    return f'<div class="tl" id="{html_text(anchor)}-fig">{body}</div>'


def _legend(block: TimelineFigure) -> str:
    used_kinds: set[int] = set()
    used_causes: set[str] = set()
    for view in block.views:
        for group in view.groups:
            used_causes.update(g.cause for g in group.lanes.gaps)
            for lane in group.lanes.lanes:
                used_kinds.update(b.kind for b in lane.bars)
                used_kinds.update(b.kind for b in lane.bands)
    keys = [
        f'<span class="key" style="background:{COLORS[k]}"></span>{html_text(block.kinds[k])}'
        for k in sorted(used_kinds)
        if k < len(COLORS)  # the workers' kinds: their keys below
    ] + [
        f'<span class="key" style="background:{GAP_COLORS[i]}"></span>GPU idle: {html_text(c)}'
        for i, c in enumerate(CAUSES)
        if c in used_causes
    ]
    if any(
        lane.queue.peak >= QUEUE_MIN
        for v in block.views
        for g in v.groups
        for lane in g.lanes.lanes
        if lane.queue
    ):
        keys.append(
            f'<span class="key" style="background:{QUEUED}"></span>'
            "launch queue (launched, not started)"
        )
    curves = [v.groups[0].lanes.memory for v in block.views if len(v.groups) == 1]
    keys.extend(workers_svg.legend(block))
    if any(curves):
        keys.append(f'<span class="key" style="background:{ALLOCATED}"></span>memory allocated')
    if any(c and any(c.reserved) for c in curves):
        keys.append(f'<span class="key" style="background:{RESERVED}"></span>reserved (dashed)')
    return f'<div class="bar">{"".join(keys)}</div>'


def _view(view: TimelineView, index: int, shown: bool, block: TimelineFigure) -> str:
    scale = PLOT / max(view.span_ns, 1)
    body: list[str] = []
    labels: list[str] = []
    names: list[str] = []
    y = AXIS
    curve = view.groups[0].lanes.memory if len(view.groups) == 1 else None
    if curve is not None and curve.at_ns:
        drawn, label = _memory(curve, scale, y)
        body.append(drawn)
        labels.append(label)
        y += MEMORY_H + LANE_GAP
    lane_index = 0
    for group in view.groups:
        if group.label:
            title = html_text(group.label)
            labels.append(f'<text x="4" y="{y + 10}" font-weight="bold">{title}</text>')
            y += 14
        group_top = y
        rows, texts, y, lane_index = _group(group, scale, y, lane_index, block, labels)
        body.append(_gaps(group, scale, group_top, y, texts))
        queues, y = _queues(group, scale, y, labels)
        rows.extend(queues)
        body.extend(rows)
        names.extend(texts)
        y += LANE_GAP
    strips, y = timeline_path_svg.strips(view, scale, y, labels, LABELS - 6)
    body.extend(strips)
    height = y + 6
    for group in view.groups:
        body.extend(_boundaries(group, scale, height, names))
    hidden = "" if shown else ' style="display:none"'
    axis = "".join(_ticks(view.span_ns, height))
    return (
        f'<svg class="tlv" data-v="{index}" data-span="{view.span_ns}" data-plot="{PLOT}" '
        f'data-left="{LABELS}" data-width="{WIDTH}" '
        f'width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}"{hidden} '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(labels)}'
        f'<svg x="{LABELS}" y="0" width="{PLOT}" height="{height}">{axis}'
        f'<g class="z">{"".join(body)}</g><g class="tx">{"".join(names)}</g></svg></svg>'
    )


def _memory(curve: MemoryCurve, scale: float, top: int) -> tuple[str, str]:
    """The step's allocated (solid) and reserved (dashed) bytes as lines in a band of
    ``MEMORY_H`` above the lanes, the peak marked by a line named with its label; and the
    band's label on the left."""
    most = max(max(curve.allocated), max(curve.reserved), 1)

    def path(values: tuple[int, ...]) -> str:
        points = []
        last_y = None
        for at, value in zip(curve.at_ns, values, strict=True):
            y = top + MEMORY_H - value / most * (MEMORY_H - 4)
            if last_y is not None:  # a step: the level holds until the next event
                points.append(f"{at * scale:.2f},{last_y:.1f}")
            points.append(f"{at * scale:.2f},{y:.1f}")
            last_y = y
        return " ".join(points)

    where = f" in {curve.peak_label}" if curve.peak_label else ""
    peak = (
        f"peak {size(curve.peak_bytes)} allocated on {curve.device} at "
        f"{time_text(curve.peak_ns)}{where}"
    )
    x = curve.peak_ns * scale
    reserved = (
        f'<polyline class="mem" stroke="{RESERVED}" stroke-dasharray="4 2" '
        f'points="{path(curve.reserved)}"><title>reserved</title></polyline>'
        if any(curve.reserved)  # the CPU reserves nothing
        else ""
    )
    drawn = (
        f'<g class="mband">{reserved}'
        f'<polyline class="mem" stroke="{ALLOCATED}" points="{path(curve.allocated)}">'
        f"<title>allocated</title></polyline>"
        f'<line class="mpk" x1="{x:.2f}" y1="{top}" x2="{x:.2f}" y2="{top + MEMORY_H}">'
        f"<title>{html_text(peak)}</title></line></g>"
    )
    label = (
        f'<text x="{LABELS - 6}" y="{top + 12}" text-anchor="end">'
        f"<title>{html_text(peak)}</title>memory ({html_text(curve.device)})</text>"
        f'<text x="{LABELS - 6}" y="{top + 24}" text-anchor="end">'
        f"up to {html_text(size(most))}</text>"
    )
    return drawn, label


READ_ATTR = ' data-r="1"'
READ_WORDS = ", while the batch is read"  # a gap mostly inside the labels read as data_read


def _mostly_reading(lo: int, hi: int, spans: tuple[tuple[int, int], ...]) -> bool:
    """At least half of ``[lo, hi)`` lies in the spans in which the batch is read."""
    inside = sum(max(0, min(hi, b) - max(lo, a)) for a, b in spans)
    return hi > lo and 2 * inside >= hi - lo


def _boundaries(group: LaneGroup, scale: float, height: int, names: list[str]) -> list[str]:
    """Where each step after the first begins, on a view of consecutive steps: a dashed
    line down the lanes, the step's name at the top."""
    out = []
    for at_ns, name in group.lanes.boundaries:
        x = (group.offset_ns + at_ns) * scale
        out.append(
            f'<line class="bd" x1="{x:.2f}" y1="0" x2="{x:.2f}" y2="{height}">'
            f"<title>{html_text(name)} begins</title></line>"
        )
        names.append(
            f'<text class="bdn" data-x="{x:.2f}" data-w="0" x="{x + 2:.2f}" y="9">'
            f"{html_text(short(visible(name), 30))}</text>"
        )
    return out


def _queues(group: LaneGroup, scale: float, y: int, labels: list[str]) -> tuple[list[str], int]:
    """Below the group's lanes, one row per GPU stream whose launch queue held ``QUEUE_MIN``
    at once: how many of its activities were launched and not yet started, as a filled
    step curve to its peak."""
    rows: list[str] = []
    for lane in group.lanes.lanes:
        if lane.queue is None or lane.queue.peak < QUEUE_MIN:
            continue
        y += 2
        what = (
            f"{lane.label}: up to {lane.queue.peak} launched, not started "
            "(the CPU ahead of the GPU by that many)"
        )
        labels.append(
            f'<text x="{LABELS - 6}" y="{y + 13}" text-anchor="end"><title>{html_text(what)}'
            f"</title>queued: up to {lane.queue.peak}</text>"
        )
        rows.append(
            f'<polygon class="que" points="{_queue_points(lane.queue, group, scale, y)}">'
            f"<title>{html_text(what)}</title></polygon>"
        )
        y += QUEUE_H
    return rows, y


def _queue_points(curve: QueueCurve, group: LaneGroup, scale: float, top: int) -> str:
    """The queue's step curve as a closed polygon over the row's baseline."""
    base = top + QUEUE_H
    points = [f"{(group.offset_ns + curve.at_ns[0]) * scale:.2f},{base}"]
    last: float = base
    for at, depth in zip(curve.at_ns, curve.depth, strict=True):
        x = (group.offset_ns + at) * scale
        y = base - depth / curve.peak * (QUEUE_H - 2)
        points.append(f"{x:.2f},{last:.1f}")
        points.append(f"{x:.2f},{y:.1f}")
        last = y
    end = (group.offset_ns + group.lanes.wall_ns) * scale
    points += [f"{end:.2f},{last:.1f}", f"{end:.2f},{base}"]
    return " ".join(points)


def _ticks(span_ns: int, height: int) -> Iterator[str]:
    for i in range(TICKS + 1):
        x = PLOT * i / TICKS
        anchor = "start" if i == 0 else "end" if i == TICKS else "middle"
        yield f'<line x1="{x:.1f}" y1="{AXIS - 6}" x2="{x:.1f}" y2="{height}" stroke="#eee"/>'
        yield (
            f'<text class="tk" data-p="{x:.1f}" x="{x:.1f}" y="{AXIS - 10}" '
            f'text-anchor="{anchor}">{time_text(span_ns * i / TICKS)}</text>'
        )


def time_text(ns: float) -> str:
    """A time on the axis: ms with three decimals, µs below a tenth of a millisecond."""
    return f"{ns / 1e6:.3f} ms" if abs(ns) >= 100_000 or ns == 0 else f"{ns / 1e3:.1f} µs"


def _group(
    group: LaneGroup,
    scale: float,
    y: int,
    lane_index: int,
    block: TimelineFigure,
    labels: list[str],
) -> tuple[list[str], list[str], int, int]:
    rows: list[str] = [f'<g class="grp" data-off="{group.offset_ns * scale:.2f}">']
    texts: list[str] = []
    tops: list[int] = []
    for lane in group.lanes.lanes:
        tops.append(y)
        labels.append(
            f'<text class="ln" data-lane="{lane_index}" x="{LABELS - 6}" y="{y + 9}" '
            f'text-anchor="end"><title>{html_text(lane.name)}</title>'
            f"{html_text(short(lane.label, 34))}</text>"
        )
        rows.append(
            f'<rect class="lane" data-lane="{lane_index}" x="0" y="{y}" width="{PLOT}" '
            f'height="{lane.depth * ROW}" fill="none"/>'
        )
        if lane.kind == "worker":
            drawn = workers_svg.worker_bars(
                lane, group, scale, y, texts, block, row=ROW, text_min_px=TEXT_MIN_PX
            )
            rows.extend(drawn)
        else:
            rows.extend(_bars(lane, group, scale, y, texts, block))
        y += lane.depth * ROW + 2
        lane_index += 1
    rows.extend(workers_svg.wait_outlines(group, scale, tops, row=ROW))
    rows.append("</g>")
    return rows, texts, y, lane_index


def _bars(
    lane: Lane, group: LaneGroup, scale: float, y: int, texts: list[str], block: TimelineFigure
) -> Iterator[str]:
    off, titles = group.offset_ns, workers_svg.wait_titles(group)  # a wait: what it received
    for b in lane.bars:
        x, w = (off + b.start_ns) * scale, b.dur_ns * scale
        top = y + b.depth * ROW
        name = group.name_base + b.name
        link = f' data-o="{b.owner}"' if b.owner >= 0 else ""
        link += f' data-l="{b.launch_ns}"' if b.launch_ns >= 0 else ""
        title = titles.get(b.id)
        yield (
            f'<rect class="b k{b.kind}" x="{x:.2f}" y="{top}" width="{max(w, 0.2):.2f}" '
            f'height="{ROW - 1}" data-i="{b.id}" data-n="{name}" data-s="{b.start_ns}" '
            f'data-d="{b.dur_ns}"{link}'
            + ("/>" if title is None else f"><title>{html_text(title)}</title></rect>")
        )
        if w >= TEXT_MIN_PX:
            text = html_text(short(visible(block.names[name]), int(w / 7)))
            texts.append(
                f'<text data-x="{x:.2f}" data-w="{w:.2f}" x="{x + 2:.2f}" y="{top + 8}">'
                f"{text}</text>"
            )
    for band in lane.bands:
        x, w = (off + band.start_ns) * scale, (band.end_ns - band.start_ns) * scale
        yield (
            f'<rect class="band k{band.kind}" x="{x:.2f}" y="{y + band.depth * ROW}" '
            f'width="{max(w, 0.2):.2f}" height="{ROW - 1}" data-c="{band.count}" '
            f'data-n="{group.name_base + band.name}" data-s="{band.start_ns}" '
            f'data-d="{band.end_ns - band.start_ns}" data-b="{band.busy_ns}"/>'
        )


def _gaps(group: LaneGroup, scale: float, top: int, bottom: int, texts: list[str]) -> str:
    """The GPU idle gaps, shaded over the group's GPU lanes; the wide ones say why."""
    gpu = [lane for lane in group.lanes.lanes if lane.kind == "gpu"]
    if not gpu:
        return ""
    cpu_rows = sum(lane.depth * ROW + 2 for lane in group.lanes.lanes if lane.kind != "gpu")
    y = top + cpu_rows
    out = []
    for gap in group.lanes.gaps:
        x = (group.offset_ns + gap.start_ns) * scale
        w = (gap.end_ns - gap.start_ns) * scale
        cause = CAUSES.index(gap.cause) if gap.cause in CAUSES else 2
        read = _mostly_reading(gap.start_ns, gap.end_ns, group.lanes.reading)
        out.append(
            f'<rect class="gap c{cause}" x="{x:.2f}" y="{y}" width="{max(w, 0.2):.2f}" '
            f'height="{bottom - y}" data-s="{gap.start_ns}" data-d="{gap.end_ns - gap.start_ns}" '
            f'data-c="{cause}"{READ_ATTR if read else ""}/>'
        )
        if w >= TEXT_MIN_PX:
            said = CAUSES[cause] + (READ_WORDS if read else "")
            text = html_text(short(said, int(w / 7)))
            texts.append(
                f'<text data-x="{x:.2f}" data-w="{w:.2f}" x="{x + 2:.2f}" y="{y + 8}">{text}</text>'
            )
    return "".join(out)
