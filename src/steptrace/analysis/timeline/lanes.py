"""The steps on the timeline: one lane per CPU thread and per GPU stream, bounded in size.

Contract: ``step_lanes(context) -> Lanes``, pure (``FIGURE``: on demand, for the HTML
report). For every step (``steps.find_steps``)
the events that *start* inside its window ``[start, end)`` are laid out in lanes, with
times in integer nanoseconds from the step's start:

- a CPU lane per thread holding step work: the user's labels (``record_function``) and
  the top operators (operators inside no other operator), nested by depth;
- a GPU lane per (device, stream): kernels, copies by direction, memsets, communication;
  each GPU bar names the CPU bar of the top operator that launched it and when its launch
  call started (``correlation``), when known;
- the GPU's idle gaps inside the window (the union of all GPU work, every device), each
  with its cause (``gaps``), and the spans in which the batch is read (the labels
  read as ``data_read``: ``analysis.time.parts``), so that a gap can say it fell in one;
- per GPU lane, its launch queue: how many activities were launched on the stream and not
  yet started, over the step (``gpu``, ``queue``; those launched in an earlier step count).

``Lanes.together`` lays out the median step with the steps on either side of it as one
window (``TOGETHER`` steps at most), its ``boundaries`` where each later step starts: work
spilling over a step's end, a CPU running ahead, and the launch links across steps show
there.

Bounded: on each lane and depth, events shorter than the step's ``resolution_ns`` are
merged with their close neighbours into ``Band``s that count them; nothing is dropped:
per lane, ``len(bars) + sum(band.count for band in bands) == events``. The resolution
starts at the step's wall time / ``DETAIL`` and doubles until the step fits in its share
of ``budget`` items. Names and kinds are interned once per timeline.
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.memory import usage as memory
from steptrace.analysis.memory.lane import memory_curves
from steptrace.analysis.time.links import CpuTree
from steptrace.analysis.time.parts import part_of
from steptrace.analysis.time.steps import StepWindow
from steptrace.analysis.timeline.gaps import IdleGaps, idle_gaps, sync_calls
from steptrace.analysis.timeline.gpu import gpu_kinds, gpu_lanes, queued
from steptrace.analysis.timeline.merge import merge
from steptrace.analysis.timeline.model import (
    BUDGET,
    DETAIL,
    KINDS,
    STEP_MAX,
    STEP_MIN,
    TOGETHER,
    WORKER_KINDS,
    BatchWait,
    Drawing,
    Lane,
    Lanes,
    Names,
    Rows,
    StepLanes,
    ns,
)
from steptrace.analysis.timeline.workers import waiting_thread, worker_lanes, worker_spans
from steptrace.trace import intervals as iv
from steptrace.trace.arrays import distinct, in_order
from steptrace.trace.kinds import Kind
from steptrace.trace.nesting import parents
from steptrace.trace.table import EventTable, Trace


def step_lanes(
    context: TraceContext,
    *,
    budget: int = BUDGET,
    max_depth: int | None = None,
    max_steps: int | None = None,
    step_min: int = STEP_MIN,
    together: bool = True,
) -> Lanes:
    """The timeline of the steps (the first ``max_steps`` when given); ``max_depth`` keeps
    only CPU bars that shallow; each step gets at least ``step_min`` items of ``budget``;
    ``together``: also the consecutive steps around the median one as one window."""
    trace, events = context.trace, context.events
    windows = context.windows[:max_steps]
    tree, links, observed = context.tree, context.links, context.gpu_busy
    cpu_rows = _cpu_rows(events, tree)
    depth = _depths(events, cpu_rows)
    if max_depth is not None:
        keep = depth < max_depth
        cpu_rows, depth = cpu_rows[keep], depth[keep]
    names = Names(events, np.concatenate((cpu_rows, links.rows)))
    share = min(STEP_MAX, max(step_min, budget // max(len(windows), 1)))
    syncs = sync_calls(events)
    kinds = gpu_kinds(events, links.rows)
    streams = np.stack((events.device[links.rows], events.stream[links.rows]), axis=1)
    lane = np.unique(streams, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int32)
    gpu_depth = _depths(events, links.rows, lane)
    base_ns = trace.info.base_time_ns
    loader = worker_spans(context.loader, events, windows, base_ns, len(names.names))
    work, worker_names = loader if loader else (None, ())
    drawing = Drawing(events, tree, links, cpu_rows, depth, names, trace, kinds, gpu_depth, work)
    curves = memory_curves(context.trace.instants, windows, _peak_labels(context))
    read = _read_spans(events)
    steps = tuple(
        msgspec.structs.replace(
            _step(drawing, w, share, idle_gaps(observed, syncs, w) if observed else None),
            memory=curve,
            reading=_inside(read, w),
        )
        for w, curve in zip(windows, curves, strict=True)
    )
    walls = sorted(range(len(windows)), key=lambda k: windows[k].end_us - windows[k].start_us)
    shown = walls[(len(walls) - 1) // 2] if walls else 0
    both = None
    if together and (around := _around(windows, shown)) is not None:
        gaps = idle_gaps(observed, syncs, around[0]) if observed else None
        (curve,) = memory_curves(context.trace.instants, (around[0],), {})
        both = msgspec.structs.replace(
            _step(drawing, around[0], share, gaps),
            memory=curve,
            boundaries=around[1],
            reading=_inside(read, around[0]),
        )
    return Lanes(
        kinds=KINDS + WORKER_KINDS if work else KINDS,
        names=names.names + worker_names,
        steps=steps,
        shown=shown,
        gpu_observed=observed is not None,
        together=both,
    )


def _read_spans(events: EventTable) -> iv.Intervals:
    """The union of the labels read as reading the batch (µs), on every thread."""
    rows = np.flatnonzero(events.kind == Kind.USER_ANNOTATION)
    read = [
        i
        for i in distinct(events.name_id[rows]).tolist()
        if part_of(events.names[i]) == "data_read"
    ]
    rows = rows[np.isin(events.name_id[rows], read)]
    return iv.union(events.start_us[rows], events.end_us[rows])


def _inside(spans: iv.Intervals, w: StepWindow) -> tuple[tuple[int, int], ...]:
    """The spans inside the window, in ns from its start."""
    starts, ends = iv.clip(spans, w.start_us, w.end_us)
    lo_ns = round(w.start_us * 1000)
    return tuple(zip(ns(starts, lo_ns).tolist(), ns(ends, lo_ns).tolist(), strict=True))


def _around(
    windows: tuple[StepWindow, ...], shown: int
) -> tuple[StepWindow, tuple[tuple[int, str], ...]] | None:
    """The window of ``TOGETHER`` consecutive steps around the shown one, and where each
    step after the first starts in it (ns); None with fewer than two steps."""
    if len(windows) < 2:
        return None
    first = min(max(shown - TOGETHER // 2, 0), max(len(windows) - TOGETHER, 0))
    chosen = windows[first : first + TOGETHER]
    lo, hi = chosen[0], chosen[-1]
    end = max(w.end_us for w in chosen)
    window = StepWindow(f"{lo.name} to {hi.name}", None, lo.thread, lo.start_us, end)
    starts = tuple((round((w.start_us - lo.start_us) * 1000), w.name) for w in chosen[1:])
    return window, starts


def _peak_labels(context: TraceContext) -> dict[str, dict[str, str | None]]:
    """Per device and step: the label around the memory peak (``analysis.memory``)."""
    found = context.figure(memory.FIGURE)
    if found is None:
        return {}
    return {d.device: {s.step: s.peak_label for s in d.steps} for d in found.devices}


def _cpu_rows(events: EventTable, tree: CpuTree) -> Rows:
    """Labels (step markers included) and top operators, in table order."""
    labels = np.flatnonzero(events.kind == Kind.USER_ANNOTATION)
    top_ops = tree.ops[tree.op_parent < 0]
    return in_order(np.concatenate((labels, top_ops)))


def _depths(events: EventTable, rows: Rows, lane: NDArray[np.int32] | None = None) -> Rows:
    """Each row's nesting depth among ``rows`` on its lane (default: its thread)."""
    lane = events.thread_id[rows] if lane is None else lane
    parent = parents(events.start_us[rows], events.end_us[rows], lane)
    depth = np.zeros(rows.size, dtype=np.int64)
    up = parent.copy()
    while (alive := up >= 0).any():
        depth[alive] += 1
        up[alive] = parent[up[alive]]
    return depth


