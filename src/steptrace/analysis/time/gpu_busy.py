"""The GPU's work in a trace: its rows, merged busy intervals and launch calls.

Contract: ``gpu_busy(events, links) -> GpuBusy | None``, built once per trace and
read by every GPU figure (per step, idle causes, labels). ``None``: the trace holds no
kernel, copy or set, so the GPU was not observed. ``issued_us`` is when the CPU issued
each activity (its launch call's start, else its GPU start), NaN for work launched before
the trace began (``GpuLinks.before_trace``): no step issued it.
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.time.links import GpuLaunches, GpuLinks
from steptrace.trace import intervals as iv
from steptrace.trace.kinds import GRAPH_LAUNCH
from steptrace.trace.table import EventTable


class GpuBusy(msgspec.Struct, frozen=True):
    """GPU work rows, their merged busy intervals and their launch calls, once per trace."""

    rows: NDArray[np.int64]
    start_us: NDArray[np.float64]
    busy: iv.Intervals
    launch_end_us: NDArray[np.float64]  # per GPU row, NaN when no launch call is known
    launch_dur_us: NDArray[np.float64]
    issued_us: NDArray[np.float64]  # launch start, else GPU start; NaN: before the trace
    before_trace: NDArray[np.bool_]  # launched before the trace began (no step issued it)
    any_launch_known: bool  # some row's launch call is known (then launch_end_us has some)
    # per GPU row: replayed by a graph launch (cudaGraphLaunch, ...): one call for the whole
    # graph, so no launch of its own (its launch_dur_us is NaN)
    replayed: NDArray[np.bool_] | None = None


def gpu_busy(events: EventTable, links: GpuLaunches | GpuLinks) -> GpuBusy | None:
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
    issued[links.before_trace] = np.nan
    busy = iv.union(start, end)
    replayed = _replayed(events, links.launch)
    if replayed is not None:
        launch_dur[replayed] = np.nan  # a graph's launch is not any one kernel's
    return GpuBusy(
        rows,
        start,
        busy,
        launch_end,
        launch_dur,
        issued,
        links.before_trace,
        bool(known.any()),
        replayed,
    )


def _replayed(events: EventTable, launch: NDArray[np.int64]) -> NDArray[np.bool_] | None:
    """Per GPU row: its launch call is a graph launch; None when the trace has none."""
    graph = [i for i, n in enumerate(events.names) if GRAPH_LAUNCH.match(n)]
    if not graph:
        return None
    known = launch >= 0
    replayed = np.zeros(launch.size, dtype=bool)
    ids = events.name_id[launch[known]]
    replayed[known] = np.isin(ids, np.array(graph, dtype=ids.dtype))
    return replayed
