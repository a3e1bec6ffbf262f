"""One rank's trace reduced to what the cross-rank analysis needs, then its step rows.

Contract: ``rank_data(trace, location) -> RankData`` measures the trace once
(``steptrace.analysis.measure``), finds its collectives and, per step, its communication
time and the part of it not overlapped by compute, and keeps only those figures: a
compact, picklable summary (steps, labels, GPU figures, collectives with their timings;
no event table, no operator or kernel table), so that it can cross processes or a
network and the trace can be let go. ``rank_steps(data, offset_ns, origin_ns, waits)``
gives the rank's row of the rank x step matrix: wall, GPU busy and idle (``None``: not
observed), communication, exposed communication, collective wait, and each label's
exclusive ms.

Exposed communication: on a GPU, communication kernels minus the union of compute kernels
on the same device (``GpuStep.communication``: busy - overlap); on a CPU-only trace, the
collectives' own time (gloo events) minus the time the step's thread spent in operators
other than collectives: the part of it the rank could not hide behind its own work.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import msgspec
import numpy as np

from steptrace.across.ranks.collectives import Instance, collective_instances
from steptrace.across.ranks.discover import RankOrigin
from steptrace.across.ranks.model import RankStep
from steptrace.analysis.lanes import Timeline, step_lanes
from steptrace.analysis.links import cpu_tree, gpu_links
from steptrace.analysis.measure import StepResult, TraceAnalysis, measure
from steptrace.analysis.steps import StepWindow, find_steps
from steptrace.trace import intervals as iv
from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable, Trace

_COLLECTIVE_OP = re.compile(r"^(c10d::|record_param_comms$|gloo:|nccl:)")
RANK_BUDGET = 600  # bars, bands and gaps of one rank's steps together
RANK_STEPS = 8  # the first steps of each rank, drawn
RANK_STEP_MIN = 40  # items for one step at least
RANK_DEPTH = 3  # CPU nesting drawn per rank
_COLLECTIVE_LABEL = re.compile(r"^(gloo|nccl|rccl):")  # the library's labels, not the user's


class StepFigures(msgspec.Struct, frozen=True, kw_only=True):
    """One step of one rank: the figures the rank x step matrix shows, on its own clock."""

    name: str
    number: int | None
    start_us: float  # the step's span, from the trace's origin (``RankData.clock_ns``)
    end_us: float
    wall_ms: float
    gpu_busy_ms: float | None  # None: GPU not observed
    idle_ms: float | None
    comm_ms: float | None  # None: no collective recognised
    exposed_ms: float | None
    phases_ms: dict[str, float]  # the user's labels (not gloo:/nccl:), exclusive ms
    unlabeled_ms: float | None


class RankData(msgspec.Struct, frozen=True, kw_only=True):
    """One rank, measured: all that is kept of its trace (a few KB per step)."""

    origin: RankOrigin  # where it was read, and what it says about its rank
    world_size: int | None
    backend: str | None
    gpu_observed: bool
    warnings: tuple[str, ...]  # what loading and measuring this trace noticed
    steps: tuple[StepFigures, ...]
    instances: tuple[Instance, ...]
    base_time_ns: int | None
    clock_ns: int  # absolute ns (own clock) of the trace's origin: base + first ts
    timeline: Timeline | None = None  # compact: RANK_BUDGET items, RANK_STEPS, RANK_DEPTH

    @property
    def path(self) -> str:
        return self.origin.location


def rank_data(trace: Trace, location: str | None = None) -> RankData:
    """The trace's summary; ``location``: where it was read, when not its path (a URL)."""
    events = trace.events
    base = trace.info.base_time_ns
    clock = (base if base is not None and base >= 0 else 0) + events.origin_ns
    tree = cpu_tree(events)
    links = gpu_links(events, tree)
    instances = collective_instances(events, tree, links, clock)
    analysis = measure(trace, linked=(tree, links))
    windows = find_steps(events).windows
    comm, exposed = _exposure(events, analysis, windows, instances, clock)
    summary = analysis.trace
    return RankData(
        origin=RankOrigin.of(trace.info, location), world_size=summary.world_size,
        backend=summary.backend, gpu_observed=summary.gpu_observed, warnings=summary.warnings,
        steps=tuple(
            _figures(step, w, c, e)
            for step, w, c, e in zip(analysis.steps, windows, comm, exposed, strict=True)
        ),
        instances=instances, base_time_ns=base if base is not None and base >= 0 else None,
        clock_ns=clock,
        timeline=step_lanes(
            trace, budget=RANK_BUDGET, max_depth=RANK_DEPTH, max_steps=RANK_STEPS,
            step_min=RANK_STEP_MIN, linked=(tree, links),
        ),
    )  # fmt: skip


