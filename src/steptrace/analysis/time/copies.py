"""Copies that recur: the same direction, size and launching operator, step after step.

Contract: ``copy_patterns(events, links, steps) -> tuple[CopyPattern, ...]``, largest total
time first. A pattern that appears in every step with the same size is the signature of
a constant rebuilt and transferred each step. A copy counts in the step that launched it
(the latest-begun one, where steps overlap); copies launched before the trace in none.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.time.gpu import copy_kind
from steptrace.analysis.time.links import GpuLinks
from steptrace.analysis.time.steps import StepWindow, label_rows, step_of
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
    labels = _launch_labels(events, launched)
    counted = step_index >= 0
    rows, owners, labels, step_index = (a[counted] for a in (rows, owners, labels, step_index))
    if not rows.size:
        return ()
    names = events.names
    owner_names = np.where(owners >= 0, events.name_id[np.maximum(owners, 0)], -1)
    parts = (  # what a pattern is made of, each part as an id per copy
        _described(events.name_id[rows], lambda n: copy_kind(names[n])),
        _described(events.bytes[rows], lambda b: int(b) if np.isfinite(b) else None),
        _described(owner_names, lambda n: names[n] if n >= 0 else UNKNOWN_OPERATOR),
        _described(labels, lambda n: names[n] if n >= 0 else None),
    )
    key = np.stack([ids for ids, _ in parts], axis=1)
    _, first, group = np.unique(key, axis=0, return_index=True, return_inverse=True)
    group = group.reshape(-1)
    members_of = np.split(np.argsort(group, kind="stable"), np.cumsum(np.bincount(group))[:-1])
    patterns = []
    for g in np.argsort(first).tolist():  # in the order the patterns first appear
        members = members_of[g]  # ascending
        (direction, memory), size, operator, label = (
            described[ids[members[0]]] for ids, described in parts
        )
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


def _described(
    values: NDArray[Any], describe: Callable[[Any], Hashable]
) -> tuple[NDArray[np.int64], list[Any]]:
    """An id per value, one per description (``describe`` runs once per distinct value),
    and the descriptions by id."""
    distinct, inverse = np.unique(values, return_inverse=True)
    ids: dict[Hashable, int] = {}
    of_distinct = [ids.setdefault(describe(v), len(ids)) for v in distinct.tolist()]
    return np.array(of_distinct, dtype=np.int64)[inverse.reshape(-1)], list(ids)


def _launch_labels(events: EventTable, launches: NDArray[np.int64]) -> NDArray[np.int64]:
    """The name id of the innermost label around each launch call (-1: unknown call or no
    label)."""
    labels = label_rows(events)
    known, back = np.unique(launches[launches >= 0], return_inverse=True)  # one launch, many copies
    rows = np.concatenate((labels, known))
    parent = parents(events.start_us[rows], events.end_us[rows], events.thread_id[rows])
    around = parent[labels.size :]
    is_label = (around >= 0) & (around < labels.size)  # not a root, nor inside another call
    label_of_known = np.full(known.size, -1, dtype=np.int64)
    label_of_known[is_label] = events.name_id[labels[around[is_label]]]
    label_of = np.full(launches.size, -1, dtype=np.int64)
    label_of[launches >= 0] = label_of_known[back.reshape(-1)]
    return label_of


def _figure(context: TraceContext) -> tuple[CopyPattern, ...]:
    return copy_patterns(context.events, context.links, context.windows)


FIGURE = FigureSpec("copies", _figure, frozenset({"steps", "links"}))
