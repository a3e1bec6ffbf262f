"""The path's time by event name, inclusive: what the findings look up.

Contract: ``by_name(events, ancestors, path) -> tuple[OnPath, ...]``: for every event
name, the time of the path spent in what events of that name did: inside an operator or
label on its thread with everything it called there (a name nested in itself counted
once), and the GPU work it launched (a kernel, copy or set counts for itself, its
launch call and every event around that call). By time, longest first. ``Ancestors`` is
built once per trace: each CPU event's enclosing event, each GPU activity's launch call.
"""

from __future__ import annotations

import re

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.critical.walk import Path
from steptrace.analysis.time.links import GpuLaunches
from steptrace.trace.kinds import LAUNCHES, Kind
from steptrace.trace.nesting import parents_of_rows
from steptrace.trace.table import EventTable

_NOT_PHASE = re.compile(r"^(ProfilerStep#\d+|(gloo|nccl|rccl):.*)$")  # steps, the libraries'

Ints = NDArray[np.int64]
_CPU_KINDS = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.PYTHON_FUNCTION, *LAUNCHES)


class OnPath(msgspec.Struct, frozen=True):
    """A name and the path's time inside events of that name."""

    name: str
    on_path_ms: float


class Ancestors(msgspec.Struct, frozen=True, eq=False):
    """Per event row: the row of its enclosing CPU event, or -1."""

    parent_row: Ints  # a GPU activity's: its launch call


def ancestors(events: EventTable, launches: GpuLaunches) -> Ancestors:
    rows = np.flatnonzero(events.mask(*_CPU_KINDS) & (events.dur_us > 0))
    parent = parents_of_rows(events, rows)
    parent_row = np.full(len(events), -1, dtype=np.int64)
    parent_row[rows] = np.where(parent >= 0, rows[np.maximum(parent, 0)], -1)
    parent_row[launches.rows] = launches.launch
    return Ancestors(parent_row)


def by_name(events: EventTable, family: Ancestors, path: Path) -> tuple[OnPath, ...]:
    """The path's time inside each event name (see module)."""
    row = path.row[path.row >= 0]
    segment = np.arange(row.size, dtype=np.int64)
    pairs: list[Ints] = []  # segment * names + name id, per level of nesting
    names = len(events.names) + 1
    while row.size:
        pairs.append(segment * names + events.name_id[row])
        row = family.parent_row[row]
        segment, row = segment[row >= 0], row[row >= 0]
    dur = (path.end_ns - path.start_ns)[path.row >= 0].astype(np.float64)
    once = np.unique(np.concatenate(pairs)) if pairs else np.zeros(0, dtype=np.int64)
    totals = np.bincount(once % names, weights=dur[once // names], minlength=names)
    order = np.argsort(-totals, kind="stable")
    return tuple(
        OnPath(events.names[int(n)], float(totals[n]) / 1e6) for n in order if totals[n] > 0
    )


def by_label(events: EventTable, family: Ancestors, path: Path) -> tuple[OnPath, ...]:
    """The path's time by its innermost label (``record_function``, not a step marker nor
    a library's ``gloo:``/``nccl:`` label), longest first: each moment counted once."""
    label = _labels(events)
    row = path.row.copy()
    dur = (path.end_ns - path.start_ns).astype(np.float64)
    while (climbing := (row >= 0) & ~label[np.maximum(row, 0)]).any():
        row[climbing] = family.parent_row[row[climbing]]
    found = row >= 0
    totals = np.bincount(
        events.name_id[row[found]], weights=dur[found], minlength=len(events.names)
    )
    order = np.argsort(-totals, kind="stable")
    return tuple(
        OnPath(events.names[int(n)], float(totals[n]) / 1e6) for n in order if totals[n] > 0
    )


def _labels(events: EventTable) -> NDArray[np.bool_]:
    """Per row: a user's label."""
    names = np.array([not _NOT_PHASE.match(n) for n in events.names] + [False])
    found: NDArray[np.bool_] = (events.kind == Kind.USER_ANNOTATION) & names[events.name_id]
    return found
