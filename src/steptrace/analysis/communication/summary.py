"""Collectives on one rank's trace, by type: how long, how large, how fast, how exposed.

Contract: ``communication(context) -> tuple[CollectiveKind, ...]``, one per collective type
(``all_reduce``, ``all_gather``, ``reduce_scatter``, ``all_to_all``, ``send_recv``,
``broadcast``, ...), the longest first; () when the trace holds no collective. The
instances are ``analysis.collectives``' (``record_param_comms``, ``c10d::``, gloo,
NCCL/RCCL kernels); only those whose time includes the collective itself count (a GPU
collective's enqueue alone says nothing of its duration).

- Per step (``per_step``, each step by name): the instances issued in it, the union of
  their time clipped to the step, and of that the part no compute covered (``exposed``):
  on a GPU trace compute is every other kernel (all devices), on a CPU trace the step
  thread's own operators other than the collectives'.
- ``bytes_per_call``: the median message size (``In msg nelems`` x dtype, else the first
  input's recorded shape); ``group_size``: the group's ranks, else the trace's world size.
- ``algbw_gbps`` = bytes / duration, ``busbw_gbps`` = algbw x 2(n-1)/n for all-reduce,
  x (n-1)/n for all-gather, reduce-scatter and all-to-all, x 1 for the others
  (nccl-tests' convention), the
  median over the instances with a size: the duration includes any wait for other ranks,
  so on one rank's trace these are lower bounds of the link's speed.
- ``waiting``: instances at least ``LONG_MS`` long that lasted longer than the compute
  the rank ran since its previous collective (or the step's start): the rank arrived with
  little to do, so most of such a collective is likely waiting for other ranks, which
  only the job's traces together can tell (``analyze_ranks``).
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence

import msgspec
import numpy as np

from steptrace.analysis.communication.collectives import BUS_FACTOR, Instance, collective_instances
from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.time.gpu import communication_names
from steptrace.analysis.time.steps import StepWindow, step_of
from steptrace.trace import intervals as iv
from steptrace.trace.kinds import Kind

LONG_MS = 1.0  # a collective shorter than this is not suspected of waiting
_COLLECTIVE_OP = re.compile(r"^(c10d::|record_param_comms$|gloo:|nccl:)")


class KindStep(msgspec.Struct, frozen=True):
    """One collective type in one step."""

    step: str
    calls: int  # instances issued in the step
    ms: float  # their union, clipped to the step
    exposed_ms: float  # of that, covered by no compute


class CollectiveKind(msgspec.Struct, frozen=True):
    """One collective type on this rank: its instances together."""

    kind: str  # all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, broadcast, ...
    calls: int  # instances in the whole trace
    total_ms: float  # their summed durations, the whole trace
    longest_ms: float
    bytes_per_call: int | None  # median message size; None: not recorded
    group_size: int | None  # ranks in its group (the trace's world size else); None: unknown
    algbw_gbps: float | None  # median bytes / duration; None: no size
    busbw_gbps: float | None  # algbw x the type's bus factor; None: no size or group size
    waiting_calls: int  # long instances longer than the compute before them
    waiting_ms: float  # their summed durations
    per_step: tuple[KindStep, ...]


def communication(context: TraceContext) -> tuple[CollectiveKind, ...]:
    """The trace's collectives by type, the longest first (see the module); () also when
    the trace was loaded without its ``collective`` fields (``trace.fields``)."""
    if "collective" not in context.events.sparse:
        return ()
    instances = [
        i
        for i in collective_instances(context.events, context.tree, context.links, 0)
        if i.blocking
    ]
    if not instances:
        return ()
    compute = _compute(context)
    dist = context.trace.info.distributed
    world = dist.world_size if dist and dist.world_size else None
    waiting = _waiting(instances, compute, context.windows)
    kinds = sorted({i.kind for i in instances})
    found = [
        _kind(kind, [i for i in instances if i.kind == kind], compute, context, world, waiting)
        for kind in kinds
    ]
    return tuple(sorted(found, key=lambda k: -k.total_ms))


def _compute(context: TraceContext) -> iv.Intervals:
    """What counts as compute beside a collective: other kernels on a GPU trace, the steps'
    threads' own operators (not the collectives') on a CPU trace."""
    events = context.events
    if context.gpu_busy is not None:
        rows = context.gpu_busy.rows
        kernels = rows[events.kind[rows] == Kind.KERNEL]
        named = communication_names(events, context.kinds, kernels)
        kept = kernels[~named[events.name_id[kernels]]]
        return iv.union(events.start_us[kept], events.end_us[kept])
    threads = sorted({w.thread for w in context.windows if w.thread >= 0})
    ops = np.array([k for k, n in enumerate(events.names) if not _COLLECTIVE_OP.match(n)])
    rows = (events.kind == Kind.CPU_OP) & np.isin(events.name_id, ops)
    if threads:
        rows &= np.isin(events.thread_id, threads)
    return iv.union(events.start_us[rows], events.end_us[rows])


def _span_us(instance: Instance) -> tuple[float, float]:
    return instance.start_ns / 1000, instance.end_ns / 1000


def _waiting(
    instances: Sequence[Instance], compute: iv.Intervals, windows: tuple[StepWindow, ...]
) -> set[int]:
    """The ids of the long instances that lasted longer than the compute before them: since
    the end of every instance that started before (or since the step's start), every
    instance at once."""
    ordered = sorted(instances, key=lambda i: i.start_ns)
    spans = np.array([_span_us(i) for i in ordered]).reshape(-1, 2)
    starts, ends = spans[:, 0], spans[:, 1]
    step = step_of(windows, starts)
    previous_end = np.maximum.accumulate(np.concatenate(([-np.inf], ends[:-1])))
    step_start = np.array([w.start_us for w in windows] + [0.0])[step]  # [-1]: no step
    since = np.maximum(previous_end, np.where(step >= 0, step_start, starts))
    before = np.where(starts > since, iv.covered(compute, since, starts), 0.0)
    found = (ends - starts >= LONG_MS * 1000) & (ends - starts > before)
    return {id(ordered[k]) for k in np.flatnonzero(found).tolist()}


def _kind(
    kind: str,
    members: list[Instance],
    compute: iv.Intervals,
    context: TraceContext,
    world: int | None,
    waiting: set[int],
) -> CollectiveKind:
    spans = np.array([_span_us(i) for i in members])
    union = iv.union(spans[:, 0], spans[:, 1])
    issued = step_of(context.windows, np.array([i.issued_ns / 1000 for i in members]))
    durations = spans[:, 1] - spans[:, 0]
    sizes = [i.nbytes for i in members if i.nbytes is not None]
    groups = [i.group_size for i in members if i.group_size]
    group = int(statistics.median_low(groups)) if groups else world
    algbw, busbw = _bandwidths(kind, members, group)
    late = [i for i in members if id(i) in waiting]
    return CollectiveKind(
        kind=kind,
        calls=len(members),
        total_ms=float(durations.sum()) / 1000,
        longest_ms=float(durations.max()) / 1000,
        bytes_per_call=int(statistics.median_low(sizes)) if sizes else None,
        group_size=group,
        algbw_gbps=algbw,
        busbw_gbps=busbw,
        waiting_calls=len(late),
        waiting_ms=sum(i.end_ns - i.start_ns for i in late) / 1e6,
        per_step=tuple(
            _kind_step(w, union, compute, int((issued == k).sum()))
            for k, w in enumerate(context.windows)
        ),
    )


def _kind_step(w: StepWindow, union: iv.Intervals, compute: iv.Intervals, calls: int) -> KindStep:
    mine = iv.clip(union, w.start_us, w.end_us)
    exposed = iv.difference(mine, iv.clip(compute, w.start_us, w.end_us))
    return KindStep(w.name, calls, iv.total(mine) / 1000, iv.total(exposed) / 1000)


def _bandwidths(
    kind: str, members: list[Instance], group: int | None
) -> tuple[float | None, float | None]:
    """Median algbw and busbw (GB/s = bytes per ns) over the instances with a size."""
    rates = [
        i.nbytes / (i.end_ns - i.start_ns)
        for i in members
        if i.nbytes is not None and i.end_ns > i.start_ns
    ]
    if not rates:
        return None, None
    algbw = statistics.median(rates)
    factor = BUS_FACTOR.get(kind)
    if factor is None:  # broadcast, send/recv, reduce: the bus carries the message once
        return algbw, algbw
    if not group or group < 2:
        return algbw, None
    return algbw, algbw * factor * (group - 1) / group


FIGURE = FigureSpec(
    "communication",
    communication,
    frozenset({"steps", "gpu_busy", "tree", "links"}),
    groups=frozenset({"collective"}),
)
