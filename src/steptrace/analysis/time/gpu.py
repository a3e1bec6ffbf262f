"""GPU activity per step, on the timeline.

Contract: ``gpu_per_step(events, steps, timeline) -> tuple[GpuStep | None, ...]``, over
the GPU timeline built once (``steptrace.analysis.time.gpu_busy``). Busy time is the
union of kernel, memcpy and memset intervals over all streams and devices, clipped to the
step's wall-time window, so concurrent streams are never added up. Kernels, copies and
sets are counted in the step whose CPU side launched them (their launch call's start;
the GPU start when no launch is linked), so work that runs after its step is not lost;
where steps overlap, in the one that began last (``steps.step_of``), so once at most.
Work launched before the trace began (``GpuLinks.before_trace``) is counted in no step,
nor is work issued outside every step (``steptrace.analysis.time.outside`` reports both); but
the time it keeps the GPU busy is still busy time: busy and idle describe the timeline.

Communication is a timeline figure too: ``busy_ms`` is the union of communication kernels
clipped to the step, and ``overlap_with_compute_ms`` the part of it during which a compute
kernel (any other kernel, whichever step launched it) ran on the same device; ``count`` is
the communication kernels the step launched. A trace without GPU events gives ``None``
for every step: not observed, never zero.
"""

from __future__ import annotations

import functools
import re

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.efficiency.kernel_kinds import DEFAULT, KernelKinds
from steptrace.analysis.spread import Spread
from steptrace.analysis.time.categories import CategoryTime, category_per_step
from steptrace.analysis.time.gpu_busy import GpuBusy
from steptrace.analysis.time.idle import AFTER_SYNC, WAITING_ON_HOST, SyncCalls, idle_gaps_us
from steptrace.analysis.time.steps import StepWindow, indices_by_step, step_of
from steptrace.trace import intervals as iv
from steptrace.trace.arrays import distinct
from steptrace.trace.kinds import LAUNCHES, Kind
from steptrace.trace.table import EventTable

# Kernels of collective-communication libraries, reported apart from compute.
# Host calls that block until the device (or a copy) has finished.
SYNC_CALLS = frozenset(
    {
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventSynchronize",
        "cudaMemcpy",
        "cuCtxSynchronize",
        "cuStreamSynchronize",
        "cuEventSynchronize",
        "hipDeviceSynchronize",
        "hipStreamSynchronize",
        "hipEventSynchronize",
        "hipMemcpy",
        "hipMemcpyWithStream",
    }
)
_MEMCPY = re.compile(r"Memcpy (\w+)(?: \((\w+) -> (\w+)\))?")


class KernelSummary(msgspec.Struct, frozen=True):
    count: int
    busy_ms: float  # union of kernel intervals only
    duration_us: Spread | None
    shorter_than_launch: int  # kernels that ran for less time than their launch call took
    replayed: int = 0  # of them, replayed by a graph launch: no launch call of their own


class CopySummary(msgspec.Struct, frozen=True):
    direction: str  # HtoD, DtoH, DtoD, ...
    count: int
    busy_ms: float
    bytes: int | None  # None when the trace gives no byte counts
    pageable: int  # copies whose host side is pageable memory
    pinned: int
    pageable_bytes: int | None = None  # of ``bytes``, from pageable memory (None: unrecorded)
    pageable_busy_ms: float = 0.0  # union of the pageable copies' intervals


class SetSummary(msgspec.Struct, frozen=True):
    count: int
    busy_ms: float


class CommunicationSummary(msgspec.Struct, frozen=True):
    count: int  # communication kernels the step launched
    busy_ms: float  # union of communication kernels on the timeline, clipped to the step
    overlap_with_compute_ms: float  # of that, while compute ran on the same device


class SyncSummary(msgspec.Struct, frozen=True):
    name: str
    count: int
    total_ms: float


class GpuStep(msgspec.Struct, frozen=True):
    """What the GPU did during one step."""

    busy_ms: float
    idle_ms: float
    utilization: float  # busy / wall
    kernels: KernelSummary
    memcpy: tuple[CopySummary, ...]
    memset: SetSummary
    communication: CommunicationSummary
    launch_delay_us: Spread | None  # kernel start minus the end of its launch call
    sync_calls: tuple[SyncSummary, ...]
    # idle gaps by cause (``idle``: the timeline shades the same gaps): the next launch
    # arrived too late to fill them (None: no launch call linked); a blocking call ended in them
    idle_waiting_on_host_ms: float | None
    idle_after_sync_ms: float
    streams: tuple[int, ...]  # streams with GPU work starting in the step
    categories: tuple[CategoryTime, ...] = ()  # busy time by kind of work, overlap once


