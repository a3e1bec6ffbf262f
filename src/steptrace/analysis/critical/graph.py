"""The dependency graph of a trace, as lanes of slices: what the critical path walks.

Contract: ``critical_graph(events, launches, sync) -> Graph``, integer nanoseconds from
the trace's origin. Each CPU thread and each GPU stream is a *lane* of slices
(``slices``). A slice depends on the one before it on its lane (program order,
stream order) and on at most one *cross* dependency, the latest of:

- a kernel, copy or set on its launch call (``correlation``), at the call's end or the
  work's start, whichever came first;
- a stream that waited on an event recorded on another stream (``cuda_sync``'s "Stream
  Wait Event"): its next work, on the other stream's last work launched before the
  event's record;
- a blocking call on the GPU work that ended last inside it (``waits``): the
  call's slice is split there, its first part waits (``elastic``: it lasts as long as the
  GPU makes it) and the rest depends on the GPU.

A cross dependency *binds* when it arrived last (a tie binds a CPU slice to the GPU, a
GPU slice to its stream): the critical path follows binding dependencies backwards.
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.critical.slices import (
    GPU,
    WAIT,
    Ints,
    Slices,
    cpu_slices,
    gpu_slices,
    to_ns,
)
from steptrace.analysis.critical.waits import HostWaits, host_waits, lanes_by_stream, syncs
from steptrace.analysis.time.links import GpuLaunches
from steptrace.trace.kinds import LAUNCHES
from steptrace.trace.table import EventTable

Bools = NDArray[np.bool_]
NONE = np.iinfo(np.int64).min // 4  # no cross dependency: earlier than any time


class Graph(msgspec.Struct, frozen=True, eq=False):
    """Slices sorted by lane then start; ``lane_bounds[k]:lane_bounds[k+1]`` is lane
    ``lanes[k]`` (a thread index of the event table)."""

    lane: NDArray[np.int32]  # per slice: its lane (thread index)
    start_ns: Ints
    end_ns: Ints
    row: Ints  # the event the slice belongs to
    kind: NDArray[np.int8]  # CPU, LAUNCH, GPU or WAIT
    elastic: Bools  # a blocking call's wait: as long as what it waits for makes it
    cross_lane: NDArray[np.int32]  # the cross dependency's lane, -1 when none
    cross_ns: Ints  # when it was ready (NONE when none)
    binds: Bools  # the cross dependency arrived last
    lanes: NDArray[np.int32]  # the lanes, increasing
    lane_bounds: Ints
    gpu_lanes: frozenset[int]

    def __len__(self) -> int:
        return int(self.start_ns.size)

    def lane_range(self, lane: int) -> tuple[int, int]:
        k = int(np.searchsorted(self.lanes, lane))
        if k >= self.lanes.size or self.lanes[k] != lane:
            return 0, 0
        return int(self.lane_bounds[k]), int(self.lane_bounds[k + 1])

    def at(self, lane: int, t: int) -> int:
        """The last slice of ``lane`` starting before ``t``, or -1."""
        lo, hi = self.lane_range(lane)
        i = lo + int(np.searchsorted(self.start_ns[lo:hi], t, side="left")) - 1
        return i if i >= lo else -1

    def offer(self, i: int, lane: int, ready: int) -> None:
        """Make (``lane``, ``ready``) slice ``i``'s cross dependency if it arrived later."""
        if ready > self.cross_ns[i]:
            self.cross_ns[i], self.cross_lane[i] = ready, lane


def critical_graph(events: EventTable, launches: GpuLaunches, sync: bool) -> Graph:
    """The slices and their dependencies (see module); ``sync``: the ``cuda_sync`` fields
    were loaded."""
    gpu = gpu_slices(events, launches)
    waits = host_waits(events, launches, gpu, sync)
    cpu = cpu_slices(events, waits.call, waits.at)
    graph = _assembled(cpu, gpu)
    _launch_dependencies(events, launches, graph)
    stream_waits(events, launches, graph, sync)
    _wait_dependencies(graph, waits, events.thread_id[waits.call])
    _bind(graph)
    return graph


def _assembled(cpu: Slices, gpu: Slices) -> Graph:
    lane, start, end, row, kind = (np.concatenate([c, g]) for c, g in zip(cpu, gpu, strict=True))
    order = np.lexsort((start, lane))
    lane, start, end, row, kind = (a[order] for a in (lane, start, end, row, kind))
    lanes, bounds = np.unique(lane, return_index=True)
    n = lane.size
    return Graph(
        lane.astype(np.int32),
        start,
        end,
        row,
        kind.astype(np.int8),
        np.zeros(n, dtype=bool),
        np.full(n, -1, dtype=np.int32),
        np.full(n, NONE, dtype=np.int64),
        np.zeros(n, dtype=bool),
        lanes.astype(np.int32),
        np.append(bounds, n).astype(np.int64),
        frozenset(int(x) for x in np.unique(gpu.lane)),
    )


def _launch_dependencies(events: EventTable, launches: GpuLaunches, graph: Graph) -> None:
    """GPU work waits for its launch call (its end, or the work's start if earlier)."""
    is_gpu = graph.kind == GPU
    slices = np.flatnonzero(is_gpu)
    launch = np.full(len(events), -1, dtype=np.int64)
    launch[launches.rows] = launches.launch
    call = launch[graph.row[slices]]
    known = call >= 0
    slices, call = slices[known], call[known]
    graph.cross_ns[slices] = np.minimum(to_ns(events.end_us[call]), graph.start_ns[slices])
    graph.cross_lane[slices] = events.thread_id[call]


