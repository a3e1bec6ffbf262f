"""Which operator calls are the roofline's rows, and which GPU work each of them holds.

Contract: ``row_calls(events, tree, links) -> RowCalls``. Operators nest (``linear`` ->
``addmm`` -> ``copy_``), so a modelled call (``op_models.rank`` > 0) is a row only when no
modelled call around it does heavier work (a rank above its own: the bias copy inside
``addmm`` is part of the GEMM) and no modelled call inside it does work as heavy (the
innermost of a kind is what ran: ``addmm``, not ``linear``). Rows never nest, so no GPU
work counts in two rows.

A row holds the GPU work its call launched and the work its children launched (as
TraceLens counts kernel time under an operator). Where the GPU was observed, a call
without a model that launched work itself, with no modelled call around it, is a row of
its own ("no model": the work is shown, not costed), holding only what it launched.
Without ``links`` (the GPU not observed) the rows are the modelled calls, timed on the CPU.
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.efficiency.op_models import rank
from steptrace.analysis.time.links import CpuTree, GpuLinks
from steptrace.trace.table import EventTable

Rows = NDArray[np.int64]


class RowCalls(msgspec.Struct, frozen=True):
    calls: Rows  # indices into ``tree.ops`` of the calls that are rows
    modelled: NDArray[np.bool_]  # per row call: has a cost model (else launched work itself)
    work: Rows  # event rows of the GPU work the rows hold
    work_call: Rows  # per work row: its row call, as an index into ``calls``


def row_calls(events: EventTable, tree: CpuTree, links: GpuLinks | None) -> RowCalls:
    """The rows' calls and their GPU work (see module)."""
    parent = tree.op_parent
    ranks = np.array([rank(n) for n in events.names], dtype=np.int8)[events.name_id[tree.ops]]
    above = _over_ancestors(parent, ranks)
    below = _over_descendants(parent, ranks)
    is_row = (ranks > 0) & (above <= ranks) & (below < ranks)
    if links is None:
        calls = np.flatnonzero(is_row)
        empty = np.zeros(0, dtype=np.int64)
        return RowCalls(calls, np.ones(calls.size, dtype=bool), empty, empty)
    owner = _op_index(events, tree)[np.maximum(links.owner, 0)]
    owner[links.owner < 0] = -1
    holder, modelled_above = _nearest_row(owner, parent, is_row, ranks)
    launchers = np.unique(owner[(holder < 0) & (owner >= 0) & ~modelled_above])
    calls = np.concatenate((np.flatnonzero(is_row), launchers))
    order = np.argsort(calls, kind="stable")
    calls = calls[order]
    modelled = np.concatenate(
        (np.ones(calls.size - launchers.size, bool), np.zeros(launchers.size, bool))
    )[order]
    held = np.where(holder >= 0, holder, np.where(modelled_above, -1, owner))
    keep = held >= 0
    return RowCalls(calls, modelled, links.rows[keep], np.searchsorted(calls, held[keep]))


def _over_ancestors(parent: Rows, ranks: NDArray[np.int8]) -> NDArray[np.int8]:
    """Per call: the highest rank among the calls around it (0 without any)."""
    highest = np.zeros(parent.size, dtype=np.int8)
    chosen = np.flatnonzero(ranks > 0)
    up = parent[chosen]
    while chosen.size:
        inside = up >= 0
        chosen, up = chosen[inside], up[inside]
        highest[chosen] = np.maximum(highest[chosen], ranks[up])
        up = parent[up]
    return highest


def _over_descendants(parent: Rows, ranks: NDArray[np.int8]) -> NDArray[np.int8]:
    """Per call: the highest rank among the calls inside it (0 without any)."""
    highest = np.zeros(parent.size, dtype=np.int8)
    chosen = np.flatnonzero(ranks > 0)
    value, up = ranks[chosen], parent[chosen]
    while up.size:
        inside = up >= 0
        value, up = value[inside], up[inside]
        np.maximum.at(highest, up, value)
        up = parent[up]
    return highest


def _op_index(events: EventTable, tree: CpuTree) -> Rows:
    """Per event row: its index in ``tree.ops`` (-1: not an operator)."""
    index = np.full(len(events), -1, dtype=np.int64)
    index[tree.ops] = np.arange(tree.ops.size)
    return index


def _nearest_row(
    owner: Rows, parent: Rows, is_row: NDArray[np.bool_], ranks: NDArray[np.int8]
) -> tuple[Rows, NDArray[np.bool_]]:
    """Per GPU work: the row call at or above its operator (-1: none), and whether a
    modelled call is at or above it (then, without a row, it belongs to none)."""
    holder = np.full(owner.size, -1, dtype=np.int64)
    modelled = np.zeros(owner.size, dtype=bool)
    pending = np.flatnonzero(owner >= 0)
    at = owner[pending]
    while pending.size:
        hit = is_row[at]
        holder[pending[hit]] = at[hit]
        modelled[pending] |= ranks[at] > 0
        up = parent[at]
        going = ~hit & (up >= 0)
        pending, at = pending[going], up[going]
    return holder, modelled
