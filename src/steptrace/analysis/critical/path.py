"""The critical path of each step: the chain of work that bounds it.

Contract: ``critical_path(context) -> CriticalPath``. Per step (the whole window when the
trace has no step markers), the dependency chain from the step's start to the end of the
last work the step launched (``critical_graph``: program order on each thread, launch ->
GPU work by ``correlation``, stream order, synchronizations from ``cuda_sync`` events or
blocking calls; ``walk`` follows what each piece waited for last), as segments
that tile it: ``cpu`` (inside a CPU event: operator, label, Python function), ``launch``
(a runtime call, or the latency between a launch and its work), ``gpu`` (a kernel, copy
or set), ``wait`` (a blocking call), ``idle`` (nothing on the path ran). So ``length_ms``
>= the step's wall time. Times are integer nanoseconds inside; ``start_us``/``end_us``
are on the steps' frame (µs from the trace's origin). ``what_if``: the path's largest
parts and the user's targets made faster (``what_if_table``).
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.critical.graph import Graph, critical_graph, hand_offs
from steptrace.analysis.critical.names import Ancestors, OnPath, ancestors, by_label, by_name
from steptrace.analysis.critical.slices import CPU, GPU, KIND_NAMES, to_ns
from steptrace.analysis.critical.walk import Path, breaks, walk
from steptrace.analysis.critical.what_if_table import WhatIf, what_if_table
from steptrace.analysis.time.steps import StepWindow
from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable

TOP = 10  # operators and kernels listed per step


class Segment(msgspec.Struct, frozen=True):
    """A piece of the path: what ran (``name``: None for idle), where, when."""

    kind: str  # cpu, launch, gpu, wait, idle
    name: str | None
    start_us: float
    end_us: float
    thread: str | None  # "pid P tid T" for a CPU thread
    stream: int | None  # for a GPU stream


class StepPath(msgspec.Struct, frozen=True):
    """One step's critical path."""

    step: str
    start_us: float
    end_us: float  # the end of the last work the step launched, or the step's end
    length_ms: float
    wall_ms: float
    by_kind_ms: dict[str, float]  # every kind, adding up to length_ms
    operators: tuple[OnPath, ...]  # by time on the path, the first TOP
    kernels: tuple[OnPath, ...]
    segments: tuple[Segment, ...]
    # every event name: the path's time inside its events (an operator or label with what
    # it called on its thread; a kernel), longest first: what findings look up
    by_name: tuple[OnPath, ...] = ()
    # the path's time by its innermost label (the user's, not the steps'), once each
    labels: tuple[OnPath, ...] = ()


class CriticalPath(msgspec.Struct, frozen=True):
    steps: tuple[StepPath, ...]
    what_if: tuple[WhatIf, ...] = ()


class Walked(msgspec.Struct, frozen=True, eq=False):
    """The graph and each step's path in ns: what the what-if and the findings read."""

    graph: Graph
    paths: tuple[Path, ...]
    starts_ns: tuple[int, ...]
    ends: tuple[tuple[int, int], ...]  # where each path ends: lane, ns


def walked(context: TraceContext) -> Walked:
    """The graph and the steps' paths (integer ns)."""
    events = context.events
    graph = critical_graph(events, context.launches, "sync_kind" in events.columns)
    main = _main_lane(graph)
    steps_thread = next((w.thread for w in context.windows if w.thread >= 0), main)
    hand_offs(graph, steps_thread)
    cuts = breaks(graph)
    ends = _step_ends(context, graph)
    paths, starts = [], []
    for window, (end_lane, end_ns) in zip(context.windows, ends, strict=True):
        start = int(to_ns(np.array([window.start_us]))[0])
        lane = window.thread if window.thread >= 0 else main
        paths.append(walk(graph, cuts, start, end_lane, end_ns, lane))
        starts.append(start)
    return Walked(graph, tuple(paths), tuple(starts), tuple(ends))


def critical_path(context: TraceContext) -> CriticalPath:
    """Each step's path (see module)."""
    found = walked(context)
    family = ancestors(context.events, context.launches)
    steps = tuple(
        _step_path(context, w, p, s, e, family)
        for w, p, s, (_, e) in zip(
            context.windows, found.paths, found.starts_ns, found.ends, strict=True
        )
    )
    ends = list(found.ends)
    return CriticalPath(
        steps, what_if_table(context, found.paths, found.starts_ns, ends, found.graph)
    )


def _main_lane(graph: Graph) -> int:
    """The CPU thread that ran longest: the one a whole window's path returns to."""
    cpu = ~np.isin(graph.lane, np.array(sorted(graph.gpu_lanes), dtype=np.int32))
    if not cpu.any():
        return -1
    busy = np.bincount(graph.lane[cpu], weights=(graph.end_ns - graph.start_ns)[cpu])
    return int(np.argmax(busy))


