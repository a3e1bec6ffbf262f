"""The critical path as strips under the timeline's lanes: the pieces to draw, and the bar
each one lies in.

``path_strips(path, step, names)`` gives, for one view of the timeline (``step``: its
lanes), one ``PathStrip`` per step of ``analysis.critical_path`` that starts in the view:
its segments in ns from the view's start, cut at the view's end (what lies after it is
counted in ``hidden_ns``). Consecutive segments narrower than the view's span / ``DETAIL``
(about a pixel of the figure at full view) are merged, a piece at a time, into pieces at
least that wide that count them, as the lanes merge their short events into bands; a
narrow segment between wide ones stays itself. A piece of one segment on a CPU thread or
a GPU stream names the innermost bar of that lane whose time holds it: its event, or the
drawn operator or label it ran under. Nothing is computed here but that layout.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from steptrace.analysis.critical_path import CriticalPath, Segment, StepPath
from steptrace.analysis.critical_slices import KIND_NAMES
from steptrace.analysis.lanes import NAME_CHARS, Lane, StepLanes
from steptrace.report.document import PathPiece, PathStrip

DETAIL = 1000  # pieces per view at most, about: narrower segments merge
SLACK_NS = 1  # rounding between the path's times and the lanes'
IDLE = KIND_NAMES.index("idle")


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
    path: CriticalPath, step: StepLanes, names: PathNames, bar_names: Sequence[str]
) -> tuple[PathStrip, ...]:
    """The strips of the steps whose path starts in the view of ``step``'s lanes (its
    bars' names are ``bar_names``, the timeline's)."""
    lo = round(step.start_us * 1000)
    chosen = [
        p for p in path.steps if lo - SLACK_NS <= round(p.start_us * 1000) < lo + step.wall_ns
    ]
    bars = _Bars(step, bar_names)
    return tuple(_strip(p, lo, step.wall_ns, bars, names) for p in chosen)


def _strip(path: StepPath, lo: int, span: int, bars: _Bars, names: PathNames) -> PathStrip:
    resolution = max(1, span // DETAIL)
    pieces: list[PathPiece] = []
    run: list[tuple[Segment, int, int]] = []
    hidden = 0
    for segment in path.segments:
        start, end = round(segment.start_us * 1000) - lo, round(segment.end_us * 1000) - lo
        hidden += max(0, end - max(start, span))
        start, end = max(start, 0), min(end, span)
        if end <= start:
            continue
        if run and (end - start >= resolution or start > run[-1][2]):
            pieces.append(_piece(run, bars, names))
            run = []
        if end - start >= resolution:
            pieces.append(_piece([(segment, start, end)], bars, names))
            continue
        run.append((segment, start, end))
        if run[-1][2] - run[0][1] >= resolution:
            pieces.append(_piece(run, bars, names))
            run = []
    if run:
        pieces.append(_piece(run, bars, names))
    length = round(path.end_us * 1000) - round(path.start_us * 1000)
    return PathStrip(path.step, length, hidden, tuple(pieces))


def _piece(run: list[tuple[Segment, int, int]], bars: _Bars, names: PathNames) -> PathPiece:
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