def _figures(
    step: StepResult, window: StepWindow, comm_ms: float | None, exposed_ms: float | None
) -> StepFigures:
    return StepFigures(
        name=step.name, number=step.number, start_us=window.start_us, end_us=window.end_us,
        wall_ms=step.wall_ms, gpu_busy_ms=step.gpu.busy_ms if step.gpu else None,
        idle_ms=step.gpu.idle_ms if step.gpu else None, comm_ms=comm_ms, exposed_ms=exposed_ms,
        phases_ms={
            p.name: p.exclusive_ms for p in step.phases if not _COLLECTIVE_LABEL.match(p.name)
        },
        unlabeled_ms=step.unlabeled_ms,
    )  # fmt: skip


def _exposure(
    events: EventTable,
    analysis: TraceAnalysis,
    windows: tuple[StepWindow, ...],
    instances: tuple[Instance, ...],
    clock_ns: int,
) -> tuple[tuple[float | None, ...], tuple[float | None, ...]]:
    gpu_comm = any(s.gpu is not None and s.gpu.communication.count for s in analysis.steps)
    if gpu_comm:
        comm = tuple(s.gpu.communication.busy_ms if s.gpu else None for s in analysis.steps)
        exposed = tuple(
            s.gpu.communication.busy_ms - s.gpu.communication.overlap_with_compute_ms
            if s.gpu
            else None
            for s in analysis.steps
        )
        return comm, exposed
    cpu = [i for i in instances if i.blocking]
    if not cpu:
        return tuple(None for _ in windows), tuple(None for _ in windows)
    starts = np.array([(i.start_ns - clock_ns) / 1000 for i in cpu])
    ends = np.array([(i.end_ns - clock_ns) / 1000 for i in cpu])
    collectives = iv.union(starts, ends)
    compute_ids = [k for k, n in enumerate(events.names) if not _COLLECTIVE_OP.match(n)]
    is_compute = (events.kind == Kind.CPU_OP) & np.isin(events.name_id, compute_ids)
    comm_ms: list[float | None] = []
    exposed_ms: list[float | None] = []
    for w in windows:
        mine = iv.clip(collectives, w.start_us, w.end_us)
        rows = is_compute & (events.thread_id == w.thread) if w.thread >= 0 else is_compute
        busy = iv.union(events.start_us[rows], events.end_us[rows])
        comm_ms.append(iv.total(mine) / 1000)
        exposed_ms.append(iv.total(iv.difference(mine, busy)) / 1000)
    return tuple(comm_ms), tuple(exposed_ms)


def rank_steps(
    data: RankData, offset_ns: int, origin_ns: int, waits: Mapping[int, int]
) -> tuple[RankStep, ...]:
    """The rank's steps on the aligned clock; ``waits``: issued ns (own clock) -> wait ns."""
    issued = np.array(sorted(waits), dtype=np.int64)
    wait = np.array([waits[t] for t in issued.tolist()], dtype=np.int64)
    rows = []
    for step in data.steps:
        lo = data.clock_ns + round(step.start_us * 1000)
        hi = data.clock_ns + round(step.end_us * 1000)
        inside = (issued >= lo) & (issued < hi)
        comm_wait = int(wait[inside].sum()) / 1e6 if issued.size else None
        rows.append(
            RankStep(
                name=step.name,
                number=step.number,
                start_us=(lo - offset_ns - origin_ns) / 1000,
                wall_ms=step.wall_ms,
                gpu_busy_ms=step.gpu_busy_ms,
                idle_ms=step.idle_ms,
                comm_ms=step.comm_ms,
                exposed_comm_ms=step.exposed_ms,
                comm_wait_ms=comm_wait,
                phases_ms=step.phases_ms,
                unlabeled_ms=step.unlabeled_ms,
            )
        )
    return tuple(rows)
