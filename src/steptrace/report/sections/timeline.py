"""The timeline as a section: one trace's steps (or a job's step across ranks) on one axis.

``timeline_section(report, lanes)`` draws every step's lanes (``analysis.lanes``, computed
from the trace for the HTML report), the median step first, and marks each finding's
``evidence.where`` on it, and, when the report holds the critical path, draws each step's
path as a strip under its lanes (``timeline_path``); ``finding_jumps(report, lanes)`` is
the block of links from the findings to those marks. ``ranks_timeline_section(report)``
draws one step across the ranks, one lane group per rank, shifted by the clock alignment
when the clocks are trusted and aligned at the step's start otherwise (its caption says
which). HTML draws the figure; the other formats show the section's paragraph only.
"""

from __future__ import annotations

import msgspec

from steptrace.across.ranks.figures import RankLanes
from steptrace.analysis.critical.path import CriticalPath
from steptrace.analysis.critical.slices import KIND_NAMES
from steptrace.analysis.timeline.model import Lanes, StepLanes
from steptrace.hypotheses.finding import Finding
from steptrace.report.document import (
    Jump,
    Jumps,
    LaneGroup,
    Mark,
    Paragraph,
    Section,
    TimelineFigure,
    TimelineView,
)
from steptrace.report.model import RanksReport, Report
from steptrace.report.sections.timeline_path import PathNames, path_strips, share

KEY = "steps-timeline"
HEADING = "Timeline of the steps"
CAPTION = (
    "Times from the step's start. CPU lanes: your labels and the top operators under them, "
    "nested by depth; GPU lanes: one per stream. Events shorter than the step's resolution "
    "are merged into hatched bands that count them. Shaded: GPU idle, labelled with its "
    "cause. The menu's last choice draws consecutive steps at once, a dashed line where "
    "each begins: work spilling over a step's end and launches across steps show there. "
    "Below the lanes, each stream's launch queue: its activities launched and not yet "
    "started (deep while the GPU is busy: the CPU runs ahead, and launch-to-start delays "
    "are that wait, not slow launches). Click a bar for its launch link; wheel or the "
    "buttons to zoom, drag to pan."
)
WORKERS_CAPTION = (
    "Under the thread that waits for its batches, one lane per DataLoader worker (from the "
    "files beside the trace), clipped to the step: each sample read named by its index, "
    "then the batch's collate (darker), in a hue per batch; the main thread's DataLoader "
    "wait is outlined in the hue of the batch it received. Click a wait to select that "
    "batch's bars."
)
PATH_CAPTION = (
    "Under the lanes, the step's critical path (the chain of work that bounds it), coloured "
    "by kind; pieces too short to draw apart are merged, in the colour of their kind with the "
    "most time (paler when kinds mix). Click a piece to select the bar it ran in."
)


def timeline_section(report: Report, timeline: Lanes | None) -> Section | None:
    """The figure, or ``None`` without lanes (a format that does not draw them)."""
    if timeline is None or not timeline.steps:
        return None
    views = tuple(TimelineView(s.name, s.wall_ns, (LaneGroup("", 0, s),)) for s in timeline.steps)
    if (both := timeline.together) is not None:  # after the steps: the marks index them
        count = len(both.boundaries) + 1
        label = f"{count} steps together: {both.name}"
        views = (*views, TimelineView(label, both.wall_ns, (LaneGroup("", 0, both),)))
    major = [f for f in report.findings if not f.minor]  # the minor ones: in their list only
    marks = tuple(m for f in major if (m := _mark(f, timeline)) is not None)
    workers = any(lane.kind == "worker" for s in timeline.steps for lane in s.lanes)
    figure = TimelineFigure(
        kinds=timeline.kinds,
        names=timeline.names,
        views=views,
        shown=timeline.shown,
        marks=marks,
        caption=f"{CAPTION} {WORKERS_CAPTION}" if workers else CAPTION,
    )
    if (path := report.analysis.critical_path) is not None:
        figure = _with_paths(figure, path)
    return Section(KEY, HEADING, (Paragraph(stand_in(timeline.steps[timeline.shown])), figure))


