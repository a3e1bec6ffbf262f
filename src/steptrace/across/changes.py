"""What counts as a change between two windows: the tolerances, the statuses, the tally.

Shared by every comparison of a ``diff`` (labels, operators, kernels), so that a time
"changed" by the same rule wherever it is listed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Literal

import msgspec

# A time "changed" when it moved by more than this share of its time before (run-to-run
# noise of a profiled step is a few percent)...
RELATIVE_TOLERANCE = 0.05
# ...and by more than this many ms (below it, timer resolution and rounding dominate).
ABSOLUTE_TOLERANCE_MS = 0.01

Status = Literal["appeared", "disappeared", "changed", "unchanged"]


class ChangeCounts(msgspec.Struct, frozen=True):
    """How many names fell in each status."""

    appeared: int
    disappeared: int
    changed: int
    unchanged: int
    unknown: int  # on one side only, and the other side cannot tell (list cut, no GPU)


def time_moved(before_ms: float, after_ms: float) -> bool:
    """Did a time move beyond both tolerances?"""
    moved = abs(after_ms - before_ms)
    return moved > max(RELATIVE_TOLERANCE * before_ms, ABSOLUTE_TOLERANCE_MS)


def tally(statuses: Iterable[Status], unknown: int = 0) -> ChangeCounts:
    """The count of each status."""
    counts = Counter(statuses)
    return ChangeCounts(
        counts["appeared"], counts["disappeared"], counts["changed"], counts["unchanged"], unknown
    )
