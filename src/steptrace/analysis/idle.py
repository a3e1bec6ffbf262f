"""Why the GPU sat idle inside a step: waiting on the host to launch, or behind a sync.

Contract: ``waiting_on_host_us(timeline, lo, hi)`` adds up the gaps between two GPU
activities of the step after which the next activity's launch call ended only once the
GPU had gone idle: the queue had drained and the GPU waited for the CPU to submit work.
It is ``None`` when no GPU activity is linked to its launch call. ``after_sync_us(
timeline, sync_ends, lo, hi)`` adds up the idle time from the end of each blocking call
to the next GPU activity: the host waited for the GPU, then the GPU waited for the host.
Both are unions on the timeline, never sums of overlapping pieces.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.gpu_busy import GpuBusy
from steptrace.trace import intervals as iv


def waiting_on_host_us(timeline: GpuBusy, lo: float, hi: float) -> float | None:
    """Idle gaps inside ``[lo, hi]`` whose next GPU activity was launched late."""
    if not timeline.any_launch_known:
        return None
    starts, ends = iv.clip(timeline.busy, lo, hi)
    if starts.size < 2:
        return 0.0
    gap_start, gap_end = ends[:-1], starts[1:]
    first_after = np.searchsorted(timeline.start_us, gap_end, side="left")
    first_after = np.minimum(first_after, timeline.start_us.size - 1)
    launched_late = timeline.launch_end_us[first_after] > gap_start  # NaN: False
    return float((gap_end - gap_start)[launched_late].sum())


def after_sync_us(timeline: GpuBusy, sync_ends: NDArray[np.float64], lo: float, hi: float) -> float:
    """Idle time from each blocking call's end to the next GPU activity (or the step end)."""
    starts, ends = timeline.busy
    t = sync_ends[(sync_ends >= lo) & (sync_ends < hi)]
    if t.size == 0:
        return 0.0
    at = np.searchsorted(starts, t, side="right")  # busy intervals starting after t
    inside_busy = (at > 0) & (ends[np.maximum(at - 1, 0)] > t)
    following = np.where(at < starts.size, starts[np.minimum(at, starts.size - 1)], hi)
    gap_end = np.minimum(following, hi)
    idle = ~inside_busy & (gap_end > t)
    return iv.total(iv.union(t[idle], gap_end[idle]))