def gpu_per_step(
    events: EventTable,
    steps: tuple[StepWindow, ...],
    timeline: GpuBusy | None,
    kinds: KernelKinds = DEFAULT,
) -> tuple[GpuStep | None, ...]:
    """One ``GpuStep`` per step, or ``None`` for each when the GPU was not observed;
    ``kinds``: the table of kernel kinds (``kernel_kinds``)."""
    if timeline is None:
        return tuple(None for _ in steps)
    lo = np.array([s.start_us for s in steps])
    hi = np.array([s.end_us for s in steps])
    busy = iv.covered(timeline.busy, lo, hi) / 1000.0
    gpu_start = timeline.start_us
    launch_delay = gpu_start - timeline.launch_end_us  # queueing included
    if timeline.replayed is not None:  # a graph's nodes wait for each other, not the launch
        launch_delay = np.where(timeline.replayed, np.nan, launch_delay)
    syncs = _sync_rows(events)
    blocking = SyncCalls.of(events.start_us[syncs], events.end_us[syncs])
    sync_step = step_of(steps, events.start_us[syncs])
    launched_in = step_of(steps, timeline.issued_us)  # the step whose CPU side launched it
    communication = _communication(events, timeline, launched_in, lo, hi, kinds)
    categories = category_per_step(events, timeline, lo, hi, kinds)
    results = []
    launched = indices_by_step(launched_in, len(steps))
    synced = indices_by_step(sync_step, len(steps))
    for k, step in enumerate(steps):
        inside = launched[k]  # indices into the timeline's rows, ascending
        wall = step.wall_ms
        idle = idle_gaps_us(timeline, blocking, step.start_us, step.end_us)
        results.append(
            GpuStep(
                busy_ms=float(busy[k]),
                idle_ms=float(wall - busy[k]),
                utilization=float(busy[k] / wall) if wall > 0 else 0.0,
                kernels=_kernels(events, timeline, inside),
                memcpy=_copies(events, timeline.rows[inside]),
                memset=_sets(events, timeline.rows[inside]),
                communication=communication[k],
                launch_delay_us=Spread.of(_finite(launch_delay[inside])),
                sync_calls=_syncs(events, syncs[synced[k]]),
                idle_waiting_on_host_ms=(
                    idle.total_ms(WAITING_ON_HOST) if timeline.any_launch_known else None
                ),
                streams=tuple(int(x) for x in distinct(events.stream[timeline.rows[inside]])),
                idle_after_sync_ms=idle.total_ms(AFTER_SYNC),
                categories=categories[k],
            )
        )
    return tuple(results)


def _finite(values: NDArray[np.float64]) -> NDArray[np.float64]:
    return values[np.isfinite(values)]


def _busy_ms(events: EventTable, rows: NDArray[np.int64]) -> float:
    return iv.total(_union(events, rows)) / 1000.0


def _of_kind(events: EventTable, rows: NDArray[np.int64], kind: Kind) -> NDArray[np.int64]:
    chosen: NDArray[np.int64] = rows[events.kind[rows] == kind]
    return chosen


def _kernels(events: EventTable, timeline: GpuBusy, inside: NDArray[np.int64]) -> KernelSummary:
    """The kernels among the timeline's rows ``inside`` (indices into them)."""
    chosen = inside[events.kind[timeline.rows[inside]] == Kind.KERNEL]
    kernels = timeline.rows[chosen]
    duration = events.dur_us[kernels]
    launch = timeline.launch_dur_us[chosen]
    return KernelSummary(
        count=int(kernels.size),
        busy_ms=_busy_ms(events, kernels),
        duration_us=Spread.of(duration),
        shorter_than_launch=int((duration < launch).sum()),  # NaN launch: not counted
        replayed=0 if timeline.replayed is None else int(timeline.replayed[chosen].sum()),
    )


def _copies(events: EventTable, rows: NDArray[np.int64]) -> tuple[CopySummary, ...]:
    copies = _of_kind(events, rows, Kind.MEMCPY)
    names, name_of_copy = np.unique(events.name_id[copies], return_inverse=True)
    kinds = [copy_kind(events.names[n]) for n in names.tolist()]  # a handful of names
    directions = sorted({direction for direction, _ in kinds})
    direction = np.array([directions.index(d) for d, _ in kinds], dtype=np.int64)[name_of_copy]
    pageable = np.array([m == "Pageable" for _, m in kinds], dtype=bool)[name_of_copy]
    pinned = np.array([m == "Pinned" for _, m in kinds], dtype=bool)[name_of_copy]
    summaries = []
    for k, name in enumerate(directions):
        members = direction == k
        chosen, paged = copies[members], copies[members & pageable]  # in the rows' order
        summaries.append(
            CopySummary(
                direction=name,
                count=int(chosen.size),
                busy_ms=_busy_ms(events, chosen),
                bytes=_bytes(events, chosen),
                pageable=int(paged.size),
                pinned=int((members & pinned).sum()),
                pageable_bytes=_bytes(events, paged) if paged.size else 0,
                pageable_busy_ms=_busy_ms(events, paged),
            )
        )
    return tuple(summaries)