def _step(c: Drawing, w: StepWindow, share: int, gaps: IdleGaps | None) -> StepLanes:
    events = c.events
    lo_ns = round(w.start_us * 1000)
    wall_ns = round(w.end_us * 1000) - lo_ns
    starts = events.start_us[c.cpu_rows]
    cpu = c.cpu_rows[(starts >= w.start_us) & (starts < w.end_us)]
    cpu_depth = c.depth[np.searchsorted(c.cpu_rows, cpu)]
    gpu_at = np.flatnonzero(
        (events.start_us[c.links.rows] >= w.start_us) & (events.start_us[c.links.rows] < w.end_us)
    )
    length = gaps.end_ns - gaps.start_ns if gaps else np.zeros(0, dtype=np.int64)
    resolution = max(1, wall_ns // DETAIL)
    while True:
        lanes, waits = _lanes(c, w, lo_ns, cpu, cpu_depth, gpu_at, resolution)
        shown = length >= resolution
        items = sum(len(lane.bars) + len(lane.bands) for lane in lanes) + int(shown.sum())
        if items <= share or resolution >= wall_ns:
            break
        resolution *= 2
    lanes = queued(c, w, lanes)
    return StepLanes(
        name=w.name,
        number=w.number,
        start_us=w.start_us,
        wall_ns=wall_ns,
        resolution_ns=resolution,
        lanes=lanes,
        gaps=gaps.drawn(shown) if gaps else (),
        small_gaps=int((~shown).sum()),
        small_gaps_ns=int(length[~shown].sum()),
        waits=waits,
    )


def _lanes(
    c: Drawing,
    w: StepWindow,
    lo_ns: int,
    cpu: Rows,
    cpu_depth: Rows,
    gpu_at: Rows,
    resolution: int,
) -> tuple[tuple[Lane, ...], tuple[BatchWait, ...]]:
    events = c.events
    lanes: list[Lane] = []
    drawn: dict[int, int] = {}  # CPU event row -> its bar's id in the step
    next_id = 0
    threads = distinct(events.thread_id[cpu]).tolist()
    for thread in threads:
        on = events.thread_id[cpu] == thread
        rows, depth = cpu[on], cpu_depth[on]
        kind = np.where(events.kind[rows] == Kind.USER_ANNOTATION, 0, 1)
        bars, bands, kept = merge(
            ns(events.start_us[rows], lo_ns),
            np.rint(events.dur_us[rows] * 1000).astype(np.int64),
            depth,
            kind,
            c.names.of(events.name_id[rows]),
            resolution,
            first_id=next_id,
        )
        for bar, row in zip(bars, rows[kept].tolist(), strict=True):
            drawn[row] = bar.id
        next_id += len(bars)
        lanes.append(
            Lane(
                name=_thread_label(c.trace, thread),
                label=_thread_short(c.trace, thread),
                kind="cpu",
                stream=None,
                device=None,
                depth=int(depth.max()) + 1,
                events=int(rows.size),
                bars=bars,
                bands=bands,
            )
        )
    waits: tuple[BatchWait, ...] = ()
    if c.work is not None:
        workers, waits = worker_lanes(c.work, events, w, resolution, drawn, next_id)
        next_id += sum(len(lane.bars) for lane in workers)
        main = waiting_thread(c.work, events, w)
        at = threads.index(main) + 1 if main in threads else len(lanes)
        lanes[at:at] = workers  # under the thread that waits for the batches
    lanes.extend(gpu_lanes(c, lo_ns, gpu_at, resolution, drawn, next_id))
    return tuple(lanes), waits


def _thread_short(trace: Trace, thread: int) -> str:
    pid, tid = trace.events.threads[thread]
    return trace.info.thread_names.get((pid, tid)) or f"pid {pid} tid {tid}"


def _thread_label(trace: Trace, thread: int) -> str:
    """As ``StepResult.thread`` writes it, so that ``Where.thread`` names a lane."""
    pid, tid = trace.events.threads[thread]
    name = trace.info.thread_names.get((pid, tid))
    return f"pid {pid} tid {tid}" + (f" ({name})" if name else "")


FIGURE = FigureSpec(
    "lanes",
    step_lanes,
    frozenset({"steps", "gpu_busy", "tree", "links"}),
    on_demand=True,
    groups=frozenset({"instants"}),
)
