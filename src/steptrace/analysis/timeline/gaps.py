"""The GPU's idle gaps inside a step, as the timeline draws them, each with its cause.

Contract: ``idle_gaps(timeline, syncs, window) -> IdleGaps``, pure: the gaps of
``analysis.time.idle`` (the same ones the GPU table sums by cause), in integer ns from the
step's start, in time order, as columns; ``IdleGaps.drawn(keep)`` makes ``Gap``s of those
kept.
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.time.gpu import SYNC_CALLS
from steptrace.analysis.time.gpu_busy import GpuBusy
from steptrace.analysis.time.idle import (
    AFTER_SYNC,
    CAUSES,
    NOT_KNOWN,
    NOTHING_AFTER,
    WAITING_ON_HOST,
    SyncCalls,
    idle_gaps_us,
)
from steptrace.analysis.time.steps import StepWindow
from steptrace.trace.kinds import LAUNCHES
from steptrace.trace.table import EventTable

__all__ = [
    "AFTER_SYNC",
    "CAUSES",
    "NOTHING_AFTER",
    "NOT_KNOWN",
    "WAITING_ON_HOST",
    "Gap",
    "IdleGaps",
    "idle_gaps",
    "sync_calls",
]


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


def sync_calls(events: EventTable) -> SyncCalls:
    """The blocking calls: when each ended and how long it blocked the host."""
    names = np.array([i for i, n in enumerate(events.names) if n in SYNC_CALLS], dtype=np.int32)
    rows = np.flatnonzero(events.mask(*LAUNCHES) & np.isin(events.name_id, names))
    return SyncCalls.of(events.start_us[rows], events.end_us[rows])


def idle_gaps(timeline: GpuBusy, syncs: SyncCalls, window: StepWindow) -> IdleGaps:
    """The idle gaps of the window, with their causes."""
    spans = idle_gaps_us(timeline, syncs, window.start_us, window.end_us)
    lo_ns = round(window.start_us * 1000)
    start_ns = np.rint(spans.start_us * 1000).astype(np.int64) - lo_ns
    end_ns = np.rint(spans.end_us * 1000).astype(np.int64) - lo_ns
    return IdleGaps(start_ns, end_ns, spans.cause)
