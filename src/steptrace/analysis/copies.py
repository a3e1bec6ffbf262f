"""Copies that recur: the same direction, size and launching operator, step after step.

Contract: ``copy_patterns(events, links, steps) -> tuple[CopyPattern, ...]``, largest total
time first. A pattern that appears in every step with the same size is the signature of
a constant rebuilt and transferred each step. A copy counts in the step that launched it
(the latest-begun one, where steps overlap); copies launched before the trace in none.
"""

from __future__ import annotations

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.gpu import copy_kind
from steptrace.analysis.links import GpuLinks
from steptrace.analysis.phases import label_rows
from steptrace.analysis.steps import StepWindow, step_of
from steptrace.trace.kinds import Kind
from steptrace.trace.nesting import parents
from steptrace.trace.table import EventTable

UNKNOWN_OPERATOR = "<launch not linked>"


class CopyPattern(msgspec.Struct, frozen=True):
    direction: str
    bytes: int | None
    operator: str  # the operator whose runtime call launched the copy
    label: str | None  # the innermost label around that call, None outside every label
    host_memory: str | None  # Pageable or Pinned, when the trace says
    steps: int  # in how many steps it appears
    per_step: tuple[int, ...]  # how many such copies in each step
    total_ms: float  # summed copy durations over all steps


def copy_patterns(
    events: EventTable, links: GpuLinks, steps: tuple[StepWindow, ...]
) -> tuple[CopyPattern, ...]:
    is_copy = (events.kind[links.rows] == Kind.MEMCPY) & ~links.before_trace
    rows, owners = links.rows[is_copy], links.owner[is_copy]
    launched = links.launch[is_copy]
    start = np.where(launched >= 0, events.start_us[np.maximum(launched, 0)], events.start_us[rows])
    step_index = step_of(steps, start)  # each copy in one step, even where steps overlap
    labels = _launch_labels(events, links.launch[is_copy])
    groups: dict[tuple[str, int | None, str, str | None, str | None], list[int]] = {}
    for i, (row, owner) in enumerate(zip(rows.tolist(), owners.tolist(), strict=True)):
        if step_index[i] < 0:
            continue
        direction, memory = copy_kind(events.name_of(row))
        size = int(events.bytes[row]) if np.isfinite(events.bytes[row]) else None
        operator = events.name_of(owner) if owner >= 0 else UNKNOWN_OPERATOR
        groups.setdefault((direction, size, operator, memory, labels[i]), []).append(i)
    patterns = []
    for (direction, size, operator, memory, label), members in groups.items():
        per_step = np.bincount(step_index[members], minlength=len(steps))
        patterns.append(
            CopyPattern(
                direction=direction,
                bytes=size,
                operator=operator,
                label=label,
                host_memory=memory,
                steps=int((per_step > 0).sum()),
                per_step=tuple(int(c) for c in per_step),
                total_ms=float(events.dur_us[rows[members]].sum()) / 1000,
            )
        )
    return tuple(sorted(patterns, key=lambda p: -p.total_ms))


def _launch_labels(events: EventTable, launches: NDArray[np.int64]) -> list[str | None]:
    """The innermost label around each launch call (None: unknown call or no label)."""
    labels = label_rows(events)
    known, back = np.unique(launches[launches >= 0], return_inverse=True)  # one launch, many copies
    rows = np.concatenate((labels, known))
    parent = parents(events.start_us[rows], events.end_us[rows], events.thread_id[rows])
    around = [
        events.name_of(int(labels[p])) if 0 <= p < labels.size else None
        for p in parent[labels.size :].tolist()
    ]
    names = iter(around[i] for i in back.tolist())
    return [next(names) if row >= 0 else None for row in launches.tolist()]
