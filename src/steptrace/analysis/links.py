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

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.trace.kinds import GPU_WORK, LAUNCHES, Kind
from steptrace.trace.nesting import parents
from steptrace.trace.table import EventTable

Rows = NDArray[np.int64]


class CpuTree(msgspec.Struct, frozen=True):
    ops: Rows  # event rows of CPU operators
    op_parent: Rows  # per op: index into ``ops`` of its innermost enclosing op, or -1
    launches: Rows  # event rows of runtime and driver calls
    launch_owner: Rows  # per launch call: index into ``ops`` of the op around it, or -1


class GpuLinks(msgspec.Struct, frozen=True):
    rows: Rows  # event rows of kernels, copies and sets
    launch: Rows  # per GPU row: event row of its launch call, or -1
    owner: Rows  # per GPU row: event row of the operator that launched it, or -1
    before_trace: NDArray[np.bool_]  # per GPU row: launched before the trace began


def cpu_tree(events: EventTable) -> CpuTree:
    """Operators and launch calls nested on their threads."""
    ops = np.flatnonzero(events.kind == Kind.CPU_OP)
    launches = np.flatnonzero(events.mask(*LAUNCHES))
    rows = np.concatenate((ops, launches))
    parent = parents(events.start_us[rows], events.end_us[rows], events.thread_id[rows])
    is_op = np.arange(rows.size) < ops.size
    owner = parent.copy()  # climb through launch calls (runtime > driver) to an operator
    while (climb := (owner >= 0) & ~is_op[np.maximum(owner, 0)]).any():
        owner[climb] = parent[owner[climb]]
    return CpuTree(ops, owner[: ops.size], launches, owner[ops.size :])


def gpu_links(events: EventTable, tree: CpuTree) -> GpuLinks:
    """Each GPU activity's launch call and operator, through ``correlation``."""
    rows = np.flatnonzero(events.mask(*GPU_WORK))
    launch = np.full(rows.size, -1, dtype=np.int64)
    owner = np.full(rows.size, -1, dtype=np.int64)
    correlated = tree.launches[events.correlation[tree.launches] >= 0]
    before = np.zeros(rows.size, dtype=bool)
    if correlated.size and rows.size:
        ids, first = np.unique(events.correlation[correlated], return_index=True)
        wanted = events.correlation[rows]
        at = np.clip(np.searchsorted(ids, wanted), 0, ids.size - 1)
        found = (ids[at] == wanted) & (wanted >= 0)
        launch[found] = correlated[first[at[found]]]
        owner_of_launch = np.full(len(events), -1, dtype=np.int64)
        known = tree.launch_owner >= 0
        owner_of_launch[tree.launches[known]] = tree.ops[tree.launch_owner[known]]
        owner[found] = owner_of_launch[launch[found]]
        before = ~found & (wanted >= 0) & (wanted < ids[0])
    return GpuLinks(rows, launch, owner, before)