def _wait_dependencies(graph: Graph, waits: HostWaits, threads: NDArray[np.int32]) -> None:
    """The slice of a blocking call's thread that starts when the GPU work it waited for
    ended depends on that work; a synchronization's slices before it are elastic (they
    last until the work ends; a pageable copy's call works until its copy starts)."""
    elastic = np.zeros(int(graph.row.max()) + 1 if len(graph) else 0, dtype=bool)
    for call, t, lane, thread, only_waits in zip(
        waits.call.tolist(),
        waits.at.tolist(),
        waits.lane.tolist(),
        threads.tolist(),
        waits.synchronizes.tolist(),
        strict=True,
    ):
        i = graph.at(thread, t + 1)
        if i >= 0 and graph.start_ns[i] == t:
            graph.offer(i, lane, t)
            elastic[call] = only_waits
    if waits.call.size:
        mine = np.flatnonzero((graph.kind == WAIT) & elastic[graph.row])
        ends_before = graph.end_ns[mine] <= _arrival(waits, graph.row[mine])
        graph.elastic[mine[ends_before]] = True


def _arrival(waits: HostWaits, rows: Ints) -> Ints:
    """Per row of a blocking call: when the work it waited for ended."""
    order = np.argsort(waits.call)
    at = np.searchsorted(waits.call[order], rows)
    found: Ints = waits.at[order][np.minimum(at, order.size - 1)]
    return found


def hand_offs(graph: Graph, main_lane: int) -> None:
    """A CPU thread's work after it was idle (or its first) that waited for nothing else
    was handed to it by ``main_lane``'s thread (the step's) at that time: the autograd
    engine, a helper thread."""
    if main_lane < 0:
        return
    first = np.zeros(len(graph), dtype=bool)
    first[graph.lane_bounds[:-1]] = True
    after_gap = first.copy()
    after_gap[1:] |= graph.start_ns[1:] > graph.end_ns[:-1]
    gpu = np.isin(graph.lane, np.array(sorted(graph.gpu_lanes), dtype=np.int32))
    handed = np.flatnonzero(after_gap & ~gpu & (graph.lane != main_lane) & (graph.cross_lane < 0))
    graph.cross_lane[handed] = main_lane
    graph.cross_ns[handed] = graph.start_ns[handed]
    _bind(graph)


def _bind(graph: Graph) -> None:
    """Which cross dependencies arrived last (ties: CPU slices to the GPU, GPU slices to
    their stream)."""
    first = np.zeros(len(graph), dtype=bool)
    first[graph.lane_bounds[:-1]] = True
    previous_end = np.where(first, NONE, np.roll(graph.end_ns, 1))
    has = graph.cross_lane >= 0
    later = graph.cross_ns > previous_end
    tie = (graph.cross_ns == previous_end) & (graph.kind != GPU)
    graph.binds[:] = has & (later | tie)


def stream_waits(events: EventTable, launches: GpuLaunches, graph: Graph, sync: bool) -> None:
    """A stream that waited for an event recorded on another (cuda_sync's "Stream Wait
    Event"): its next work depends on the other stream's last work launched before."""
    waits = [r for r, what in syncs(events, sync) if what == "Stream Wait Event"]
    if not waits:
        return
    issued = np.full(len(events), np.iinfo(np.int64).max, dtype=np.int64)
    known = launches.launch >= 0
    issued[launches.rows[known]] = to_ns(events.start_us[launches.launch[known]])
    calls = np.flatnonzero(events.mask(*LAUNCHES))
    by_corr = dict(zip(events.correlation[calls].tolist(), calls.tolist(), strict=True))
    on_gpu = graph.kind == GPU
    lanes = lanes_by_stream(events, graph.lane[on_gpu], graph.row[on_gpu])
    record_of = events.column("wait_on_event_correlation")
    for r in waits:
        call = by_corr.get(int(events.correlation[r]))
        record = by_corr.get(int(record_of[r]), call)
        if call is None or record is None:
            continue
        after = int(to_ns(events.start_us[call : call + 1])[0])
        before = int(to_ns(events.start_us[record : record + 1])[0])
        waited = lanes.get(int(events.column("wait_on_stream")[r]), ())
        for lane in lanes.get(int(events.stream[r]), ()):
            _wait_between(graph, issued, lane, waited, after, before)


def _wait_between(
    graph: Graph, issued: Ints, lane: int, waited: tuple[int, ...], after: int, before: int
) -> None:
    """``lane``'s first work launched after ``after`` waits for each ``waited`` lane's last
    work launched before ``before``."""
    lo, hi = graph.lane_range(lane)
    following = np.flatnonzero(issued[graph.row[lo:hi]] > after)
    if not following.size:
        return
    i = lo + int(following[0])
    for w in waited:
        w_lo, w_hi = graph.lane_range(w)
        earlier = np.flatnonzero(issued[graph.row[w_lo:w_hi]] < before)
        if earlier.size:
            source = w_lo + int(earlier[-1])
            graph.offer(i, w, min(int(graph.end_ns[source]), int(graph.start_ns[i])))
