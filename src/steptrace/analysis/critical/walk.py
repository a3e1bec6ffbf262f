"""The critical path of one step: the binding dependencies followed back from its end.

Contract: ``walk(graph, breaks, start_ns, end_lane, end_ns, main_lane) -> Path``. From the
end of the last work the step launched (``end_lane`` at ``end_ns``), the path goes back
through each slice to what it waited for last (``critical_graph``) until the step's start:
runs of slices that follow each other on a lane are taken whole. Time on the path where
nothing ran is ``IDLE`` (a stream that started late, a launch's latency is ``LAUNCH``). A
thread other than the step's that was idle before its work was handed that work by the
step's thread (the autograd engine, a helper): the path goes on there at the same time.
The path's segments tile ``[start_ns, end_ns]`` in increasing time, integer ns.
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.critical.graph import Graph
from steptrace.analysis.critical.slices import GPU, IDLE, LAUNCH

Ints = NDArray[np.int64]
_MOST_TURNS = 1 << 20  # turns of the walk before it gives up (a corrupt graph)


class Path(msgspec.Struct, frozen=True, eq=False):
    """Segments in time order: kind (``critical_graph`` kinds, ``IDLE``), event row (-1
    for idle), lane, start and end in ns."""

    kind: NDArray[np.int8]
    row: Ints
    lane: NDArray[np.int32]
    start_ns: Ints
    end_ns: Ints
    slice: Ints  # the graph's slice (-1 for idle and latency)


def breaks(graph: Graph) -> Ints:
    """Slices where a run along a lane stops: a lane's first, one after a gap, one whose
    cross dependency binds."""
    first = np.zeros(len(graph), dtype=bool)
    first[graph.lane_bounds[:-1]] = True
    gap = np.zeros(len(graph), dtype=bool)
    gap[1:] = graph.start_ns[1:] > graph.end_ns[:-1]
    return np.flatnonzero(first | gap | graph.binds)


class _Trail:
    """The segments found so far, latest first."""

    def __init__(self) -> None:
        self.parts: list[tuple[Ints, ...]] = []

    def run(self, graph: Graph, j: int, i: int, lo: int, hi: int) -> None:
        idx = np.arange(i, j - 1, -1, dtype=np.int64)
        start = np.maximum(graph.start_ns[idx], lo)
        end = graph.end_ns[idx].copy()
        end[0] = hi
        self.parts.append(
            (
                graph.kind[idx].astype(np.int64),
                graph.row[idx],
                graph.lane[idx].astype(np.int64),
                start,
                end,
                idx,
            )
        )

    def one(self, kind: int, row: int, lane: int, lo: int, hi: int) -> None:
        if hi > lo:
            self.parts.append(
                tuple(np.array([v], dtype=np.int64) for v in (kind, row, lane, lo, hi, -1))
            )

    def path(self) -> Path:
        if not self.parts:
            empty = np.zeros(0, dtype=np.int64)
            return Path(empty.astype(np.int8), empty, empty.astype(np.int32), empty, empty, empty)
        cols = [np.concatenate([p[k] for p in self.parts])[::-1] for k in range(6)]
        kept = cols[4] > cols[3]
        kind, row, lane, start, end, where = (c[kept] for c in cols)
        return Path(kind.astype(np.int8), row, lane.astype(np.int32), start, end, where)


def walk(
    graph: Graph, cuts: Ints, start_ns: int, end_lane: int, end_ns: int, main_lane: int
) -> Path:
    """The step's critical path (see module)."""
    trail = _Trail()
    lane, t = end_lane, end_ns
    for _ in range(_MOST_TURNS):
        if t <= start_ns:
            break
        i = graph.at(lane, t)
        lo, _hi = graph.lane_range(lane)
        if i < 0 or graph.end_ns[i] < t:  # in a gap, or before the lane's first slice
            gap_start = int(graph.end_ns[i]) if i >= 0 else start_ns
            if lane != main_lane and lane not in graph.gpu_lanes:
                lane = main_lane  # handed over by the step's thread
                if graph.at(lane, t) < 0:
                    trail.one(IDLE, -1, lane, start_ns, t)
                    break
                continue
            trail.one(IDLE, -1, lane, max(gap_start, start_ns), t)
            t = gap_start
            continue
        j = int(cuts[np.searchsorted(cuts, i, side="right") - 1])
        first = graph.at(lane, start_ns + 1)
        if first >= 0 and graph.end_ns[first] <= start_ns:
            first += 1  # the lane was idle at the step's start
        j = max(j, first, lo)
        trail.run(graph, j, i, start_ns, t)
        t = int(graph.start_ns[j])
        if t <= start_ns:
            break
        if graph.binds[j]:
            ready = max(int(graph.cross_ns[j]), start_ns)
            source = int(graph.cross_lane[j])
            call = graph.at(source, ready) if source not in graph.gpu_lanes else -1
            if graph.kind[j] == GPU and call >= 0:  # the launch's latency
                trail.one(LAUNCH, int(graph.row[call]), source, ready, t)
            else:
                trail.one(IDLE, -1, lane, ready, t)
            lane, t = source, ready
        elif j == lo and graph.cross_lane[j] < 0:  # nothing before it: handed over
            if lane == main_lane:
                trail.one(IDLE, -1, lane, start_ns, t)
                break
            lane = main_lane
    return trail.path()
