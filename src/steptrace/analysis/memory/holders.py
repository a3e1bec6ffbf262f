"""What holds a step's memory peak: the bytes alive at it, matched by address, grouped by
the operator and the label that allocated them, and with a capture's inventory by what
they are. ``holders`` and ``categorized`` serve ``usage``'s steps; their parts add up to
the peak, to the byte."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.memory import categories
from steptrace.analysis.memory.categories import Listed
from steptrace.trace.table import EventTable

Ints = NDArray[np.int64]
HELD_SHOWN = 10  # operators and labels listed as holding the peak, the largest first


class Holder(msgspec.Struct, frozen=True):
    """An operator or label holding bytes at the peak."""

    name: str
    bytes: int


class PeakHolders(msgspec.Struct, frozen=True):
    """What the bytes alive at the peak are: they add up to the peak exactly."""

    alive_from_start_bytes: int  # alive since before the step, not freed by the peak
    allocated_in_step_bytes: int  # allocated in the step before the peak, still alive at it
    by_operator: tuple[Holder, ...]  # the latter by allocating operator, largest first
    by_label: tuple[Holder, ...]  # the latter by innermost label ("<no label>" outside)
    operators_total: int  # how many operators hold some (``by_operator`` lists the largest)
    # with a steptrace capture's inventory (``memory_categories``), () without one:
    by_category: tuple[Holder, ...] = ()  # allocated_in_step_bytes by what they are
    from_start_by_category: tuple[Holder, ...] = ()  # alive_from_start_bytes, not on a CPU


@dataclass(frozen=True)
class DeviceEvents:
    """One device's ``[memory]`` events, in time order, with who allocated each."""

    at_us: NDArray[np.float64]
    addr: Ints
    moved: Ints  # Bytes: < 0 for a free
    allocated: Ints  # Total Allocated after the event
    reserved: Ints
    operator: NDArray[np.int64]  # name id of the allocating operator, -1 outside any
    label: NDArray[np.int64]  # name id of the innermost label, -1 outside any


def holders(
    events: EventTable, found: DeviceEvents, span: tuple[int, int, int], start: int
) -> PeakHolders:
    """What is alive at the peak, from the events ``lo:upto`` matched by address: an
    allocation is alive unless the next event at its address (a free) came before the
    peak; a free whose address the step had not allocated releases a block it began with."""
    lo, upto, _ = span
    addr, moved = found.addr[lo:upto], found.moved[lo:upto]
    freed = _first_at_address(addr) & (moved < 0)
    kept = np.flatnonzero(_last_at_address(addr) & (moved > 0)) + lo
    sizes = found.moved[kept]
    by_operator, operators = _grouped(events, found.operator[kept], sizes)
    by_label, _ = _grouped(events, found.label[kept], sizes, outside="<no label>")
    return PeakHolders(
        alive_from_start_bytes=start + int(moved[freed].sum()),
        allocated_in_step_bytes=int(sizes.sum()),
        by_operator=by_operator,
        by_label=by_label,
        operators_total=operators,
    )


def categorized(
    held: PeakHolders, found: DeviceEvents, span: tuple[int, int, int], listed: Listed, cpu: bool
) -> PeakHolders:
    """``held`` with its two parts split by what they are (``categories``)."""
    lo, upto, hi = span
    step = found.addr[lo:hi]
    kept = np.flatnonzero(_last_at_address(found.addr[lo:upto]) & (found.moved[lo:upto] > 0))
    alive_at_end = _last_at_address(step)[kept]  # no later event at its address in the step
    made = categories.in_step(listed, step[kept], found.moved[lo:hi][kept], alive_at_end)
    began = {} if cpu else categories.from_start(listed, step, held.alive_from_start_bytes)
    return msgspec.structs.replace(
        held, by_category=_largest_first(made), from_start_by_category=_largest_first(began)
    )


def _largest_first(totals: dict[str, int]) -> tuple[Holder, ...]:
    return tuple(Holder(n, b) for n, b in sorted(totals.items(), key=lambda t: (-t[1], t[0])))


def _last_at_address(addr: Ints) -> NDArray[np.bool_]:
    """Per event: no later event at its address among ``addr`` (in time order)."""
    order = np.lexsort((np.arange(addr.size), addr))  # by address, then in time
    last = np.empty(addr.size, dtype=np.bool_)
    last[order] = np.append(addr[order][1:] != addr[order][:-1], True)
    return last


def _first_at_address(addr: Ints) -> NDArray[np.bool_]:
    """Per event: no earlier event at its address among ``addr``."""
    order = np.lexsort((np.arange(addr.size), addr))
    first = np.empty(addr.size, dtype=np.bool_)
    first[order] = np.insert(addr[order][1:] != addr[order][:-1], 0, True)
    return first


def _grouped(
    events: EventTable, names: Ints, sizes: Ints, outside: str = "<no operator>"
) -> tuple[tuple[Holder, ...], int]:
    """Bytes by name id, the largest first (``HELD_SHOWN`` of them), and how many names."""
    if names.size == 0:
        return (), 0
    ids, where = np.unique(names, return_inverse=True)
    totals = np.bincount(where.reshape(-1), weights=sizes, minlength=ids.size)
    order = sorted(range(ids.size), key=lambda k: (-totals[k], int(ids[k])))
    held = tuple(
        Holder(name_of(events, int(ids[k])) or outside, int(totals[k])) for k in order[:HELD_SHOWN]
    )
    return held, int(ids.size)


def name_of(events: EventTable, name_id: int) -> str | None:
    """The name of ``name_id`` (-1: none)."""
    return None if name_id < 0 else events.names[name_id]
