"""One rank's trace reduced to what the cross-rank analysis needs, then its step rows.

Contract: ``rank_data(trace, location, parts) -> RankData`` computes, once, only the
figures the asked ``parts`` keep (``RankParts``: the steps' figures, the collectives, the
steps' lanes for the HTML report) and keeps only those: a compact, picklable, versioned
summary (no event table, no operator or kernel table), so that it can cross processes or
a network and the trace can be let go. ``rank_steps(data, offset_ns, origin_ns, waits)``
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
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import msgspec
import numpy as np

from steptrace.across.ranks.figures import RankStep
from steptrace.across.ranks.reading.discover import RankOrigin
from steptrace.analysis.communication.collectives import Instance, collective_instances
from steptrace.analysis.compose import compute
from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.critical.path import CriticalPath
from steptrace.analysis.memory import usage as memory_figure
from steptrace.analysis.registry import fields_for, figures
from steptrace.analysis.time.gpu import GpuStep
from steptrace.analysis.time.outside import outside_warnings
from steptrace.analysis.time.phases import StepPhases
from steptrace.analysis.time.steps import (
    StepWindow,
    marker_warnings,
    overlap_warnings,
    too_many_steps,
)
from steptrace.analysis.timeline.lanes import step_lanes
from steptrace.analysis.timeline.model import Lanes
from steptrace.errors import TraceError
from steptrace.trace import intervals as iv
from steptrace.trace.fields import Selection
from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable, Trace

_COLLECTIVE_OP = re.compile(r"^(c10d::|record_param_comms$|gloo:|nccl:)")
RANK_BUDGET = 600  # bars, bands and gaps of one rank's steps together
RANK_STEPS = 8  # the first steps of each rank, drawn
RANK_STEP_MIN = 40  # items for one step at least
RANK_DEPTH = 3  # CPU nesting drawn per rank
_COLLECTIVE_LABEL = re.compile(r"^(gloo|nccl|rccl):")  # the library's labels, not the user's
RANK_DATA_VERSION = 2  # bumped when a part changes meaning: other versions are refused
Part = Literal["steps", "collectives", "lanes", "critical"]
DEFAULT_PARTS: tuple[Part, ...] = ("steps", "collectives")


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
    peak_allocated_bytes: int | None = None  # the device of the largest; None: not recorded


class RankCriticalStep(msgspec.Struct, frozen=True, kw_only=True):
    """One step of one rank's critical path (``analysis.critical_path``), reduced to what
    the job's path reads: its length and each phase's time on it."""

    step: str
    number: int | None
    length_ms: float
    phases_ms: dict[str, float]  # the path's time by innermost label of the user's


class RankParts(msgspec.Struct, frozen=True, kw_only=True):
    """What a rank's summary carries besides what identifies it, one field per part; a part
    that was not asked for is None. A cross-rank analysis that needs more of each rank adds
    a part here (its figures in ``_PART_FIGURES``)."""

    steps: tuple[StepFigures, ...] | None = None
    collectives: tuple[Instance, ...] | None = None
    lanes: Lanes | None = None  # compact: RANK_BUDGET items, RANK_STEPS, RANK_DEPTH
    critical: tuple[RankCriticalStep, ...] | None = None


class RankData(msgspec.Struct, frozen=True, kw_only=True):
    """One rank, measured: all that is kept of its trace (a few KB per step)."""

    version: int = RANK_DATA_VERSION
    origin: RankOrigin  # where it was read, and what it says about its rank
    world_size: int | None
    backend: str | None
    gpu_observed: bool
    warnings: tuple[str, ...]  # what loading and measuring this trace noticed
    base_time_ns: int | None
    clock_ns: int  # absolute ns (own clock) of the trace's origin: base + first ts
    parts: RankParts
    damaged: bool = False  # loading skipped events, or bytes after the gzip data
    host: str | None = None  # the host it was recorded on: ranks of one host, one clock

    @property
    def path(self) -> str:
        return self.origin.location

    @property
    def steps(self) -> tuple[StepFigures, ...]:
        return self.parts.steps or ()

    @property
    def instances(self) -> tuple[Instance, ...]:
        return self.parts.collectives or ()


def _clock_ns(context: TraceContext) -> int:
    base = context.trace.info.base_time_ns
    return (base if base is not None and base >= 0 else 0) + context.events.origin_ns


def _collectives(context: TraceContext) -> tuple[Instance, ...]:
    return collective_instances(context.events, context.tree, context.links, _clock_ns(context))


def _lanes(context: TraceContext) -> Lanes:
    return step_lanes(
        context,
        budget=RANK_BUDGET,
        max_depth=RANK_DEPTH,
        max_steps=RANK_STEPS,
        step_min=RANK_STEP_MIN,
        together=False,  # the job's figure draws one step across the ranks
    )


_COLLECTIVES = FigureSpec(
    "collectives", _collectives, frozenset({"tree", "links"}), groups=frozenset({"collective"})
)
_RANK_LANES = FigureSpec("rank_lanes", _lanes, frozenset({"steps", "gpu_busy", "tree", "links"}))
# The figures each part reads (the steps' warnings need the GPU work outside the steps).
_PART_FIGURES: dict[Part, tuple[FigureSpec[Any], ...]] = {
    "steps": (*figures(["gpu", "phases", "gpu_outside_steps", "memory"]), _COLLECTIVES),
    "collectives": (_COLLECTIVES,),
    "lanes": (_RANK_LANES,),
    "critical": figures(["critical_path"]),
}


def part_figures(parts: Iterable[Part]) -> tuple[FigureSpec[Any], ...]:
    """The figures ``parts`` read, each once."""
    return tuple(dict.fromkeys(f for p in parts for f in _PART_FIGURES[p]))


def rank_fields(parts: Iterable[Part]) -> Selection:
    """The trace fields the ``parts`` read: what loading a rank's trace decodes."""
    return fields_for(part_figures(parts))


