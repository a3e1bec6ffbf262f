"""The GPU's idle gaps inside a step, each with its cause when the trace can tell it.

Contract: ``idle_gaps(timeline, sync_ends_us, window) -> IdleGaps``, pure: the time in
the step's window ``[start, end)`` not covered by the union of all GPU work (every stream
and device), in integer ns from the step's start, in time order, as columns;
``IdleGaps.drawn(keep)`` makes ``Gap``s of those kept. Causes, read with
the criteria of ``steptrace.analysis.idle``:

- ``after a synchronization``: a blocking call (``gpu.SYNC_CALLS``) ended inside the gap:
  the host waited for the GPU, then the GPU waited for the host;
- ``waiting on the host``: the launch call of the next GPU activity ended only after the
  gap began (the queue had drained; the same test as ``idle.waiting_on_host_us``);
- ``no GPU work after it``: nothing ran on the GPU after the gap, in the whole trace;
- ``not known``: the next activity had been launched before the gap began (a dependency,
  an event wait, or a launch the trace does not link).
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.gpu import SYNC_CALLS
from steptrace.analysis.gpu_busy import GpuBusy
from steptrace.analysis.steps import StepWindow
from steptrace.trace import intervals as iv
from steptrace.trace.kinds import LAUNCHES
from steptrace.trace.table import EventTable

AFTER_SYNC = "after a synchronization"
WAITING_ON_HOST = "waiting on the host"
NOTHING_AFTER = "no GPU work after it"
NOT_KNOWN = "not known"


class Gap(msgspec.Struct, frozen=True, array_like=True):
    """GPU idle time in a step, in ns from the step start, and why."""

    start_ns: int
    end_ns: int
    cause: str


class IdleGaps(msgspec.Struct, frozen=True, eq=False):
    """A step's idle gaps as columns: ns from the step start, and each one's cause."""

    start_ns: NDArray[np.int64]
    end_ns: NDArray[np.int64]
    cause: NDArray[np.str_]

    def drawn(self, keep: NDArray[np.bool_]) -> tuple[Gap, ...]:
        return tuple(
            Gap(a, b, str(c))
            for a, b, c in zip(
                self.start_ns[keep].tolist(),
                self.end_ns[keep].tolist(),
                self.cause[keep].tolist(),
                strict=True,
            )
        )


def sync_ends(events: EventTable) -> NDArray[np.float64]:
    """The end times of the blocking calls, sorted (µs from the origin)."""
    names = np.array([i for i, n in enumerate(events.names) if n in SYNC_CALLS], dtype=np.int32)
    rows = np.flatnonzero(events.mask(*LAUNCHES) & np.isin(events.name_id, names))
    return np.sort(events.end_us[rows])


def idle_gaps(timeline: GpuBusy, ends_us: NDArray[np.float64], window: StepWindow) -> IdleGaps:
    """The idle gaps of the window, with their causes."""
    lo, hi = window.start_us, window.end_us
    starts, ends = iv.gaps(iv.clip(timeline.busy, lo, hi), lo, hi)
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if starts.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return IdleGaps(empty, empty, np.zeros(0, dtype=np.str_))
    nxt = np.searchsorted(timeline.start_us, ends, side="left")
    has_next = nxt < timeline.start_us.size
    launch_end = timeline.launch_end_us[np.minimum(nxt, timeline.start_us.size - 1)]
    late = has_next & (launch_end > starts)  # NaN (no launch known): False
    first_sync = np.minimum(np.searchsorted(ends_us, starts, side="left"), ends_us.size)
    synced = first_sync < ends_us.size
    synced[synced] = ends_us[first_sync[synced]] < ends[synced]
    causes = np.select(
        [synced, late, ~has_next], [AFTER_SYNC, WAITING_ON_HOST, NOTHING_AFTER], NOT_KNOWN
    )
    lo_ns = round(lo * 1000)
    start_ns = np.rint(starts * 1000).astype(np.int64) - lo_ns
    end_ns = np.rint(ends * 1000).astype(np.int64) - lo_ns
    return IdleGaps(start_ns, end_ns, causes)
