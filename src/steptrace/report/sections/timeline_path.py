"""The critical path as strips under the timeline's lanes: the pieces to draw, and the bar
each one lies in.

``path_strips(path, step, names)`` gives, for one view of the timeline (``step``: its
lanes), one ``PathStrip`` per step of ``analysis.critical_path`` that starts in the view:
its segments in ns from the view's start, cut at the view's end (what lies after it is
counted in ``hidden_ns``). Consecutive segments narrower than the view's span / ``DETAIL``
(about a pixel of the figure at full view) are merged, a piece at a time, into pieces at
least that wide that count them, as the lanes merge their short events into bands (merged
pieces of one kind that follow each other as one); a narrow segment between wide ones
stays itself. That resolution doubles until the strip fits its share of ``BUDGET``. A
piece of one segment on a CPU thread or a GPU stream names the innermost bar of that lane
whose time holds it: its event, or the drawn operator or label it ran under. Nothing is
computed here but that layout.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from steptrace.analysis.critical.path import CriticalPath, Segment, StepPath
from steptrace.analysis.critical.slices import KIND_NAMES
from steptrace.analysis.timeline.model import NAME_CHARS, Lane, StepLanes
from steptrace.report.document import PathPiece, PathStrip

DETAIL = 1000  # a view's span / DETAIL (about a pixel at full view): narrower ones merge
BUDGET = 6_000  # pieces of all strips together (the lanes' is 24,000 items)
STRIP_MIN = 200  # at least this many for one strip, however many strips there are
SLACK_NS = 1  # rounding between the path's times and the lanes'
IDLE = KIND_NAMES.index("idle")
Drawn = tuple[Segment, int, int]  # a segment, its start and end in ns from the view's start


class PathNames:
    """The names the strips use, interned once per figure."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def of(self, name: str | None) -> int:
        if name is None:
            return -1
        return self.index.setdefault(name[:NAME_CHARS], len(self.index))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.index)


def path_strips(
    path: CriticalPath,
    step: StepLanes,
    names: PathNames,
    bar_names: Sequence[str],
    share: int = 2 * DETAIL,
) -> tuple[PathStrip, ...]:
    """The strips of the steps whose path starts in the view of ``step``'s lanes (its
    bars' names are ``bar_names``, the timeline's), each of at most ``share`` pieces."""
    lo = round(step.start_us * 1000)
    bars = _Bars(step, bar_names)
    return tuple(_strip(p, lo, step.wall_ns, bars, names, share) for p in in_view(path, step))


