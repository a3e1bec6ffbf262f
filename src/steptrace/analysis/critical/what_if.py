"""What-if on the critical path's graph: a target made faster, the step predicted.

Contract: ``predict(graph, events, step_start_ns, end_lane, end_ns, chosen, speedup) -> int``
is the step's predicted path length (ns) with the slices ``chosen`` (``target_slices``)
that start in the step ``speedup`` times shorter. The graph is replayed forward: each
slice starts when the later of its dependencies is ready (``critical_graph``), plus the
delay it had after the one that bound it (the time between operators, a launch's latency);
a dependency that did not bind adds no delay, and a blocking call's wait lasts until what
it waits for ends. Each lane is solved at once (a running maximum), lanes in turn until
nothing moves. With ``speedup`` 1 the replay gives the trace's own times; the gain can
never pass the target's time on the path times ``1 - 1/speedup`` (the path's other
slices keep their durations and delays).

``target_slices(graph, events, name)``: ``kind:cpu`` (``launch``, ``gpu``, ``wait``) every
slice of that kind; else every slice inside an event of that name on its thread or stream
(an operator or label with what it calls; a kernel).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.critical.graph import NONE, Graph
from steptrace.analysis.critical.slices import KIND_NAMES, to_ns
from steptrace.trace.table import EventTable

Ints = NDArray[np.int64]
Bools = NDArray[np.bool_]
_MOST_ROUNDS = 64  # lanes solved in turn at most this often (then: an upper bound)


def target_slices(graph: Graph, events: EventTable, name: str) -> Bools:
    """The slices a target names (see module); none when nothing matches."""
    if name.startswith("kind:"):
        kind = name.removeprefix("kind:")
        code = KIND_NAMES.index(kind) if kind in KIND_NAMES[:4] else -1
        found: Bools = graph.kind == code
        return found
    if name not in events.names:
        return np.zeros(len(graph), dtype=bool)
    rows = np.flatnonzero(events.name_id == events.names.index(name))
    marks = np.zeros(len(graph) + 1, dtype=np.int64)
    lanes = events.thread_id[rows]
    starts, ends = to_ns(events.start_us[rows]), to_ns(events.end_us[rows])
    for lane in np.unique(lanes).tolist():
        lo, hi = graph.lane_range(lane)
        mine = lanes == lane
        first = lo + np.searchsorted(graph.start_ns[lo:hi], starts[mine], side="left")
        last = lo + np.searchsorted(graph.end_ns[lo:hi], ends[mine], side="right")
        np.add.at(marks, first, 1)
        np.add.at(marks, np.maximum(first, last), -1)
    inside: Bools = np.cumsum(marks[:-1]) > 0
    return inside


def predict(
    graph: Graph,
    step_start_ns: int,
    end_lane: int,
    end_ns: int,
    chosen: Bools,
    speedup: float,
) -> int:
    """The step's predicted path length, ns (see module)."""
    window = np.flatnonzero((graph.end_ns > step_start_ns) & (graph.start_ns < end_ns))
    replay = _Replay(graph, window, step_start_ns, chosen, speedup)
    start = replay.run()
    u = graph.at(end_lane, end_ns)
    at = replay.time_at(start, np.array([u]), np.array([end_ns]))
    return int(at[0]) - step_start_ns


