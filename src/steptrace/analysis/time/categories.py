"""GPU time per step by kind of work: GEMM, convolution, attention, ... (HTA's and
TraceLens' kernel breakdown), without counting concurrent work twice.

Contract: ``category_per_step(events, timeline, lo, hi) -> list[tuple[CategoryTime, ...]]``,
one tuple per step window ``[lo[k], hi[k]]``, every category listed in ``CATEGORIES`` order;
``summarize(per_step)`` over the steps: median [min–max] ms per step, and the share of the
steps' busy time taken together (medians of parts need not add up; these shares do).

A kernel's category comes from its name: ``kernel_kinds`` holds the one table of
patterns (a user can add to it). Copies and sets are ``copy`` by their kind, whatever
their name.

Overlap is attributed once: busy time is the union of all GPU work on the timeline (as
``GpuStep.busy_ms``), and each instant of it goes to one category, the first in priority
order among those running then: the compute categories (GEMM, convolution, attention,
reduction, elementwise, other) before communication, and communication before copies, as
TensorBoard's profiler plugin did. A copy running under a GEMM is therefore GEMM time, and
communication only counts where no compute ran (its *exposed* part). The categories of a
step add up to its GPU busy time, exactly: no share is ever above 100% in sum. The time is
on the timeline, clipped to the step, whichever step launched the work.
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.efficiency.kernel_kinds import CATEGORIES, DEFAULT, KernelKinds
from steptrace.analysis.spread import Spread
from steptrace.analysis.time.gpu_busy import GpuBusy
from steptrace.trace import intervals as iv
from steptrace.trace.arrays import distinct
from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable

# PRIORITY decides which category gets time where several overlap (report order: CATEGORIES).
PRIORITY = (
    "GEMM",
    "convolution",
    "attention",
    "reduction",
    "elementwise",
    "other",
    "communication",
    "copy",
)


class CategoryTime(msgspec.Struct, frozen=True):
    """One category's GPU busy time in one step (overlap attributed once)."""

    category: str
    busy_ms: float
    share_of_busy: float | None  # busy_ms / the step's GPU busy time; None: GPU idle all step


class CategorySummary(msgspec.Struct, frozen=True):
    """One category over the steps."""

    category: str
    busy_ms: Spread  # per step: median [min to max]
    share_of_busy: float | None  # of the steps' GPU busy time together; None: never busy


def category_per_step(
    events: EventTable,
    timeline: GpuBusy,
    lo: NDArray[np.float64],
    hi: NDArray[np.float64],
    kinds: KernelKinds = DEFAULT,
) -> list[tuple[CategoryTime, ...]]:
    """Per step window, every category's busy time and share of the step's busy time."""
    rows = timeline.rows
    of_row = _row_categories(events, rows, kinds)
    own = [
        iv.union(events.start_us[chosen], events.end_us[chosen])
        for chosen in (rows[of_row == code] for code in range(len(PRIORITY)))
    ]
    ms = {  # each category's time where no category before it in PRIORITY runs
        category: iv.covered(first, lo, hi) / 1000.0
        for category, first in zip(PRIORITY, iv.by_priority(own), strict=True)
    }
    total = sum(ms.values(), np.zeros(lo.shape))
    return [
        tuple(
            CategoryTime(c, float(ms[c][k]), float(ms[c][k] / total[k]) if total[k] > 0 else None)
            for c in CATEGORIES
        )
        for k in range(lo.size)
    ]


def summarize(per_step: list[tuple[CategoryTime, ...]]) -> tuple[CategorySummary, ...]:
    """Over steps: each category's busy ms (median [min–max]) and its share of the steps'
    GPU busy time taken together (which, unlike medians of shares, adds up to 100%)."""
    if not per_step:
        return ()
    total = sum(t.busy_ms for step in per_step for t in step)
    summaries = []
    for k, category in enumerate(CATEGORIES):
        values = [step[k].busy_ms for step in per_step]
        spread = Spread.of(values)
        assert spread is not None
        share = sum(values) / total if total > 0 else None
        summaries.append(CategorySummary(category, spread, share))
    return tuple(summaries)


def _row_categories(
    events: EventTable, rows: NDArray[np.int64], kinds: KernelKinds
) -> NDArray[np.int8]:
    """Per row: its category, as its index in ``PRIORITY`` (a byte, not a string, per row)."""
    name_id = events.name_id[rows]
    named = distinct(name_id)
    code = np.zeros(len(events.names), dtype=np.int8)
    code[named] = [PRIORITY.index(kinds.kind_of(events.names[i])) for i in named.tolist()]
    categories: NDArray[np.int8] = code[name_id]
    kind = events.kind[rows]
    categories[(kind == Kind.MEMCPY) | (kind == Kind.MEMSET)] = PRIORITY.index("copy")
    return categories