def rank_data(
    trace: Trace, location: str | None = None, parts: Iterable[Part] = DEFAULT_PARTS
) -> RankData:
    """The trace's summary; ``location``: where it was read, when not its path (a URL)."""
    asked = tuple(parts)
    context = TraceContext(trace)
    if refused := too_many_steps(context.windows, location or str(trace.info.path)):
        raise TraceError(refused)  # a rank like any other trace: its report in bounded time
    computed = compute(context, part_figures(asked))
    instances: tuple[Instance, ...] = computed.get("collectives", ())
    steps = None
    if "steps" in asked:
        steps = _step_figures(context, computed["gpu"], computed["phases"], instances)
    info = trace.info
    dist = info.distributed
    base = info.base_time_ns
    noticed = (
        *info.warnings,
        *marker_warnings(context.events),
        *overlap_warnings(context.windows),
        *(outside_warnings(computed["gpu_outside_steps"]) if "steps" in asked else ()),
    )
    return RankData(
        origin=RankOrigin.of(info, location),
        world_size=dist.world_size if dist else None,
        backend=dist.backend if dist else None,
        gpu_observed=context.gpu_busy is not None,
        warnings=noticed,
        base_time_ns=base if base is not None and base >= 0 else None,
        clock_ns=_clock_ns(context),
        host=info.host or None,
        parts=RankParts(
            steps=steps,
            collectives=instances if "collectives" in asked else None,
            lanes=computed.get("rank_lanes"),
            critical=_critical(context, computed["critical_path"]) if "critical" in asked else None,
        ),
        damaged=bool(info.events_skipped or info.bytes_ignored),
    )


def _step_figures(
    context: TraceContext,
    gpu: tuple[GpuStep | None, ...],
    phases: tuple[StepPhases, ...],
    instances: tuple[Instance, ...],
) -> tuple[StepFigures, ...]:
    windows = context.windows
    comm, exposed = _exposure(context.events, gpu, windows, instances, _clock_ns(context))
    peaks = _peaks(context)
    return tuple(
        StepFigures(
            name=w.name,
            number=w.number,
            start_us=w.start_us,
            end_us=w.end_us,
            wall_ms=w.wall_ms,
            gpu_busy_ms=g.busy_ms if g else None,
            idle_ms=g.idle_ms if g else None,
            comm_ms=c,
            exposed_ms=e,
            phases_ms={
                p.name: p.exclusive_ms for p in ph.phases if not _COLLECTIVE_LABEL.match(p.name)
            },
            unlabeled_ms=ph.unlabeled_ms,
            peak_allocated_bytes=peaks.get(w.name),
        )
        for w, g, ph, c, e in zip(windows, gpu, phases, comm, exposed, strict=True)
    )


def _peaks(context: TraceContext) -> dict[str, int]:
    """Per step name: the peak allocated of the device with the trace's largest peak."""
    memory = context.figure(memory_figure.FIGURE)
    if memory is None or not memory.devices:
        return {}
    device = max(
        memory.devices, key=lambda d: max((s.peak_allocated_bytes for s in d.steps), default=0)
    )
    return {s.step: s.peak_allocated_bytes for s in device.steps}


def _exposure(
    events: EventTable,
    gpu: tuple[GpuStep | None, ...],
    windows: tuple[StepWindow, ...],
    instances: tuple[Instance, ...],
    clock_ns: int,
) -> tuple[tuple[float | None, ...], tuple[float | None, ...]]:
    if any(g is not None and g.communication.count for g in gpu):
        comm = tuple(g.communication.busy_ms if g else None for g in gpu)
        exposed = tuple(
            g.communication.busy_ms - g.communication.overlap_with_compute_ms if g else None
            for g in gpu
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


def _critical(context: TraceContext, path: CriticalPath) -> tuple[RankCriticalStep, ...]:
    """Each step's path: its length, and its time by innermost label (``StepPath.labels``)."""
    return tuple(
        RankCriticalStep(
            step=s.step,
            number=w.number,
            length_ms=s.length_ms,
            phases_ms={o.name: o.on_path_ms for o in s.labels},
        )
        for s, w in zip(path.steps, context.windows, strict=True)
    )


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
                peak_allocated_bytes=step.peak_allocated_bytes,
            )
        )
    return tuple(rows)