def share(path: CriticalPath, steps: Sequence[StepLanes]) -> int:
    """How many pieces each strip of the views of ``steps`` may have."""
    strips = sum(len(in_view(path, s)) for s in steps)
    return min(2 * DETAIL, max(STRIP_MIN, BUDGET // max(strips, 1)))


def in_view(path: CriticalPath, step: StepLanes) -> list[StepPath]:
    """The steps' paths that start in the window of ``step``'s lanes."""
    lo = round(step.start_us * 1000)
    return [p for p in path.steps if lo - SLACK_NS <= round(p.start_us * 1000) < lo + step.wall_ns]


def _strip(
    path: StepPath, lo: int, span: int, bars: _Bars, names: PathNames, share: int
) -> PathStrip:
    """The path cut to ``[0, span)``; its resolution doubles from ``span / DETAIL`` until
    its pieces fit in ``share``."""
    drawn: list[Drawn] = []
    hidden = 0
    for segment in path.segments:
        start, end = round(segment.start_us * 1000) - lo, round(segment.end_us * 1000) - lo
        hidden += max(0, end - max(start, span))
        if min(end, span) > max(start, 0):
            drawn.append((segment, max(start, 0), min(end, span)))
    resolution = max(1, span // DETAIL)
    while len(runs := _runs(drawn, resolution)) > share and resolution < span:
        resolution *= 2
    length = round(path.end_us * 1000) - round(path.start_us * 1000)
    pieces = tuple(_piece(run, bars, names) for run in runs)
    return PathStrip(path.step, length, hidden, resolution, pieces)


def _runs(drawn: list[Drawn], resolution: int) -> list[list[Drawn]]:
    """The segments as pieces: each at least ``resolution`` long alone; shorter neighbours
    together until they are that long (a short one between long ones alone); and short
    ones of a single kind, one after the other, as one piece (they draw as one)."""
    runs: list[list[Drawn]] = []
    kinds: list[str | None] = []  # per run of short ones: its one kind; None: mixed or long

    def close(run: list[Drawn]) -> None:
        short = run[0][2] - run[0][1] < resolution
        kind = (
            run[0][0].kind if short and all(s.kind == run[0][0].kind for s, _, _ in run) else None
        )
        if kind is not None and kinds and kinds[-1] == kind and runs[-1][-1][2] == run[0][1]:
            runs[-1].extend(run)
        else:
            runs.append(run)
            kinds.append(kind)

    run: list[Drawn] = []
    for segment in drawn:
        wide = segment[2] - segment[1] >= resolution
        if run and (wide or segment[1] > run[-1][2]):
            close(run)
            run = []
        run.append(segment)
        if wide or run[-1][2] - run[0][1] >= resolution:
            close(run)
            run = []
    if run:
        close(run)
    return runs


def _piece(run: list[Drawn], bars: _Bars, names: PathNames) -> PathPiece:
    """One segment as itself; several as one piece of the kind with the most time."""
    if len(run) == 1:
        segment, start, end = run[0]
        kind = KIND_NAMES.index(segment.kind)
        bar = -1 if kind == IDLE else bars.holding(segment, start, end)
        return PathPiece(kind, start, end, names.of(segment.name), bar=bar)
    by_kind = [0] * len(KIND_NAMES)
    for segment, start, end in run:
        by_kind[KIND_NAMES.index(segment.kind)] += end - start
    kind = max(range(len(by_kind)), key=lambda k: by_kind[k])
    named = [(end - start, s.name) for s, start, end in run if s.name is not None]
    name = names.of(max(named, key=lambda n: n[0])[1]) if named else -1
    return PathPiece(kind, run[0][1], run[-1][2], name, len(run), by_kind[kind])


class _Bars:
    """The step's bars per lane and depth, by start: which one holds a segment."""

    def __init__(self, step: StepLanes, names: Sequence[str]) -> None:
        self.lanes = step.lanes
        self.names = names
        self.starts: list[dict[int, list[int]]] = []
        self.bars: list[dict[int, list[tuple[int, int, int, int]]]] = []
        for lane in step.lanes:
            by_depth: dict[int, list[tuple[int, int, int, int]]] = {}
            for b in sorted(lane.bars, key=lambda b: b.start_ns):
                by_depth.setdefault(b.depth, []).append(
                    (b.start_ns, b.start_ns + b.dur_ns, b.id, b.name)
                )
            self.bars.append(by_depth)
            self.starts.append({d: [b[0] for b in bs] for d, bs in by_depth.items()})

    def holding(self, segment: Segment, start: int, end: int) -> int:
        """The id of the deepest bar on the segment's lane holding ``[start, end]`` (on a
        tie, one of the segment's own name); -1 when none is drawn."""
        best: tuple[int, bool, int] = (-1, False, -1)
        for k, lane in enumerate(self.lanes):
            if not _on(lane, segment):
                continue
            for depth, starts in self.starts[k].items():
                at = bisect.bisect_right(starts, start + SLACK_NS) - 1
                if at < 0:
                    continue
                _, hi, bar, name = self.bars[k][depth][at]
                if hi + SLACK_NS >= end:
                    own = self.names[name] == (segment.name or "")[:NAME_CHARS]
                    best = max(best, (depth, own, bar))
        return best[2]


def _on(lane: Lane, segment: Segment) -> bool:
    """The segment ran on this lane: its thread, or its stream."""
    if segment.thread is not None:
        return lane.kind == "cpu" and (
            lane.name == segment.thread or lane.name.startswith(f"{segment.thread} (")
        )
    return lane.kind == "gpu" and lane.stream == segment.stream