def _with_paths(figure: TimelineFigure, path: CriticalPath) -> TimelineFigure:
    """The figure with each view's steps' critical paths as strips under its lanes."""
    names, steps = PathNames(), [v.groups[0].lanes for v in figure.views]
    most = share(path, steps)
    views = tuple(
        msgspec.structs.replace(v, paths=path_strips(path, s, names, figure.names, most))
        for v, s in zip(figure.views, steps, strict=True)
    )
    return msgspec.structs.replace(
        figure,
        views=views,
        path_kinds=KIND_NAMES,
        path_names=names.names,
        caption=f"{figure.caption} {PATH_CAPTION}",
    )


def stand_in(step: StepLanes) -> str:
    """The figure in one line, for the formats that cannot draw it."""
    events = sum(lane.events for lane in step.lanes)
    cpu = sum(1 for lane in step.lanes if lane.kind == "cpu")
    gpu = sum(1 for lane in step.lanes if lane.kind == "gpu")
    workers = len(step.lanes) - cpu - gpu
    lanes = f"{cpu} CPU and {gpu} GPU lanes" + (
        f" and {workers} DataLoader worker lanes" if workers else ""
    )
    return (
        f"{step.name} (the median step) in {lanes}, {events} events: "
        "drawn in the HTML report, with every step, zoom and the findings' places."
    )


def _mark(found: Finding, timeline: Lanes) -> Mark | None:
    """The finding's place: its step (the median one when listed, else the first listed),
    narrowed to the bars of the names its evidence lists when that step has some."""
    where = found.evidence.where
    listed = [k for k, step in enumerate(timeline.steps) if step.name in where.steps]
    if not listed:
        return None
    k = timeline.shown if timeline.shown in listed else listed[0]
    step = timeline.steps[k]
    start = max(round((where.time_us[0] - step.start_us) * 1000), 0)
    end = min(max(round((where.time_us[1] - step.start_us) * 1000), 0), step.wall_ns)
    streams = where.streams or ()
    lanes = tuple(
        i
        for i, lane in enumerate(step.lanes)
        if lane.name == where.thread or (lane.kind == "gpu" and lane.stream in streams)
    )
    names = _named(found, timeline)
    bars = [b for lane in step.lanes for b in lane.bars if b.name in names]
    if bars:
        start = min(b.start_ns for b in bars)
        end = max(b.start_ns + b.dur_ns for b in bars)
    return Mark(
        label=found.rule,
        view=k,
        start_ns=start,
        end_ns=end,
        thread=where.thread,
        streams=streams,
        lanes=lanes,
        names=tuple(sorted(names)),
    )


def _named(found: Finding, timeline: Lanes) -> set[int]:
    """The timeline's name indices of the names listed in the finding's evidence."""
    listed = {
        str(v)
        for f in found.evidence.figures
        if f.unit == "names" and isinstance(f.value, tuple)
        for v in f.value
    }
    return {i for i, name in enumerate(timeline.names) if name in listed}


def finding_jumps(report: Report, timeline: Lanes | None) -> Jumps | None:
    """One link per finding that has a place on the timeline, in the findings' order."""
    if timeline is None or not timeline.steps:
        return None
    items: list[Jump] = []
    for found in report.findings:
        mark = None if found.minor else _mark(found, timeline)
        if mark is None:
            continue
        text = f"{found.rule}: show it in {timeline.steps[mark.view].name} on the timeline"
        items.append(Jump(text, len(items)))
    return Jumps(KEY, tuple(items)) if items else None


