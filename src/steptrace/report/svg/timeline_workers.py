"""The DataLoader workers' lanes on the timeline: their bars coloured by batch, and the
main thread's waits outlined in the colour of the batch each received.

Presentation only. A batch's hue is its number k in the iterator modulo the palette
(``BATCH_COLORS``: no blue, the colour of the labels a wait is drawn in): its samples in
the pale shade, its collate in the strong one; a wait's bar gets an outline of the strong
shade, titled "waits for batch k from worker w". The batch's bars name the wait's bar as
their owner (``data-o``): clicking the wait selects them, clicking one of them the wait.
Every text from the files is escaped.
"""

from __future__ import annotations

from collections.abc import Iterator

from steptrace.analysis.timeline.model import COLLATE, Lane
from steptrace.report.document import LaneGroup, TimelineFigure
from steptrace.safe_text import html_text, visible
from steptrace.units import short

BATCH_COLORS = (  # (samples, collate): Tableau's pairs but the blue
    ("#ffbe7d", "#f28e2b"),
    ("#8cd17d", "#59a14f"),
    ("#ff9d9a", "#e15759"),
    ("#d4a6c8", "#b07aa1"),
    ("#86bcb6", "#499894"),
    ("#f1ce63", "#b6992d"),
    ("#d7b5a6", "#9d7660"),
)
UNKNOWN = ("#d5d5d5", "#9a9a9a")  # a batch not joined to its number
BANDS = "#bab0ac"  # merged spans, of any batch


def batch_colors(k: int) -> tuple[str, str]:
    """The (samples, collate) shades of batch ``k``."""
    return BATCH_COLORS[k % len(BATCH_COLORS)] if k >= 0 else UNKNOWN


def worker_bars(
    lane: Lane,
    group: LaneGroup,
    scale: float,
    y: int,
    texts: list[str],
    block: TimelineFigure,
    *,
    row: int,
    text_min_px: float,
) -> Iterator[str]:
    """A worker lane's bars (coloured by batch) and bands, as ``timeline._bars`` draws."""
    off = group.offset_ns
    batches = lane.worker.batches if lane.worker else ()
    for b, k in zip(lane.bars, batches, strict=True):
        x, w = (off + b.start_ns) * scale, b.dur_ns * scale
        top = y + b.depth * row
        name = group.name_base + b.name
        fill = batch_colors(k)[1 if b.kind == COLLATE else 0]
        link = f' data-o="{b.owner}"' if b.owner >= 0 else ""
        yield (
            f'<rect class="b k{b.kind}" fill="{fill}" x="{x:.2f}" y="{top}" '
            f'width="{max(w, 0.2):.2f}" height="{row - 1}" data-i="{b.id}" data-n="{name}" '
            f'data-s="{b.start_ns}" data-d="{b.dur_ns}"{link}/>'
        )
        if w >= text_min_px:
            text = html_text(short(visible(block.names[name]), int(w / 7)))
            texts.append(
                f'<text data-x="{x:.2f}" data-w="{w:.2f}" x="{x + 2:.2f}" y="{top + 8}">'
                f"{text}</text>"
            )
    for band in lane.bands:
        x, w = (off + band.start_ns) * scale, (band.end_ns - band.start_ns) * scale
        yield (
            f'<rect class="band k{band.kind}" fill="{BANDS}" x="{x:.2f}" '
            f'y="{y + band.depth * row}" width="{max(w, 0.2):.2f}" height="{row - 1}" '
            f'data-c="{band.count}" data-n="{group.name_base + band.name}" '
            f'data-s="{band.start_ns}" data-d="{band.end_ns - band.start_ns}" '
            f'data-b="{band.busy_ns}"/>'
        )


def wait_titles(group: LaneGroup) -> dict[int, str]:
    """Per drawn wait's bar id, what it waited for."""
    return {
        wait.bar: f"waits for batch {wait.batch} from worker {wait.worker} (pid {wait.pid})"
        for wait in group.lanes.waits
        if wait.bar >= 0
    }


def wait_outlines(group: LaneGroup, scale: float, tops: list[int], *, row: int) -> list[str]:
    """Each wait's bar outlined in its batch's strong shade (``tops``: each lane's y)."""
    waits = {wait.bar: wait for wait in group.lanes.waits if wait.bar >= 0}
    said_of = wait_titles(group)
    out = []
    for lane, top in zip(group.lanes.lanes, tops, strict=True):
        for b in lane.bars if lane.kind == "cpu" and waits else ():
            if (wait := waits.get(b.id)) is None:
                continue
            x, w = (group.offset_ns + b.start_ns) * scale, b.dur_ns * scale
            said = said_of[b.id]
            out.append(
                f'<rect class="wait" x="{x:.2f}" y="{top + b.depth * row - 1}" '
                f'width="{max(w, 0.2):.2f}" height="{row + 1}" fill="none" '
                f'stroke="{batch_colors(wait.batch)[1]}" stroke-width="2.5" '
                f'vector-effect="non-scaling-stroke"><title>{html_text(said)}</title></rect>'
            )
    return out


def has_workers(block: TimelineFigure) -> bool:
    return any(
        lane.kind == "worker" for v in block.views for g in v.groups for lane in g.lanes.lanes
    )


def legend(block: TimelineFigure) -> list[str]:
    """The keys of the worker lanes, when the figure has some."""
    if not has_workers(block):
        return []
    pale, strong = BATCH_COLORS[0]
    return [
        f'<span class="key" style="background:{pale}"></span>'
        f'<span class="key" style="background:{BATCH_COLORS[1][0]};margin-left:0"></span>'
        "DataLoader samples (a hue per batch)",
        f'<span class="key" style="background:{strong}"></span>collate (its batch, darker)',
        f'<span class="key" style="background:#fff;outline:2px solid {strong};'
        "outline-offset:-2px\"></span>the main thread's wait, in the hue of its batch",
    ]
