"""What the bytes holding a memory peak are, from a steptrace capture's inventory.

Contract: ``Listed.of(inventory, device, step)`` gathers, for one device and one
``ProfilerStep#N``, the addresses the capture listed (``scenario.Inventory``: parameters
and optimizer state after the window, the step's gradients and batch at its end); None
when it listed nothing there. Then, for the bytes alive at a step's peak:

- allocated in the step (``in_step``): an allocation still alive at the step's end is the
  listed tensor at its address, or ``other, kept past the step`` (a cache, a leak) when
  nothing listed is there; one freed before the end is ``activations and temporaries``;
- alive from the step's start (``from_start``): the listed storages the step never touched
  (no event at their address), the rest ``other, from before the step``. Not on the CPU,
  whose allocated level counts from the profiler's start (what was allocated before is not
  in it): an empty tuple there, as when the listed bytes exceed the level.

Both close to the byte on the figures they split. Matching by address is exact where a
tensor's storage was allocated inside the trace; the profiler's own categories are not
(they change from step to step).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from steptrace.scenario import Inventory, InventoryCategory

Ints = NDArray[np.int64]
TEMPORARY = "activations and temporaries"
KEPT = "other, kept past the step"
BEFORE = "other, from before the step"
_STEP_NUMBER = re.compile(r"#(\d+)$")


@dataclass(frozen=True)
class Listed:
    """One device's listed storages in one step, sorted by address."""

    addr: Ints
    bytes: Ints
    category: tuple[InventoryCategory, ...]

    @staticmethod
    def of(inventory: Inventory | None, device: str, step: str) -> Listed | None:
        number = _STEP_NUMBER.search(step)
        if inventory is None or number is None:
            return None
        listed = next((s for s in inventory.steps if s.step == int(number[1])), None)
        if listed is None:
            return None
        found: dict[int, tuple[InventoryCategory, int]] = {}
        for block in (*inventory.persistent, *listed.blocks):  # persistent ones first
            if block.device == device:
                found.setdefault(block.addr, (block.category, block.bytes))
        if not found:
            return None
        addrs = sorted(found)
        return Listed(
            np.array(addrs, dtype=np.int64),
            np.array([found[a][1] for a in addrs], dtype=np.int64),
            tuple(found[a][0] for a in addrs),
        )

    def find(self, addr: Ints) -> Ints:
        """Each address's index in the list, -1 where it is not listed."""
        at = np.searchsorted(self.addr, addr)
        hit = at < self.addr.size
        hit[hit] = self.addr[at[hit]] == addr[hit]
        return np.where(hit, at, -1)


def in_step(
    listed: Listed, addr: Ints, sizes: Ints, alive_at_end: NDArray[np.bool_]
) -> dict[str, int]:
    """The bytes allocated in the step and alive at its peak, by what they are."""
    at = listed.find(addr)
    totals: dict[str, int] = {}
    for k, size, kept in zip(at.tolist(), sizes.tolist(), alive_at_end.tolist(), strict=True):
        name = TEMPORARY if not kept else (listed.category[k] if k >= 0 else KEPT)
        totals[name] = totals.get(name, 0) + size
    return totals


def from_start(listed: Listed, touched: Ints, alive_from_start: int) -> dict[str, int]:
    """The bytes alive at the peak since the step began, by what they are: the listed
    storages at no address the step ``touched``; {} when they exceed the level."""
    untouched = ~np.isin(listed.addr, touched)
    totals: dict[str, int] = {}
    for k in np.flatnonzero(untouched).tolist():
        name = listed.category[k]
        totals[name] = totals.get(name, 0) + int(listed.bytes[k])
    rest = alive_from_start - sum(totals.values())
    if rest < 0:
        return {}
    return totals | ({BEFORE: rest} if rest else {})
