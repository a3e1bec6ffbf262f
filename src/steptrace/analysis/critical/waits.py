"""What blocking calls and streams waited for: the cross dependencies of synchronizations.

Contract: ``host_waits(events, launches, gpu, sync) -> HostWaits``: each blocking runtime
call (a synchronization ``cuda_sync`` names, else one its name says blocks; a copy or set
whose own GPU work ended inside its call) and the GPU work that ended last inside it on
the streams it waited for (the stream ``cuda_sync`` names, else every stream).
``syncs(events, sync)``: the ``cuda_sync`` events and their kinds (``critical_graph``
reads the "Stream Wait Event" ones). ``sync``: the ``cuda_sync`` fields were loaded (the
``sync`` field group).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from steptrace.analysis.critical.slices import (
    Bools,
    Ints,
    Lanes,
    Slices,
    blocking_names,
    to_ns,
)
from steptrace.analysis.time.links import GpuLaunches
from steptrace.trace.kinds import LAUNCHES, Kind
from steptrace.trace.table import EventTable

_WAITS_FOR_HOST = ("Stream Sync", "Context Sync", "Event Sync")


class HostWaits(NamedTuple):
    call: Ints  # the blocking call's row
    at: Ints  # when the GPU work it waited for ended (inside the call)
    lane: Lanes  # that work's stream (lane)
    synchronizes: Bools  # a synchronization (its time before ``at`` only waits), not a copy


def host_waits(events: EventTable, launches: GpuLaunches, gpu: Slices, sync: bool) -> HostWaits:
    """Blocking calls and the end of the work each waited for last (see module)."""
    calls = np.flatnonzero(events.mask(*LAUNCHES))
    call_start, call_end = to_ns(events.start_us[calls]), to_ns(events.end_us[calls])
    lanes_of = _streams_waited(events, calls, sync, gpu)
    bounds = {lane: (a, b) for lane, a, b in _runs(gpu.lane)}
    found: list[tuple[int, int, int]] = []
    for k in np.flatnonzero([w is not None for w in lanes_of]).tolist():
        best, best_lane = int(call_start[k]), -1
        for lane in lanes_of[k] or ():
            lo, hi = bounds.get(lane, (0, 0))
            i = lo + int(np.searchsorted(gpu.end[lo:hi], call_end[k], side="right")) - 1
            if i >= lo and gpu.end[i] > best:
                best, best_lane = int(gpu.end[i]), lane
        if best_lane >= 0:
            found.append((int(calls[k]), best, best_lane))
    own = _own_copies(events, launches, gpu)
    listed = np.array(found, dtype=np.int64).reshape(-1, 3)
    call = np.concatenate([listed[:, 0], own.call])
    at = np.concatenate([listed[:, 1], own.at])
    stream = np.concatenate([listed[:, 2].astype(np.int32), own.lane])
    synchronizes = np.arange(call.size) < len(found)
    keep = _latest_per_call(call, at)
    return HostWaits(call[keep], at[keep], stream[keep], synchronizes[keep])


def _runs(lane: Lanes) -> list[tuple[int, int, int]]:
    """(lane, first, end) of each run of equal values in a lane-sorted array."""
    if not lane.size:
        return []
    starts = np.flatnonzero(np.append(True, lane[1:] != lane[:-1]))
    ends = np.append(starts[1:], lane.size)
    return [(int(lane[a]), int(a), int(b)) for a, b in zip(starts, ends, strict=True)]


def _latest_per_call(call: Ints, at: Ints) -> Ints:
    if not call.size:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((at, call))
    last = np.ones(order.size, dtype=bool)
    last[:-1] = call[order][1:] != call[order][:-1]
    return order[last]


def _own_copies(events: EventTable, launches: GpuLaunches, gpu: Slices) -> HostWaits:
    """Launch calls inside which their own copy or set ended (a pageable copy): a wait."""
    launch = np.full(len(events), -1, dtype=np.int64)
    launch[launches.rows] = launches.launch
    call = launch[gpu.row]
    known = (call >= 0) & events.mask(Kind.MEMCPY, Kind.MEMSET)[gpu.row]
    c = np.maximum(call, 0)
    inside = known & (gpu.end > to_ns(events.start_us[c])) & (gpu.end < to_ns(events.end_us[c]))
    return HostWaits(
        call[inside], gpu.end[inside], gpu.lane[inside], np.zeros(int(inside.sum()), dtype=bool)
    )


def _streams_waited(
    events: EventTable, calls: Ints, sync: bool, gpu: Slices
) -> list[tuple[int, ...] | None]:
    """Per runtime call: the lanes of the streams it blocked on, None if it did not."""
    every = tuple(int(x) for x in np.unique(gpu.lane))
    by_stream = lanes_by_stream(events, gpu.lane, gpu.row)
    waited: dict[int, tuple[int, ...]] = {}
    for r, what in syncs(events, sync):
        if what not in _WAITS_FOR_HOST:
            continue
        stream = int(events.stream[r]) if what == "Stream Sync" else -1
        if what == "Event Sync":
            stream = int(events.column("wait_on_stream")[r])
        waited[int(events.correlation[r])] = by_stream.get(stream, every) if stream >= 0 else every
    named = blocking_names(events)[events.name_id[calls]].tolist()
    correlation = events.correlation[calls].tolist()
    return [waited.get(c, every if n else None) for c, n in zip(correlation, named, strict=True)]


def syncs(events: EventTable, sync: bool) -> list[tuple[int, str | None]]:
    """The ``cuda_sync`` events' rows and kinds (none when the fields were not loaded)."""
    if not sync:
        return []
    rows = np.flatnonzero(events.kind == Kind.CUDA_SYNC)
    kinds = events.column("sync_kind")[rows].tolist()
    return [(r, events.text(int(k))) for r, k in zip(rows.tolist(), kinds, strict=True)]


def lanes_by_stream(events: EventTable, lanes: Lanes, rows: Ints) -> dict[int, tuple[int, ...]]:
    """The lanes holding each stream id's work."""
    found: dict[int, set[int]] = {}
    if lanes.size:
        pairs = np.unique(np.stack([lanes.astype(np.int64), events.stream[rows]]), axis=1)
        for lane, stream in pairs.T.tolist():
            found.setdefault(int(stream), set()).add(int(lane))
    return {s: tuple(sorted(v)) for s, v in found.items()}