def ranks_timeline_section(report: RanksReport, carried: tuple[RankLanes, ...]) -> Section | None:
    """The job's steps across ranks, one lane group per rank (the ranks ``carried``)."""
    if not carried:
        return None
    aligned = report.clocks.trusted and report.clocks.offsets_applied
    by_rank = {r.rank: r for r in report.ranks}
    numbers = sorted({s.number for t in carried for s in t.lanes.steps}, key=_order)
    bases, names = _names(carried)
    views: list[TimelineView] = []
    for number in numbers:
        groups = []
        for t in carried:
            step = next((s for s in t.lanes.steps if s.number == number), None)
            row = next((s for s in by_rank[t.rank].steps if s.number == number), None)
            if step is not None:
                start = row.start_us if row is not None and aligned else 0.0
                groups.append((t.rank, start, step))
        if not groups:
            continue
        first = min(start for _, start, _ in groups)
        lanes = tuple(
            LaneGroup(f"rank {rank}", round((start - first) * 1000), step, bases[rank])
            for rank, start, step in groups
        )
        span = max(g.offset_ns + g.lanes.wall_ns for g in lanes)
        views.append(TimelineView(groups[0][2].name, span, lanes))
    if not views:
        return None
    first_names = carried[0].lanes
    shown = min(first_names.shown, len(views) - 1)
    major = [f for f in report.findings if not f.minor]
    marks = tuple(_rank_mark(f, shown, views[shown], names) for f in major)
    figure = TimelineFigure(
        kinds=first_names.kinds,
        names=names,
        views=tuple(views),
        shown=shown,
        marks=marks,
        caption=_ranks_caption(report, aligned),
    )
    across = f"{len(carried)} of {len(report.ranks)} ranks"
    drawn_steps = max(len(t.lanes.steps) for t in carried)
    steps = max(len(r.steps) for r in report.ranks)
    if drawn_steps < steps:
        across += f" (its first {drawn_steps} of {steps} steps to choose from)"
    text = f"The step across {across}, one lane group per rank: drawn in the HTML report. " + (
        "Aligned on the estimated clock offsets." if aligned else _UNALIGNED
    )
    return Section(KEY, "Timeline of a step across ranks", (Paragraph(text), figure))


def _rank_mark(found: Finding, k: int, view: TimelineView, names: tuple[str, ...]) -> Mark:
    """A job's finding on the shown step: the lanes of the rank it names, narrowed to the
    bars of the phase it names there; the whole step otherwise."""
    values = found.evidence.values()
    rank, phase = values.get("rank"), values.get("phase")
    lanes: list[int] = []
    named: set[int] = set()
    start, end = 0, view.span_ns
    at = 0
    for group in view.groups:
        count = len(group.lanes.lanes)
        if group.label == f"rank {rank}":
            lanes = list(range(at, at + count))
            base = group.name_base
            named = {
                base + b.name
                for lane in group.lanes.lanes
                for b in lane.bars
                if names[base + b.name] == phase
            }
            bars = [b for lane in group.lanes.lanes for b in lane.bars if base + b.name in named]
            if bars:
                start = group.offset_ns + min(b.start_ns for b in bars)
                end = group.offset_ns + max(b.start_ns + b.dur_ns for b in bars)
        at += count
    return Mark(
        label=found.rule,
        view=k,
        start_ns=start,
        end_ns=end,
        thread=None,
        streams=(),
        lanes=tuple(lanes),
        names=tuple(sorted(named)),
    )


def ranks_jumps(report: RanksReport, section: Section | None) -> Jumps | None:
    """One link per finding of the job, to its mark on the ranks' figure."""
    major = [f for f in report.findings if not f.minor]
    if section is None or not major:
        return None
    items = tuple(Jump(f"{f.rule}: show it on the timeline", k) for k, f in enumerate(major))
    return Jumps(KEY, items)


_UNALIGNED = "Clocks not trusted: every rank's step is drawn from its own start."


def _order(number: int | None) -> int:
    return -1 if number is None else number


def _names(carried: tuple[RankLanes, ...]) -> tuple[dict[int, int], tuple[str, ...]]:
    """The ranks' name tables one after the other, and where each rank's begins."""
    bases: dict[int, int] = {}
    names: list[str] = []
    for t in carried:
        bases[t.rank] = len(names)
        names.extend(t.lanes.names)
    return bases, tuple(names)


def _ranks_caption(report: RanksReport, aligned: bool) -> str:
    how = (
        "on the reference rank's clock (offsets estimated from collective ends)"
        if aligned
        else "from each rank's own step start: the clocks are not trusted, so no "
        "cross-rank order is drawn"
    )
    return f"Each rank's lanes {how}. " + CAPTION
