"""Why the GPU sat idle inside a step: one classification, read by the tables and the timeline.

Contract: ``idle_gaps_us(timeline, sync_ends_us, lo, hi) -> IdleSpans``: the time in
``[lo, hi)`` not covered by the union of all GPU work (every stream and device), in time
order, each gap with one cause:

- ``after a synchronization``: from the end of a blocking call (``gpu.SYNC_CALLS``) to
  the gap's end: the host waited for the GPU, then the GPU waited for the host (a gap in
  which a blocking call ends is cut there, its first part read by the causes below);
- ``waiting on the host``: the launch call of the next GPU activity ended only after the
  gap began: the queue had drained and the GPU waited for the CPU to submit work;
- ``no GPU work after it``: nothing ran on the GPU after the gap, in the whole trace;
- ``not known``: the next activity had been launched before the gap began (a dependency,
  an event wait, or a launch the trace does not link).

The first cause that holds decides. ``idle_by_cause_ms`` sums the gaps by cause: the GPU
table's idle columns and the timeline's shaded gaps (``lane_gaps``) are the same gaps, so
their figures agree, and the causes never add up to more than the idle time.
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.gpu_busy import GpuBusy
from steptrace.trace import intervals as iv

AFTER_SYNC = "after a synchronization"
WAITING_ON_HOST = "waiting on the host"
NOTHING_AFTER = "no GPU work after it"
NOT_KNOWN = "not known"
CAUSES = (WAITING_ON_HOST, AFTER_SYNC, NOT_KNOWN, NOTHING_AFTER)


class IdleSpans(msgspec.Struct, frozen=True, eq=False):
    """A window's idle gaps as columns: µs from the origin, and each one's cause."""

    start_us: NDArray[np.float64]
    end_us: NDArray[np.float64]
    cause: NDArray[np.str_]

    def total_ms(self, cause: str) -> float:
        """The idle time of the gaps of this cause, in ms."""
        chosen = self.cause == cause
        return float((self.end_us[chosen] - self.start_us[chosen]).sum()) / 1000


def idle_gaps_us(
    timeline: GpuBusy, sync_ends_us: NDArray[np.float64], lo: float, hi: float
) -> IdleSpans:
    """The idle gaps of ``[lo, hi)``, each with its cause (see the module)."""
    starts, ends = iv.gaps(iv.clip(timeline.busy, lo, hi), lo, hi)
    keep = ends > starts
    starts, ends, synced = _cut_at_syncs(starts[keep], ends[keep], sync_ends_us)
    if starts.size == 0:
        return IdleSpans(starts, ends, np.zeros(0, dtype=np.str_))
    nxt = np.searchsorted(timeline.start_us, ends, side="left")
    has_next = nxt < timeline.start_us.size
    launch_end = timeline.launch_end_us[np.minimum(nxt, timeline.start_us.size - 1)]
    late = has_next & (launch_end > starts)  # NaN (no launch known): False
    causes = np.select(
        [synced, late, ~has_next], [AFTER_SYNC, WAITING_ON_HOST, NOTHING_AFTER], NOT_KNOWN
    )
    return IdleSpans(starts, ends, causes)


def _cut_at_syncs(
    starts: NDArray[np.float64], ends: NDArray[np.float64], sync_ends: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """The gaps, each cut at the first blocking call's end inside it; and whether each
    piece starts at such an end (it is then idle after a synchronization)."""
    first = np.searchsorted(sync_ends, starts, side="left")
    inside = first < sync_ends.size
    at = np.full(starts.size, np.inf)
    at[inside] = sync_ends[first[inside]]
    inside &= at < ends
    cut = inside & (at > starts)  # the gap before the call's end, then after it
    piece_starts = np.concatenate((starts, at[cut]))
    piece_ends = np.concatenate((np.where(cut, at, ends), ends[cut]))
    synced = np.concatenate((inside & ~cut, np.ones(int(cut.sum()), dtype=bool)))
    order = np.argsort(piece_starts, kind="stable")
    return piece_starts[order], piece_ends[order], synced[order]
