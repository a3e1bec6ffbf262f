"""Lanes of slices: each CPU thread's time cut by its innermost event, each stream's work.

Contract: ``gpu_slices(events, launches) -> Slices`` (a stream's kernels, copies and sets,
a part already covered by earlier work on the stream cut off) and ``cpu_slices(events,
blocking, split_at) -> Slices`` (a thread's time cut by its innermost operator, label,
Python function, runtime or driver call; time inside none is a gap; a slice is cut where
a blocking call's wait ended). Times in integer ns from the trace's origin, slices sorted
by lane then start; the kinds are ``CPU``, ``LAUNCH`` (a runtime or driver call),
``GPU`` and ``WAIT`` (a blocking call).
"""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.time.links import GpuLaunches
from steptrace.trace.kinds import LAUNCHES, Kind
from steptrace.trace.nesting import parents_of_rows
from steptrace.trace.table import EventTable

Ints = NDArray[np.int64]
Lanes = NDArray[np.int32]
Bools = NDArray[np.bool_]

CPU, LAUNCH, GPU, WAIT, IDLE = 0, 1, 2, 3, 4  # IDLE: no slice, time where nothing ran
KIND_NAMES = ("cpu", "launch", "gpu", "wait", "idle")
_CPU_KINDS = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.PYTHON_FUNCTION, *LAUNCHES)
_BLOCKING = re.compile(r"Synchroni[sz]e|^(cuda|hip)Memcpy(2D|3D)?$|^cuMemcpy[A-Za-z]*$")


class Slices(NamedTuple):
    lane: Lanes  # the thread index of the event table
    start: Ints
    end: Ints
    row: Ints  # the event the slice belongs to
    kind: NDArray[np.int8]


def to_ns(us: NDArray[np.float64]) -> Ints:
    """Float µs from the origin -> integer ns (exact for the table's times)."""
    return np.rint(us * 1000.0).astype(np.int64)


def blocking_names(events: EventTable) -> Bools:
    """Per name id (and one more for none): a blocking call's name (a synchronization, a
    synchronous copy)."""
    return np.array([bool(_BLOCKING.search(n)) for n in events.names] + [False])


def gpu_slices(events: EventTable, launches: GpuLaunches) -> Slices:
    """Each stream's work, parts covered by earlier work cut off."""
    rows = launches.rows
    lane = events.thread_id[rows].astype(np.int32)
    order = np.lexsort((np.arange(rows.size), lane))  # by lane, table (start) order within
    rows, lane = rows[order], lane[order]
    start, end = to_ns(events.start_us[rows]), to_ns(events.end_us[rows])
    first = np.ones(rows.size, dtype=bool)
    first[1:] = lane[1:] != lane[:-1]
    covered = _lane_cummax(end, first)
    start = np.where(first, start, np.maximum(start, np.roll(covered, 1)))
    kept = end > start
    kind = np.full(int(kept.sum()), GPU, dtype=np.int8)
    return Slices(lane[kept], start[kept], end[kept], rows[kept], kind)


def _lane_cummax(values: Ints, first: Bools) -> Ints:
    """Running maximum of ``values`` restarted at each lane's first row."""
    if not values.size:
        return values
    group = (np.cumsum(first) - 1).astype(np.int64)
    low = int(values.min())
    span = int(values.max()) - low + 1
    shifted = (values - low) + group * span
    result: Ints = np.maximum.accumulate(shifted) - group * span + low
    return result


def cpu_slices(events: EventTable, blocking: Ints, split_at: Ints) -> Slices:
    """Each thread's time cut by its innermost event, split at ``split_at`` on the threads
    of the blocking calls ``blocking`` (the ends of their waits)."""
    rows = np.flatnonzero(events.mask(*_CPU_KINDS) & (events.dur_us > 0))
    parent = parents_of_rows(events, rows)
    thread = events.thread_id[rows]
    start, end = to_ns(events.start_us[rows]), to_ns(events.end_us[rows])
    b_thread, b_time, b_owner = _boundaries(thread, start, end, parent, events, blocking, split_at)
    s_start, s_end, owner = b_time[:-1], b_time[1:], b_owner[:-1]
    keep = (b_thread[1:] == b_thread[:-1]) & (owner >= 0) & (s_end > s_start)
    o = np.maximum(owner, 0)
    keep &= (start[o] <= s_start) & (end[o] >= s_end)  # badly nested: left a gap
    owner, s_start, s_end = owner[keep], s_start[keep], s_end[keep]
    row = rows[owner]
    kind = np.where(events.mask(*LAUNCHES)[row], LAUNCH, CPU).astype(np.int8)
    waits = np.zeros(len(events), dtype=bool)
    waits[blocking] = True
    named = blocking_names(events)[events.name_id[row]]
    kind[waits[row] | (named & (kind == LAUNCH))] = WAIT
    return Slices(thread[owner].astype(np.int32), s_start, s_end, row, kind)


def _boundaries(
    thread: Lanes,
    start: Ints,
    end: Ints,
    parent: Ints,
    events: EventTable,
    blocking: Ints,
    split_at: Ints,
) -> tuple[Lanes, Ints, Ints]:
    """Per thread and time, the innermost event from then on (-1: none): after the ends
    (inner first), the starts (outer first) and the split points at that time."""
    n, m = start.size, split_at.size
    index = np.arange(n, dtype=np.int64)
    b_thread = np.concatenate([thread, thread, events.thread_id[blocking]])
    b_time = np.concatenate([end, start, split_at])
    b_type = np.concatenate([np.zeros(n), np.ones(n), np.full(m, 2)]).astype(np.int8)
    b_key = np.concatenate([-index, index, np.zeros(m, dtype=np.int64)])
    b_owner = np.concatenate([parent, index, np.full(m, -2, dtype=np.int64)])
    order = np.lexsort((b_key, b_type, b_time, b_thread))
    b_thread, b_time, b_owner = b_thread[order], b_time[order], b_owner[order]
    b_owner = _carry_owner(b_owner, b_thread)
    last = np.ones(b_time.size, dtype=bool)
    last[:-1] = (b_thread[1:] != b_thread[:-1]) | (b_time[1:] != b_time[:-1])
    return b_thread[last], b_time[last], b_owner[last]


def _carry_owner(owner: Ints, thread: Lanes) -> Ints:
    """A split point (-2) keeps the owner before it on its thread (none: -1)."""
    if not owner.size:
        return owner
    index = np.where(owner != -2, np.arange(owner.size), 0)
    source = np.maximum.accumulate(index)
    carried = owner[source]
    carried[(owner == -2) & ((thread[source] != thread) | (owner[source] == -2))] = -1
    return carried
