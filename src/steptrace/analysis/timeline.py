"""The GPU timeline of a trace: its work rows, merged busy intervals and launch calls.

Contract: ``gpu_timeline(events, links) -> GpuTimeline | None``, built once per trace and
read by every GPU figure (per step, idle causes, labels). ``None``: the trace holds no
kernel, copy or set, so the GPU was not observed.
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.links import GpuLinks
from steptrace.trace import intervals as iv
from steptrace.trace.table import EventTable


class GpuTimeline(msgspec.Struct, frozen=True):
    """GPU work rows, their merged busy intervals and their launch calls, once per trace."""

    rows: NDArray[np.int64]
    start_us: NDArray[np.float64]
    busy: iv.Intervals
    launch_end_us: NDArray[np.float64]  # per GPU row, NaN when no launch call is known
    launch_dur_us: NDArray[np.float64]
    issued_us: NDArray[np.float64]  # when the CPU issued it: launch start, else GPU start


def gpu_timeline(events: EventTable, links: GpuLinks) -> GpuTimeline | None:
    """The GPU side of a trace, or ``None`` when it holds no GPU events."""
    rows = links.rows
    if rows.size == 0:
        return None
    start, end = events.start_us[rows], events.end_us[rows]
    known = links.launch >= 0
    launch_end = np.full(rows.size, np.nan)
    launch_dur = np.full(rows.size, np.nan)
    launch_end[known] = events.end_us[links.launch[known]]
    launch_dur[known] = events.dur_us[links.launch[known]]
    issued = start.copy()
    issued[known] = events.start_us[links.launch[known]]
    return GpuTimeline(rows, start, iv.union(start, end), launch_end, launch_dur, issued)
