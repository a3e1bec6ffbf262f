"""Who launched what: the CPU operator tree and the link from GPU work to its launch call.

Contract: ``cpu_tree(events) -> CpuTree`` recovers, in one nesting pass, each operator's
enclosing operator and the operator around each runtime/driver call; ``gpu_links(events,
tree) -> GpuLinks`` follows ``correlation`` from every kernel, copy and set to the call
that launched it and to that call's operator. Everything that attributes GPU work to the
CPU (operators, labels, copies, launch delays) reads these two results.

An unlinked activity whose correlation id is below every launch call's was launched before
the profiler started (ids only grow): ``GpuLinks.before_trace`` marks it, and it belongs to
no step. Without any correlated launch call nothing can be told, and nothing is marked.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.trace.kinds import GPU_WORK, LAUNCHES, Kind
from steptrace.trace.nesting import parents_of_rows
from steptrace.trace.table import EventTable

Rows = NDArray[np.int64]


class CpuTree(msgspec.Struct, frozen=True):
    ops: Rows  # event rows of CPU operators
    op_parent: Rows  # per op: index into ``ops`` of its innermost enclosing op, or -1
    launches: Rows  # event rows of runtime and driver calls
    launch_owner: Rows  # per launch call: index into ``ops`` of the op around it, or -1


class GpuLaunches(msgspec.Struct, frozen=True):
    rows: Rows  # event rows of kernels, copies and sets
    launch: Rows  # per GPU row: event row of its launch call, or -1
    before_trace: NDArray[np.bool_]  # per GPU row: launched before the trace began


class GpuLinks(msgspec.Struct, frozen=True):
    rows: Rows  # event rows of kernels, copies and sets
    launch: Rows  # per GPU row: event row of its launch call, or -1
    owner: Rows  # per GPU row: event row of the operator that launched it, or -1
    before_trace: NDArray[np.bool_]  # per GPU row: launched before the trace began


def cpu_tree(events: EventTable, leave_out: NDArray[np.bool_] | None = None) -> CpuTree:
    """Operators and launch calls nested on their threads; ``leave_out``: rows that are
    no operator of the trace's work (the compiler's: ``compiler.compiler_rows``)."""
    is_op = events.kind == Kind.CPU_OP
    if leave_out is not None:
        is_op &= ~leave_out
    rows = _ops_first_on_ties(events, np.flatnonzero(is_op | events.mask(*LAUNCHES)), is_op)
    is_op = is_op[rows]
    index: type[np.signedinteger[Any]] = np.int32 if rows.size < 2**31 else np.int64
    parent = parents_of_rows(events, rows).astype(index, copy=False)  # int32 most often
    owner = parent.copy()  # climb through launch calls (runtime > driver) to an operator
    climbing = np.flatnonzero(owner >= 0).astype(index, copy=False)
    while (climbing := climbing[~is_op[owner[climbing]]]).size:
        owner[climbing] = parent[owner[climbing]]
        climbing = climbing[owner[climbing] >= 0]
    del parent, climbing
    op_index = np.cumsum(is_op, dtype=index) - 1  # per row: its index among the operators
    found = owner >= 0
    owner[found] = op_index[owner[found]]
    del op_index, found
    return CpuTree(
        rows[is_op],
        owner[is_op].astype(np.int64),
        rows[~is_op],
        owner[~is_op].astype(np.int64),
    )


def _ops_first_on_ties(events: EventTable, rows: Rows, is_op: NDArray[np.bool_]) -> Rows:
    """``rows`` in table order, but where an operator and a call start and end together,
    the operator first: it holds the call, whichever the file wrote first."""
    start, dur = events.start_us[rows], events.dur_us[rows]
    tied = np.flatnonzero((start[1:] == start[:-1]) & (dur[1:] == dur[:-1]))
    del start, dur
    if not tied.size:
        return rows
    tied_to_previous = np.zeros(rows.size, dtype=bool)
    tied_to_previous[tied + 1] = True
    members = np.flatnonzero(tied_to_previous | np.append(tied_to_previous[1:], False))
    group = np.cumsum(~tied_to_previous[members])
    reordered = rows.copy()
    reordered[members] = rows[members[np.lexsort((~is_op[rows[members]], group))]]
    return reordered


def gpu_launches(events: EventTable) -> GpuLaunches:
    """Each GPU activity's launch call, through ``correlation`` (no operator tree needed)."""
    rows = np.flatnonzero(events.mask(*GPU_WORK))
    launch = np.full(rows.size, -1, dtype=np.int64)
    launches = np.flatnonzero(events.mask(*LAUNCHES))
    correlated = launches[events.correlation[launches] >= 0]
    before = np.zeros(rows.size, dtype=bool)
    if correlated.size and rows.size:
        ids, first = np.unique(events.correlation[correlated], return_index=True)
        wanted = events.correlation[rows]
        at = np.clip(np.searchsorted(ids, wanted), 0, ids.size - 1)
        found = (ids[at] == wanted) & (wanted >= 0)
        launch[found] = correlated[first[at[found]]]
        before = ~found & (wanted >= 0) & (wanted < ids[0])
    return GpuLaunches(rows, launch, before)


def gpu_links(events: EventTable, tree: CpuTree, launched: GpuLaunches | None = None) -> GpuLinks:
    """Each GPU activity's launch call and operator (``launched``: its ``gpu_launches``,
    when found already)."""
    launched = launched if launched is not None else gpu_launches(events)
    owner = np.full(launched.rows.size, -1, dtype=np.int64)
    linked = np.flatnonzero(launched.launch >= 0)
    call = np.searchsorted(tree.launches, launched.launch[linked])  # launches are increasing
    op = tree.launch_owner[call]
    owner[linked[op >= 0]] = tree.ops[op[op >= 0]]
    return GpuLinks(launched.rows, launched.launch, owner, launched.before_trace)
