"""Why the GPU sat idle inside a step: one classification, read by the tables and the timeline.

Contract: ``idle_gaps_us(timeline, syncs, lo, hi) -> IdleSpans``: the time in ``[lo, hi)``
not covered by the union of all GPU work (every stream and device), in time order, each
gap with one cause:

- ``after a synchronization``: from the end of a blocking call (``gpu.SYNC_CALLS``), for
  at most as long as the host was blocked in it: the host waited for the GPU, then the GPU
  waited for the host. Without the call the host would have run ahead by that much at
  most, so no more of the gap is the call's (a gap in which a blocking call ends is cut
  there and at that bound; the parts before and after are read by the causes below);
- ``waiting on the host``: the launch call of the next GPU activity ended only after the
  gap began: the queue had drained and the GPU waited for the CPU to submit work;
- ``no GPU work after it``: nothing ran on the GPU after the gap, in the whole trace;
- ``not known``: the next activity had been launched before the gap began (a dependency,
  an event wait, or a launch the trace does not link).

The first cause that holds decides. ``idle_by_cause_ms`` sums the gaps by cause: the GPU
table's idle columns and the timeline's shaded gaps (``timeline.gaps``) are the same gaps, so
their figures agree, and the causes never add up to more than the idle time.
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.time.gpu_busy import GpuBusy
from steptrace.trace import intervals as iv

AFTER_SYNC = "after a synchronization"
WAITING_ON_HOST = "waiting on the host"
NOTHING_AFTER = "no GPU work after it"
NOT_KNOWN = "not known"
CAUSES = (WAITING_ON_HOST, AFTER_SYNC, NOT_KNOWN, NOTHING_AFTER)


class SyncCalls(msgspec.Struct, frozen=True, eq=False):
    """The blocking calls, sorted by end: when each returned (µs from the origin) and how
    long the host was blocked in it (µs)."""

    end_us: NDArray[np.float64]
    blocked_us: NDArray[np.float64]

    @classmethod
    def of(cls, start_us: NDArray[np.float64], end_us: NDArray[np.float64]) -> SyncCalls:
        order = np.argsort(end_us, kind="stable")
        return cls(end_us[order], (end_us - start_us)[order])


NO_SYNC = SyncCalls(np.zeros(0), np.zeros(0))


class IdleSpans(msgspec.Struct, frozen=True, eq=False):
    """A window's idle gaps as columns: µs from the origin, and each one's cause."""

    start_us: NDArray[np.float64]
    end_us: NDArray[np.float64]
    cause: NDArray[np.str_]

    def total_ms(self, cause: str) -> float:
        """The idle time of the gaps of this cause, in ms."""
        chosen = self.cause == cause
        return float((self.end_us[chosen] - self.start_us[chosen]).sum()) / 1000


def idle_gaps_us(timeline: GpuBusy, syncs: SyncCalls, lo: float, hi: float) -> IdleSpans:
    """The idle gaps of ``[lo, hi)``, each with its cause (see the module)."""
    starts, ends = iv.gaps(iv.clip(timeline.busy, lo, hi), lo, hi)
    keep = ends > starts
    starts, ends, synced = _cut_at_syncs(starts[keep], ends[keep], syncs)
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
    starts: NDArray[np.float64], ends: NDArray[np.float64], syncs: SyncCalls
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """The gaps, each cut where the first blocking call inside it ends and again as long
    after as the host was blocked in it; and whether each piece is the one in between
    (idle after a synchronization)."""
    first = np.searchsorted(syncs.end_us, starts, side="left")
    inside = first < syncs.end_us.size
    picked = np.minimum(first, max(syncs.end_us.size - 1, 0))
    at = np.where(inside, syncs.end_us[picked] if syncs.end_us.size else ends, ends)
    inside &= at < ends
    at = np.where(inside, at, ends)
    blocked = syncs.blocked_us[picked] if syncs.end_us.size else np.zeros(starts.size)
    stop = np.where(inside, np.minimum(ends, at + blocked), ends)
    piece_starts = np.concatenate((starts, at, stop))
    piece_ends = np.concatenate((at, stop, ends))
    synced = np.concatenate(
        (
            np.zeros(starts.size, dtype=bool),
            np.ones(starts.size, dtype=bool),
            np.zeros(starts.size, dtype=bool),
        )
    )
    keep = piece_ends > piece_starts
    order = np.argsort(piece_starts[keep], kind="stable")
    return piece_starts[keep][order], piece_ends[keep][order], synced[keep][order]
