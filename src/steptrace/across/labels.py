"""Labels across two analyses: each label's time per step before and after.

Contract: ``label_changes(before, after) -> (LabelChange rows, ChangeCounts)``, pure.

A label's figure is its exclusive time (nested labels not counted twice) per step, the
median over the complete steps in which it appears (a partial step is left out, as in the
step figures), as in the report's label summary; ``before_steps`` and ``after_steps`` say
in how many. It "changed" when that time moved beyond the tolerances or it appears in a
different share of the steps. Every label is listed, by the size of its change, largest
first: |delta|, or its time on the one side that has it. A label on one side only is
``None`` on the other (not observed there), never 0. The DataLoader's
``enumerate(DataLoader)#<iterator>.__next__`` is one label whatever the iterator (its
class follows ``num_workers``): ``after_name`` says when the name changed.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence

import msgspec

from steptrace.across.changes import ChangeCounts, Status, tally, time_moved
from steptrace.analysis.measure import StepResult, TraceAnalysis

_LOADER_NEXT = re.compile(r"^enumerate\(DataLoader\)#\w+\.__next__$")
_LOADER_KEY = "\0enumerate(DataLoader).__next__"  # no label is named so


class LabelChange(msgspec.Struct, frozen=True):
    """One label's exclusive ms per step before and after; None: not observed on that side."""

    name: str  # as written before (after, when only after has it)
    after_name: str | None  # the name after, when it differs (the DataLoader's iterator)
    status: Status
    before_ms: float | None  # median over the complete steps in which it appears
    after_ms: float | None
    delta_ms: float | None  # after - before; None when a side did not observe the label
    before_steps: int  # complete steps in which the label appears
    after_steps: int


class _Side(msgspec.Struct, frozen=True):
    """One label on one side: its name as written, median ms per step, where it appears."""

    name: str
    median_ms: float
    steps: int  # complete steps in which it appears
    share: float  # of the side's complete steps


def label_changes(
    before: TraceAnalysis, after: TraceAnalysis
) -> tuple[tuple[LabelChange, ...], ChangeCounts]:
    """Every label of either side, by the size of its change (largest first), and the tally."""
    old, new = _labels(before.steps), _labels(after.steps)
    changes = [_change(old.get(key), new.get(key)) for key in old.keys() | new.keys()]
    changes.sort(key=lambda c: (-_size(c), c.name))
    return tuple(changes), tally(c.status for c in changes)


def _labels(steps: Sequence[StepResult]) -> dict[str, _Side]:
    counted = [s for s in steps if not s.partial] or list(steps)
    names: dict[str, str] = {}
    per_step: dict[str, list[float]] = {}  # one value per step in which it appears
    for step in counted:
        mine: dict[str, float] = {}
        for phase in step.phases:
            key = _key(phase.name)
            names.setdefault(key, phase.name)
            mine[key] = mine.get(key, 0.0) + phase.exclusive_ms
        for key, ms in mine.items():
            per_step.setdefault(key, []).append(ms)
    return {
        key: _Side(names[key], float(statistics.median(v)), len(v), len(v) / len(counted))
        for key, v in per_step.items()
    }


def _key(name: str) -> str:
    """The DataLoader's ``__next__`` label is one, whatever its iterator class."""
    return _LOADER_KEY if _LOADER_NEXT.match(name) else name


def _change(old: _Side | None, new: _Side | None) -> LabelChange:
    if old is not None and new is not None:
        moved = time_moved(old.median_ms, new.median_ms) or old.share != new.share
        return LabelChange(
            old.name,
            new.name if new.name != old.name else None,
            "changed" if moved else "unchanged",
            old.median_ms,
            new.median_ms,
            new.median_ms - old.median_ms,
            old.steps,
            new.steps,
        )
    if old is not None:
        return LabelChange(old.name, None, "disappeared", old.median_ms, None, None, old.steps, 0)
    assert new is not None
    return LabelChange(new.name, None, "appeared", None, new.median_ms, None, 0, new.steps)


def _size(change: LabelChange) -> float:
    if change.delta_ms is not None:
        return abs(change.delta_ms)
    return change.before_ms if change.before_ms is not None else change.after_ms or 0.0
