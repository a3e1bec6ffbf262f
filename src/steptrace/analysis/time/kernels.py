"""Per kernel name over the whole trace: calls, total, mean, min, max, launch shape.

Contract: ``kernel_stats(events, in_step, steps) -> tuple[KernelStat, ...]``, sorted by
total time. Every figure is computed from all the kernel events of that name, so each row
is exact however many rows a report shows. ``total_ms`` is the sum of the kernel's own
durations (GPU time spent in it, across streams), not a share of wall time. The
``*_per_step`` figures are means over the ``steps`` (complete) steps of the kernels each
step launched (``in_step``, per event row: as ``GpuStep.kernels``), total in them / steps.

The launch shape (NVIDIA traces since 2022 carry it: the ``launch`` field group) is the
duration-weighted mean over the calls that recorded it: estimated achieved occupancy,
blocks per SM (under 1: the grid does not fill the GPU), registers per thread, shared
memory; None where no call recorded it ("not recorded"). An occupancy of 0 is Kineto's
"could not estimate" (cluster launches): not recorded either.
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.time.steps import step_of
from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable


class KernelStat(msgspec.Struct, frozen=True):
    name: str
    calls: int
    total_ms: float
    mean_us: float
    min_us: float
    max_us: float
    calls_per_step: float = 0.0  # mean over the steps of the calls each launched
    total_ms_per_step: float = 0.0
    # duration-weighted means over the calls that recorded them; None: not recorded
    occupancy_pct: float | None = None  # Kineto's "est. achieved occupancy %"
    blocks_per_sm: float | None = None  # under 1: the grid does not fill the GPU
    registers_per_thread: float | None = None
    shared_memory_bytes: float | None = None  # per block


def kernel_stats(
    events: EventTable, in_step: NDArray[np.bool_] | None = None, steps: int = 0
) -> tuple[KernelStat, ...]:
    """Every kernel name, by total time (largest first); per-step means over ``steps``."""
    rows = np.flatnonzero(events.kind == Kind.KERNEL)
    if rows.size == 0:
        return ()
    order = rows[np.argsort(events.name_id[rows], kind="stable")]
    name = events.name_id[order]
    duration = events.dur_us[order]
    first = np.flatnonzero(np.concatenate(([True], name[1:] != name[:-1])))
    calls = np.diff(np.concatenate((first, [name.size])))
    total = np.add.reduceat(duration, first)
    lowest = np.minimum.reduceat(duration, first)
    highest = np.maximum.reduceat(duration, first)
    counted = in_step[order] if in_step is not None and steps else np.zeros(order.size, bool)
    per = 1.0 / steps if steps else 0.0
    step_calls = np.add.reduceat(counted.astype(np.float64), first) * per
    step_total = np.add.reduceat(np.where(counted, duration, 0.0), first) * per
    shape = {
        field: _weighted_means(events, column, order, duration, first)
        for field, column in LAUNCH_SHAPE.items()
    }
    stats = [
        KernelStat(
            name=events.names[int(name[f])],
            calls=int(c),
            total_ms=float(t) / 1000,
            mean_us=float(t) / int(c),
            min_us=float(lo),
            max_us=float(hi),
            calls_per_step=float(sc),
            total_ms_per_step=float(st) / 1000,
            **{field: means[k] for field, means in shape.items()},
        )
        for k, (f, c, t, lo, hi, sc, st) in enumerate(
            zip(first, calls, total, lowest, highest, step_calls, step_total, strict=True)
        )
    ]
    return tuple(sorted(stats, key=lambda s: (-s.total_ms, s.name)))


# KernelStat field -> the ``launch`` group's column it is the mean of
LAUNCH_SHAPE = {
    "occupancy_pct": "occupancy_pct",
    "blocks_per_sm": "blocks_per_sm",
    "registers_per_thread": "registers_per_thread",
    "shared_memory_bytes": "shared_memory",
}


def _weighted_means(
    events: EventTable,
    column: str,
    order: NDArray[np.int64],
    duration: NDArray[np.float64],
    first: NDArray[np.int64],
) -> list[float | None]:
    """Per kernel name: the duration-weighted mean of a launch-shape column over the calls
    that recorded it; None for a name none of whose calls did (or a column not loaded)."""
    found = events.sparse.get(column)
    if found is None:
        return [None] * first.size
    at = np.searchsorted(found.rows, order)  # kernel rows all carry the field (sparse)
    inside = at < found.rows.size
    taken = np.full(order.size, np.nan)
    carried = inside & (found.rows[np.minimum(at, found.rows.size - 1)] == order)
    taken[carried] = found.values[at[carried]]
    known = np.isfinite(taken) & (taken >= 0)  # MISSING (-1) and NaN: not recorded
    if column == "occupancy_pct":
        known &= taken > 0  # Kineto writes 0 where it could not estimate it (clusters)
    weight = np.where(known, np.maximum(duration, 1e-9), 0.0)  # 0-µs calls still count
    total = np.add.reduceat(weight, first)
    summed = np.add.reduceat(np.where(known, taken, 0.0) * weight, first)
    return [float(v / w) if w > 0 else None for v, w in zip(summed, total, strict=True)]


def _figure(context: TraceContext) -> tuple[KernelStat, ...]:
    """Per-step means over the complete steps, of the kernels each launched."""
    events, timeline, counted = context.events, context.gpu_busy, context.counted
    if timeline is None:
        return kernel_stats(events, None, len(counted))
    launched = np.zeros(len(events), dtype=bool)
    launched[timeline.rows] = step_of(counted, timeline.issued_us) >= 0
    return kernel_stats(events, launched, len(counted))


FIGURE = FigureSpec(
    "kernels", _figure, frozenset({"steps", "gpu_busy"}), groups=frozenset({"launch"})
)
