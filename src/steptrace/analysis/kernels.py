"""Per kernel name over the whole trace: calls, total, mean, min, max.

Contract: ``kernel_stats(events) -> tuple[KernelStat, ...]``, sorted by total time. Every
figure is computed from all the kernel events of that name, so each row is exact however
many rows a report shows. ``total_ms`` is the sum of the kernel's own durations (GPU time
spent in it, across streams), not a share of wall time.
"""

from __future__ import annotations

import msgspec
import numpy as np

from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable


class KernelStat(msgspec.Struct, frozen=True):
    name: str
    calls: int
    total_ms: float
    mean_us: float
    min_us: float
    max_us: float


def kernel_stats(events: EventTable) -> tuple[KernelStat, ...]:
    """Every kernel name, by total time (largest first)."""
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
    stats = [
        KernelStat(
            name=events.names[int(name[f])],
            calls=int(c),
            total_ms=float(t) / 1000,
            mean_us=float(t) / int(c),
            min_us=float(lo),
            max_us=float(hi),
        )
        for f, c, t, lo, hi in zip(first, calls, total, lowest, highest, strict=True)
    ]
    return tuple(sorted(stats, key=lambda s: (-s.total_ms, s.name)))
