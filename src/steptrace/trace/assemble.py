"""The builder's batches -> the trace's tables, sorted, on one clock (``assemble``).

Complete events are sorted by start, longer first on ties, so that a parent precedes what
it contains; times are rebased on the first usable event (``origin_ns``) exactly, in
integer nanoseconds, before they become float microseconds. Events whose ``ts`` or ``dur``
cannot be used are left out and counted (``Skipped``). The batches are consumed column by
column, each freed once taken, so that the columns are held about once (not twice) while
the table is built; once the order is known, a helper thread puts half of the columns in
it while this one does the times (numpy's take releases the GIL: both run at once).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from steptrace.trace import heap
from steptrace.trace.arrays import by_start_longer_first, fits_int32
from steptrace.trace.columns import Batch, Columns
from steptrace.trace.fields import MISSING, Field, Value
from steptrace.trace.table import EventTable, FlowTable, InstantTable, Sparse
from steptrace.trace.threads import helper_for
from steptrace.trace.timestamps import LIMIT_NS, NOT_A_NUMBER, OK, OUT_OF_RANGE

Ints = NDArray[np.int64]
Rows = NDArray[np.intp]
_HELPED = ("kind", "name_id", "raw_thread")  # the core columns this thread takes


class Skipped(NamedTuple):
    """Events left out for their ``ts`` or ``dur``, by reason."""

    not_a_number: int = 0  # missing, a string, null...
    negative: int = 0  # a negative duration
    out_of_range: int = 0  # beyond ±2**62 ns, or ending there
    other_events: int = 0  # instants and flow ends whose ``ts`` cannot be used


class Tables(NamedTuple):
    events: EventTable
    instants: InstantTable | None
    flows: FlowTable | None
    skipped: Skipped


def assemble(columns: Columns) -> Tables:
    """The tables of what a builder took (see module)."""
    batches = columns.batches
    total = sum(len(b["kind"]) for b in batches)
    offsets = np.cumsum([0, *(len(b["kind"]) for b in batches)])[:-1]
    start = _pop(batches, "start_ns", total)
    dur = _pop(batches, "dur_ns", total)
    order, skipped = _order(batches, start, dur, total)
    thread_of_raw, threads = columns.threads
    dense = [f for f in columns.fields if not f.sparse]
    compact = {f.column for f in dense if f.value is Value.INT}
    with helper_for(total) as helper:
        gathered = helper.submit(_gather, batches, [f.column for f in dense], order, total, compact)
        origin, start_ns, dur_ns = _sorted_times(start, dur, order)
        del start, dur
        start_us, dur_us = start_ns / 1000, dur_ns / 1000
        end_us = np.add(start_ns, dur_ns, out=start_ns) / 1000  # start_ns not needed after
        del start_ns, dur_ns
        sparse = _sparse(batches, offsets, [f for f in columns.fields if f.sparse], order, total)
        core = _gather(batches, list(_HELPED), order, total)
    events = EventTable(
        kind=core["kind"],
        name_id=core["name_id"],
        names=columns.names,
        thread_id=thread_of_raw[core["raw_thread"]],
        threads=threads,
        start_us=start_us,
        dur_us=dur_us,
        end_us=end_us,
        columns=gathered.result(),
        sparse=sparse,
        texts=columns.texts,
        origin_ns=origin,
    )
    instants, bad_instants = _instants(columns, origin, thread_of_raw)
    flows, bad_flows = _flows(columns, origin, thread_of_raw)
    return Tables(events, instants, flows, skipped._replace(other_events=bad_instants + bad_flows))


def _pop(batches: list[Batch], name: str, total: int, compact: bool = False) -> NDArray[Any]:
    """A column of every batch, concatenated, and taken out of the batches (whose memory
    is given back at once: see ``heap``); ``compact``: an integer column whose values all
    fit in int32 is made int32 (half the memory: ids, devices and streams do)."""
    parts = [batch.pop(name) for batch in batches]
    column: NDArray[Any]
    if compact and parts and all(fits_int32(p) for p in parts):
        column = np.concatenate(parts, dtype=np.int32, casting="same_kind")
    else:
        column = np.concatenate(parts) if parts else np.zeros(0)
    del parts
    if total >= heap.TRIM_ROWS:  # a few ms each: worth it only for large tables
        heap.release_freed_memory()
    return column


def _gather(
    batches: list[Batch],
    names: list[str],
    order: Rows,
    total: int,
    compact: frozenset[str] | set[str] = frozenset(),
) -> dict[str, Any]:
    """Columns in table order, their batches let go; those named in ``compact`` int32
    where their values fit (``_pop``)."""
    return {name: _pop(batches, name, total, name in compact)[order] for name in names}


def _order(batches: list[Batch], start: Ints, dur: Ints, total: int) -> tuple[Rows, Skipped]:
    """The usable rows by start, longer first on ties; the others counted by reason."""
    statuses = np.maximum(_pop(batches, "start_status", total), _pop(batches, "dur_status", total))
    negative = (statuses == OK) & (dur < 0)
    overflow = (statuses == OK) & ~negative & (start >= LIMIT_NS - dur)
    usable = (statuses == OK) & ~negative & ~overflow
    skipped = Skipped(
        not_a_number=int((statuses == NOT_A_NUMBER).sum()),
        negative=int(negative.sum()),
        out_of_range=int((statuses == OUT_OF_RANGE).sum() + overflow.sum()),
    )
    del statuses, negative, overflow
    if usable.all():
        return by_start_longer_first(start, dur), skipped
    rows = np.flatnonzero(usable)
    return rows[by_start_longer_first(start[rows], dur[rows])], skipped


def _sorted_times(start: Ints, dur: Ints, order: Rows) -> tuple[int, Ints, Ints]:
    """The origin and, in table order, starts from it and durations (integer ns)."""
    start = start[order]
    origin = int(start[0]) if order.size else 0
    start -= origin  # exact: |values| < 2**62
    return origin, start, dur[order]


def _sparse(
    batches: list[Batch], offsets: Ints, fields: list[Field], order: Rows, total: int
) -> dict[str, Sparse]:
    """The sparse fields of the usable rows, by their row in the table (increasing)."""
    found: dict[str, Sparse] = {}
    placed: dict[tuple[object, ...], tuple[Rows, Rows]] = {}  # per carriers: (rows, which)
    for field in fields:
        written = (
            np.concatenate(
                [b.pop(f"{field.column}.rows") + o for b, o in zip(batches, offsets, strict=True)]
            ).astype(np.int64)
            if batches
            else np.zeros(0, np.int64)
        )
        values = _pop(batches, field.column, total) if batches else np.zeros(0)
        key = (field.carriers, field.names)
        if key not in placed:
            placed[key] = _placed(written, order, total)
        rows, which = placed[key]
        found[field.column] = Sparse(rows=rows.astype(np.int64), values=values[which])
    return found


def _placed(written: Ints, order: Rows, total: int) -> tuple[Rows, Rows]:
    """Where rows ``written`` (as read, increasing) lie in the table (increasing), and which
    of them each is: by a mask gathered in table order, not a full inverse permutation."""
    is_written = np.zeros(total, dtype=bool)
    is_written[written] = True
    rows = np.flatnonzero(is_written[order])
    return rows, np.searchsorted(written, order[rows])


def _times(batches: list[Batch], origin: int) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """The ``at`` times of instants or flow ends, on the table's clock; which are usable."""
    at = np.concatenate([b["at_ns"] for b in batches])
    status = np.concatenate([b["at_status"] for b in batches])
    usable = (status == OK) & (np.abs(at - origin) < LIMIT_NS)
    return (at - origin) / 1000, usable