def _bytes(events: EventTable, rows: NDArray[np.int64]) -> int | None:
    """Bytes the copies moved; None when the trace gives no byte count for any of them."""
    nbytes = events.bytes[rows]
    return int(np.nansum(nbytes)) if np.isfinite(nbytes).any() else None


@functools.cache  # a trace has thousands of copies and a handful of copy names
def copy_kind(name: str) -> tuple[str, str | None]:
    """Direction and host-memory kind from a name like ``Memcpy HtoD (Pageable -> Device)``."""
    match = _MEMCPY.search(name)
    if not match:
        return "other", None
    direction, source, destination = match.groups()
    host = source if direction.startswith("H") else destination
    return direction, host if host in ("Pageable", "Pinned") else None


def _sets(events: EventTable, rows: NDArray[np.int64]) -> SetSummary:
    sets = _of_kind(events, rows, Kind.MEMSET)
    return SetSummary(count=int(sets.size), busy_ms=_busy_ms(events, sets))


def _communication(
    events: EventTable,
    timeline: GpuBusy,
    launched_in: NDArray[np.int64],
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
    kinds: KernelKinds,
) -> list[CommunicationSummary]:
    """Per step: communication kernels it launched; their time and overlap on the timeline."""
    is_kernel = events.kind[timeline.rows] == Kind.KERNEL
    named = communication_names(events, kinds, timeline.rows[is_kernel])
    is_comm = is_kernel & named[events.name_id[timeline.rows]]
    launched = launched_in[is_comm]
    counts = np.bincount(launched[launched >= 0], minlength=lo.size)
    comm, overlap = _comm_timeline(events, timeline.rows[is_kernel], is_comm[is_kernel])
    busy, overlapped = iv.covered(comm, lo, hi) / 1000, iv.covered(overlap, lo, hi) / 1000
    return [
        CommunicationSummary(int(c), float(b), float(o))
        for c, b, o in zip(counts, busy, overlapped, strict=True)
    ]


def _comm_timeline(
    events: EventTable, kernels: NDArray[np.int64], is_comm: NDArray[np.bool_]
) -> tuple[iv.Intervals, iv.Intervals]:
    """Communication on the timeline, and its part overlapping compute on the same device."""
    device = events.device[kernels]
    overlaps = [
        iv.intersect(_union(events, kernels[on & is_comm]), _union(events, kernels[on & ~is_comm]))
        for on in (device == d for d in np.unique(device[is_comm]))
    ]
    starts = np.concatenate([s for s, _ in overlaps] or [np.zeros(0)])
    ends = np.concatenate([e for _, e in overlaps] or [np.zeros(0)])
    return _union(events, kernels[is_comm]), iv.union(starts, ends)


def _union(events: EventTable, rows: NDArray[np.int64]) -> iv.Intervals:
    return iv.union(events.start_us[rows], events.end_us[rows])


def communication_names(
    events: EventTable, kinds: KernelKinds = DEFAULT, rows: NDArray[np.int64] | None = None
) -> NDArray[np.bool_]:
    """Per interned name: is it a collective-communication kernel (``kinds``' table)? Only
    the names of ``rows`` are read when given (the others: False)."""
    named = np.zeros(len(events.names), dtype=bool)
    ids = distinct(events.name_id[rows]) if rows is not None else range(len(events.names))
    for i in ids:
        named[i] = kinds.kind_of(events.names[i]) == "communication"
    return named


def _sync_rows(events: EventTable) -> NDArray[np.int64]:
    sync_names = np.array(
        [i for i, n in enumerate(events.names) if n in SYNC_CALLS], dtype=np.int32
    )
    rows: NDArray[np.int64] = np.flatnonzero(
        events.mask(*LAUNCHES) & np.isin(events.name_id, sync_names)
    )
    return rows


def _syncs(events: EventTable, rows: NDArray[np.int64]) -> tuple[SyncSummary, ...]:
    """The step's blocking calls (``rows``: those starting in it) by name, as unions."""
    by_name: dict[str, list[int]] = {}
    for row in rows.tolist():
        by_name.setdefault(events.name_of(row), []).append(row)
    return tuple(
        SyncSummary(name, len(members), _busy_ms(events, np.array(members, dtype=np.int64)))
        for name, members in sorted(by_name.items())
    )


def _figure(context: TraceContext) -> tuple[GpuStep | None, ...]:
    return gpu_per_step(context.events, context.windows, context.gpu_busy, context.kinds)


FIGURE = FigureSpec("gpu", _figure, frozenset({"steps", "gpu_busy"}))