def _step_ends(context: TraceContext, graph: Graph) -> list[tuple[int, int]]:
    """Per step: where its path ends (lane, ns): the last GPU work it launched, when that
    ended after the step, else the step's own end on its thread."""
    events, busy = context.events, context.gpu_busy
    found = []
    for w in context.windows:
        end = int(to_ns(np.array([w.end_us]))[0])
        lane = w.thread if w.thread >= 0 else _main_lane(graph)
        if busy is not None:
            issued = (busy.issued_us >= w.start_us) & (busy.issued_us < w.end_us)
            if w.thread < 0:
                issued |= ~busy.before_trace & np.isnan(busy.issued_us)
            rows = busy.rows[issued]
            if rows.size:
                last = rows[int(np.argmax(events.end_us[rows]))]
                last_end = int(to_ns(events.end_us[last : last + 1])[0])
                if last_end > end:
                    lane, end = int(events.thread_id[last]), last_end
        found.append((lane, end))
    return found


def _step_path(
    context: TraceContext,
    window: StepWindow,
    path: Path,
    start: int,
    end: int,
    family: Ancestors,
) -> StepPath:
    events = context.events
    dur = path.end_ns - path.start_ns
    by_kind = np.bincount(path.kind, weights=dur, minlength=len(KIND_NAMES))
    return StepPath(
        step=window.name,
        start_us=start / 1000,
        end_us=end / 1000,
        length_ms=(end - start) / 1e6,
        wall_ms=window.wall_ms,
        by_kind_ms={k: float(by_kind[i]) / 1e6 for i, k in enumerate(KIND_NAMES)},
        operators=_top(events, path, CPU, Kind.CPU_OP),
        kernels=_top(events, path, GPU, Kind.KERNEL),
        segments=_segments(context, path),
        by_name=by_name(events, family, path),
        labels=by_label(events, family, path),
    )


def _top(events: EventTable, path: Path, kind: int, event_kind: Kind) -> tuple[OnPath, ...]:
    chosen = (path.kind == kind) & (path.row >= 0)
    chosen[chosen] = events.kind[path.row[chosen]] == event_kind
    names = events.name_id[path.row[chosen]]
    if not names.size:
        return ()
    totals = np.bincount(names, weights=(path.end_ns - path.start_ns)[chosen])
    order = np.argsort(-totals, kind="stable")[:TOP]
    return tuple(
        OnPath(events.names[int(n)], float(totals[n]) / 1e6) for n in order if totals[n] > 0
    )


def _segments(context: TraceContext, path: Path) -> tuple[Segment, ...]:
    events = context.events
    kind, row, lane, start, end = _merge(path)
    gpu_lanes = _gpu_lanes(context)
    on_gpu = gpu_lanes[lane]
    label = [f"pid {pid} tid {tid}" for pid, tid in events.threads]
    tids = [tid if isinstance(tid, int) else -1 for _, tid in events.threads]
    safe = np.maximum(row, 0)
    stream = np.where(row >= 0, events.stream[safe], np.array(tids, dtype=np.int64)[lane])
    names = [events.names[int(n)] for n in events.name_id[safe].tolist()]
    return tuple(
        Segment(
            KIND_NAMES[k],
            names[i] if r >= 0 else None,
            s / 1000,
            e / 1000,
            None if g else label[ln],
            st if g else None,
        )
        for i, (k, r, ln, s, e, g, st) in enumerate(
            zip(*(a.tolist() for a in (kind, row, lane, start, end, on_gpu, stream)), strict=True)
        )
    )


def _gpu_lanes(context: TraceContext) -> NDArray[np.bool_]:
    """Per thread index: it is a GPU stream (holds kernels, copies or sets)."""
    lanes = np.zeros(len(context.events.threads) + 1, dtype=bool)
    busy = context.gpu_busy
    if busy is not None:
        lanes[np.unique(context.events.thread_id[busy.rows])] = True
    return lanes


def _merge(path: Path) -> tuple[NDArray[np.int64], ...]:
    """Neighbouring segments of one event (or idle on one lane) as one."""
    kind, row, lane = path.kind.astype(np.int64), path.row, path.lane.astype(np.int64)
    if not kind.size:  # a step of no time: no segment
        return kind, row, lane, path.start_ns, path.end_ns
    same = np.zeros(kind.size, dtype=bool)
    same[1:] = (
        (kind[1:] == kind[:-1])
        & (row[1:] == row[:-1])
        & (lane[1:] == lane[:-1])
        & (path.start_ns[1:] == path.end_ns[:-1])
    )
    first = np.flatnonzero(~same)
    last = np.append(first[1:], kind.size) - 1
    return kind[first], row[first], lane[first], path.start_ns[first], path.end_ns[last]


FIGURE = FigureSpec(
    "critical_path",
    critical_path,
    frozenset({"steps", "gpu_busy"}),
    on_demand=True,  # benchmarks/critical_path_cost.py: 1.2-2.0x the analyze command
    groups=frozenset({"sync"}),
)