def _instants(
    columns: Columns, origin: int, thread_of_raw: NDArray[np.int32]
) -> tuple[InstantTable | None, int]:
    if not columns.instants_kept:
        return None, 0
    batches = columns.instants
    if not batches:
        return _empty_instants(columns), 0
    at_us, usable = _times(batches, origin)
    keep = np.flatnonzero(usable)
    order = keep[np.argsort(at_us[keep], kind="stable")]

    def column(name: str) -> NDArray[Any]:
        return np.concatenate([b[name] for b in batches])[order]

    table = InstantTable(
        name=column("name"),
        thread_id=thread_of_raw[column("raw_thread")],
        at_us=at_us[order],
        columns={f.column: column(f.column) for f in columns.instant_fields},
        texts=columns.texts,
    )
    return table, int(usable.size - keep.size)


def _empty_instants(columns: Columns) -> InstantTable:
    none = np.zeros(0, dtype=np.int32)
    return InstantTable(
        name=none,
        thread_id=none,
        at_us=np.zeros(0),
        columns={f.column: np.zeros(0, dtype=np.int64) for f in columns.instant_fields},
        texts=columns.texts,
    )


def _flows(
    columns: Columns, origin: int, thread_of_raw: NDArray[np.int32]
) -> tuple[FlowTable | None, int]:
    """One row per (category, id): its first start and its first finish (see table)."""
    if not columns.flows_kept:
        return None, 0
    batches = columns.flows
    if not batches:
        return _flow_table(columns, *([np.zeros(0, np.int64)] * 7)), 0

    def column(name: str) -> NDArray[Any]:
        return np.concatenate([b[name] for b in batches])

    at_us, usable = _times(batches, origin)
    phase, flow_id, category = column("phase"), column("flow_id"), column("category")
    keep = usable & (flow_id != MISSING) & (phase != 1)  # steps ("t") are not kept
    rows = np.flatnonzero(keep)
    rows = rows[np.lexsort((at_us[rows], category[rows], flow_id[rows]))]
    pairs = np.stack((category[rows], flow_id[rows]), axis=1)
    keys, flow = np.unique(pairs, axis=0, return_inverse=True)
    flow = flow.reshape(-1)
    start = _first_of(rows, flow, phase[rows] == 0, len(keys))
    finish = _first_of(rows, flow, phase[rows] == 2, len(keys))
    threads = thread_of_raw[column("raw_thread")]
    encloses = column("encloses")
    table = _flow_table(
        columns,
        keys[:, 0].astype(np.int32),
        keys[:, 1].astype(np.int64),
        _at(at_us, start, np.nan),
        _at(threads, start, MISSING).astype(np.int32),
        _at(at_us, finish, np.nan),
        _at(threads, finish, MISSING).astype(np.int32),
        _at(encloses, finish, False).astype(bool),
    )
    return table, int(usable.size - usable.sum())