class _Replay:
    """The window's slices replayed forward (see module)."""

    def __init__(
        self, graph: Graph, window: Ints, step_start: int, chosen: Bools, speedup: float
    ) -> None:
        self.graph, self.window = graph, window
        self.start = graph.start_ns[window]
        self.dur = graph.end_ns[window] - self.start
        scaled = chosen[window] & (self.start >= step_start)
        new = self.dur.copy()
        new[scaled] = np.rint(self.dur[scaled] / speedup).astype(np.int64)
        new[graph.elastic[window]] = 0
        self.new_dur = new
        self.position = np.full(len(graph), -1, dtype=np.int64)
        self.position[window] = np.arange(window.size)
        lane = graph.lane[window]
        self.first = np.ones(window.size, dtype=bool)
        self.first[1:] = lane[1:] != lane[:-1]
        self._delays()

    def _delays(self) -> None:
        graph, w = self.graph, self.window
        before_end = np.where(w > 0, graph.end_ns[np.maximum(w - 1, 0)], NONE)
        same_lane = np.zeros(w.size, dtype=bool)
        same_lane[w > 0] = graph.lane[w[w > 0] - 1] == graph.lane[w[w > 0]]
        lane_bound = ~graph.binds[w]
        gap = np.where(same_lane, self.start - before_end, 0)
        self.lane_delay = np.where(lane_bound & ~self.first, gap, 0)
        # a lane's first slice in the window: what came before it does not move, and one
        # with nothing before it nor a cross dependency starts when it did
        alone = np.where(graph.cross_lane[w] < 0, self.start, NONE)
        after = before_end + np.where(lane_bound, gap, 0)
        self.fixed = np.where(self.first, np.where(same_lane, after, alone), NONE)
        has = graph.cross_lane[w] >= 0
        self.cross = np.flatnonzero(has)
        self.cross_delay = np.where(graph.binds[w], self.start - graph.cross_ns[w], 0)[self.cross]
        ready = graph.cross_ns[w][self.cross]
        self.source = _slices_at(graph, graph.cross_lane[w][self.cross], ready)
        self.source_t = ready

    def time_at(self, start: Ints, slices: Ints, t: Ints) -> Ints:
        """When the replay reaches time ``t`` of each of ``slices`` (outside the window,
        or before any slice: as in the trace)."""
        pos = self.position[np.maximum(slices, 0)]
        inside = (slices >= 0) & (pos >= 0)
        result = t.copy()
        p = pos[inside]
        offset = t[inside] - self.start[p]
        dur, new = self.dur[p], self.new_dur[p]
        run = np.minimum(offset, dur)
        ratio = np.where(dur > 0, new / np.maximum(dur, 1), 0.0)
        result[inside] = start[p] + np.rint(run * ratio).astype(np.int64) + (offset - run)
        return result

    def run(self) -> Ints:
        start = self.start.copy()
        for _ in range(_MOST_ROUNDS):
            ready = np.full(self.window.size, NONE, dtype=np.int64)
            ready[self.cross] = self.time_at(start, self.source, self.source_t) + self.cross_delay
            ready = np.maximum(ready, self.fixed)
            moved = self._lanes(ready)
            if np.array_equal(moved, start):
                break
            start = moved
        return start

    def _lanes(self, ready: Ints) -> Ints:
        """Each lane solved given its slices' cross-ready times: ``s_i = max(e_{i-1} +
        delay_i, ready_i)``, ``e_i = s_i + d_i``, as a running maximum."""
        step = self.lane_delay + self.new_dur
        total = np.cumsum(step)
        group = np.cumsum(self.first) - 1
        firsts = np.flatnonzero(self.first)
        base = (total - step)[firsts][group]  # the sum before each lane's first slice
        c = total - base
        value = ready + self.new_dur - c
        real = ready > NONE
        floor = int(value[real].min()) - 1 if real.any() else 0
        value = np.where(real, value, floor)
        span = int(value.max()) - floor + 1
        shifted = (value - floor) + group.astype(np.int64) * span
        running = np.maximum.accumulate(shifted) - group.astype(np.int64) * span + floor
        end = c + running
        started: Ints = end - self.new_dur
        return started


def _slices_at(graph: Graph, lanes: NDArray[np.int32], t: Ints) -> Ints:
    """Per (lane, time): the lane's last slice starting before it, or -1."""
    found = np.full(t.size, -1, dtype=np.int64)
    for lane in np.unique(lanes).tolist():
        lo, hi = graph.lane_range(lane)
        mine = np.flatnonzero(lanes == lane)
        i = lo + np.searchsorted(graph.start_ns[lo:hi], t[mine], side="left") - 1
        found[mine] = np.where(i >= lo, i, -1)
    return found