def _first_of(rows: Rows, flow: Rows, is_phase: NDArray[np.bool_], flows: int) -> Rows:
    """Per flow: the row of its first event of a phase (rows sorted by time), or -1."""
    first = np.full(flows, -1, dtype=np.int64)
    picked = np.flatnonzero(is_phase)
    which, at = np.unique(flow[picked], return_index=True)  # each flow's first occurrence
    first[which] = rows[picked[at]]
    return first


def _at(values: NDArray[Any], rows: Rows, missing: float | int | bool) -> NDArray[Any]:
    """``values`` at ``rows``; ``missing`` where a row is -1."""
    out = values[np.maximum(rows, 0)] if values.size else np.zeros(rows.size, values.dtype)
    found: NDArray[Any] = np.where(rows >= 0, out, np.asarray(missing))
    return found


def _flow_table(columns: Columns, *parts: NDArray[Any]) -> FlowTable:
    category, flow_id, start_us, start_thread, finish_us, finish_thread, encloses = parts
    order = np.lexsort((flow_id, np.where(np.isnan(start_us), finish_us, start_us)))
    return FlowTable(
        category=category[order].astype(np.int32),
        flow_id=flow_id[order].astype(np.int64),
        start_us=start_us[order].astype(np.float64),
        start_thread=start_thread[order].astype(np.int32),
        finish_us=finish_us[order].astype(np.float64),
        finish_thread=finish_thread[order].astype(np.int32),
        finish_encloses=encloses[order].astype(bool),
        texts=columns.texts,
    )
