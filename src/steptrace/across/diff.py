"""``diff``: two analyses -> where time moved between them, a ``TraceDiff``.

Contract: ``diff_analyses(before, after, scenarios=...)`` is pure; reading the two sides
(traces or saved reports) is the pipeline's job (``steptrace.pipeline.diff``).

What is compared: step wall time and GPU busy/idle per step (median, min, max; the GPU
figures are None unless both sides observed the GPU, never zero), the user's labels
(median exclusive ms per step, every label: ``across.labels``), then operators (self
time) and kernels (total time) that appeared, disappeared or changed in calls or time.
A name listed on one side only is left out ("unknown") when the other side cannot tell
its absence: its list was cut to the top N, or it did not observe the GPU. Warnings say
why the two windows may not be comparable: the scenarios' boundaries, shapes, batch,
precision, model mode, compilation or device differ, or a question is missing; step
markers on one side only; the GPU observed on one side only; lists cut to the top N.

A diff suggests where time moved; it proves no speed-up: ``steptrace compare`` decides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec

from steptrace.across.changes import ChangeCounts, Status, tally, time_moved
from steptrace.across.labels import LabelChange, label_changes
from steptrace.analysis.measure import TraceAnalysis
from steptrace.analysis.spread import Spread
from steptrace.scenario import Scenario

SCHEMA = "steptrace.diff/1"
REMINDER = (
    "A trace diff suggests where time moved; it does not show a speed-up (the profiler "
    "distorts the steps it records): `steptrace compare` decides, timing both outside "
    "the profiler."
)
NO_QUESTION = "no question recorded: cannot check that the windows have the same boundaries"

Row = tuple[float, float]  # calls per step, ms per step


class SpreadChange(msgspec.Struct, frozen=True):
    """A per-step figure in ms, before and after (median, min, max over the steps)."""

    before: Spread
    after: Spread
    ratio: float | None  # after.median / before.median; None when the median before is 0
    delta_ms: float  # after.median - before.median


class NameChange(msgspec.Struct, frozen=True):
    """One operator or kernel name before and after; None: absent from that side."""

    name: str
    status: Status
    before_calls: float | None  # calls per step
    after_calls: float | None
    before_ms: float | None  # operators: self time; kernels: total time
    after_ms: float | None
    delta_ms: float  # after - before, an absent side counting as 0


class MemoryChange(msgspec.Struct, frozen=True):
    """One device's memory before and after: the largest step peak allocated and the median
    growth per step; None where a side recorded no memory for it (not observed)."""

    device: str
    before_peak_bytes: int | None
    after_peak_bytes: int | None
    delta_bytes: int | None  # after - before; None unless both sides recorded it
    before_growth_bytes_per_step: float | None
    after_growth_bytes_per_step: float | None


class TraceDiff(msgspec.Struct, frozen=True):
    """Two traces compared; ``labels`` lists every label, ``operators`` and ``kernels``
    only what moved."""

    schema: str
    before: str
    after: str
    before_steps: int
    after_steps: int
    step_ms: SpreadChange
    gpu_busy_ms: SpreadChange | None  # None unless both sides observed the GPU
    gpu_idle_ms: SpreadChange | None
    labels: tuple[LabelChange, ...]  # by the size of the change, largest first
    label_counts: ChangeCounts
    operators: tuple[NameChange, ...]  # by |delta_ms|, largest first; self time
    operator_counts: ChangeCounts
    kernels: tuple[NameChange, ...]  # by |delta_ms|, largest first; total time
    kernel_counts: ChangeCounts
    warnings: tuple[str, ...]
    reminder: str
    memory: tuple[MemoryChange, ...] = ()  # per device, when either side recorded memory


def diff_analyses(
    before: TraceAnalysis,
    after: TraceAnalysis,
    *,
    scenarios: tuple[Scenario | None, Scenario | None] = (None, None),
) -> TraceDiff:
    """Diff two analyses (full lists, or lists cut to their top N) and their scenarios."""
    gpu = before.trace.gpu_observed and after.trace.gpu_observed
    old, new = before.summary, after.summary
    labels, label_counts = label_changes(before, after)
    per_old, per_new = 1 / max(old.count, 1), 1 / max(new.count, 1)  # per step: windows of
    operators, operator_counts = _name_changes(  # different lengths stay comparable
        {o.name: (o.calls * per_old, o.self_ms * per_old) for o in before.operators},
        {o.name: (o.calls * per_new, o.self_ms * per_new) for o in after.operators},
        before_known=len(before.operators) == before.operators_total,
        after_known=len(after.operators) == after.operators_total,
    )
    kernels, kernel_counts = _name_changes(
        {k.name: (k.calls * per_old, k.total_ms * per_old) for k in before.kernels},
        {k.name: (k.calls * per_new, k.total_ms * per_new) for k in after.kernels},
        before_known=_kernels_known(before, after.trace.gpu_observed),
        after_known=_kernels_known(after, before.trace.gpu_observed),
    )
    return TraceDiff(
        schema=SCHEMA,
        before=before.trace.path,
        after=after.trace.path,
        before_steps=old.count,
        after_steps=new.count,
        step_ms=_spread_change(old.wall_ms, new.wall_ms),
        gpu_busy_ms=_gpu_change(old.gpu_busy_ms, new.gpu_busy_ms) if gpu else None,
        gpu_idle_ms=_gpu_change(old.gpu_idle_ms, new.gpu_idle_ms) if gpu else None,
        labels=labels,
        label_counts=label_counts,
        operators=operators,
        operator_counts=operator_counts,
        kernels=kernels,
        kernel_counts=kernel_counts,
        warnings=tuple(_warnings(before, after, scenarios)),
        reminder=REMINDER,
        memory=_memory_changes(before, after),
    )


def _memory_changes(before: TraceAnalysis, after: TraceAnalysis) -> tuple[MemoryChange, ...]:
    """Each device either side recorded memory for, its peak and growth on both sides."""
    sides = [_peaks(a) for a in (before, after)]
    changes = []
    for device in sorted(sides[0].keys() | sides[1].keys()):
        old, new = sides[0].get(device), sides[1].get(device)
        changes.append(
            MemoryChange(
                device=device,
                before_peak_bytes=old[0] if old else None,
                after_peak_bytes=new[0] if new else None,
                delta_bytes=new[0] - old[0] if old and new else None,
                before_growth_bytes_per_step=old[1] if old else None,
                after_growth_bytes_per_step=new[1] if new else None,
            )
        )
    return tuple(changes)


def _peaks(analysis: TraceAnalysis) -> dict[str, tuple[int, float]]:
    if analysis.memory is None:
        return {}
    return {
        d.device: (
            max((s.peak_allocated_bytes for s in d.steps), default=0),
            d.growth_bytes_per_step,
        )
        for d in analysis.memory.devices
    }


def _spread_change(before: Spread, after: Spread) -> SpreadChange:
    ratio = after.median / before.median if before.median > 0 else None
    return SpreadChange(before, after, ratio, after.median - before.median)


def _gpu_change(before: Spread | None, after: Spread | None) -> SpreadChange | None:
    if before is None or after is None:
        return None
    return _spread_change(before, after)


def _kernels_known(analysis: TraceAnalysis, other_observed_gpu: bool) -> bool:
    """Whether a kernel's absence from this side's list means it did not run."""
    if not analysis.trace.gpu_observed:
        return not other_observed_gpu  # unrecorded, not absent, when the other side saw it
    return len(analysis.kernels) == analysis.kernels_total


def _name_changes(
    before: Mapping[str, Row], after: Mapping[str, Row], *, before_known: bool, after_known: bool
) -> tuple[tuple[NameChange, ...], ChangeCounts]:
    """What moved, by |delta| (largest first), and how many names fell in each status."""
    changes: list[NameChange] = []
    unknown = 0
    for name in before.keys() | after.keys():
        old, new = before.get(name), after.get(name)
        if (old is None and not before_known) or (new is None and not after_known):
            unknown += 1
            continue
        changes.append(_name_change(name, old, new))
    moved = sorted(
        (c for c in changes if c.status != "unchanged"), key=lambda c: (-abs(c.delta_ms), c.name)
    )
    return tuple(moved), tally((c.status for c in changes), unknown)


def _name_change(name: str, old: Row | None, new: Row | None) -> NameChange:
    old_ms = old[1] if old else 0.0
    new_ms = new[1] if new else 0.0
    status: Status
    if old is None:
        status = "appeared"
    elif new is None:
        status = "disappeared"
    else:
        status = "changed" if _changed(old, new) else "unchanged"
    return NameChange(
        name=name,
        status=status,
        before_calls=old[0] if old else None,
        after_calls=new[0] if new else None,
        before_ms=old[1] if old else None,
        after_ms=new[1] if new else None,
        delta_ms=new_ms - old_ms,
    )


def _changed(old: Row, new: Row) -> bool:
    """Calls differ, or time moved beyond both tolerances."""
    return abs(new[0] - old[0]) > 1e-9 or time_moved(old[1], new[1])


def _warnings(
    before: TraceAnalysis,
    after: TraceAnalysis,
    scenarios: tuple[Scenario | None, Scenario | None],
) -> list[str]:
    steps = (before.summary.count, after.summary.count)
    different_lengths = (
        [f"{steps[0]} steps before, {steps[1]} after: calls and times are compared per step"]
        if steps[0] != steps[1]
        else []
    )
    return [
        *different_lengths,
        *_scenario_warnings(*scenarios),
        *_marker_warnings(before.trace.steps_from_markers, after.trace.steps_from_markers),
        *_gpu_warnings(before.trace.gpu_observed, after.trace.gpu_observed),
        *_cut_warnings("before", before),
        *_cut_warnings("after", after),
    ]


def _scenario_warnings(before: Scenario | None, after: Scenario | None) -> list[str]:
    if before is None or after is None:
        missing = [side for side, s in (("before", before), ("after", after)) if s is None]
        return [f"{' and '.join(missing)}: {NO_QUESTION}"]
    old, new = _comparable(before), _comparable(after)
    return [
        f"scenarios differ in {field}: before {_shown(old[field])}, after {_shown(new[field])}"
        + (": only windows with the same boundaries may be compared" if field == "step" else "")
        for field in old
        if old[field] != new[field]
    ]


def _comparable(scenario: Scenario) -> dict[str, object]:
    """The facts two windows must share to be compared (defaults resolved)."""
    return {
        "step": scenario.parts,
        "model_load_in_step": scenario.model_load_in_step,
        "input_shapes": scenario.input_shapes,
        "batch_size": scenario.batch_size,
        "dtype": scenario.dtype,
        "model_mode": scenario.mode,
        "compile": scenario.compile,
        "device": scenario.device,
    }


def _shown(value: object) -> str:
    """A scenario value in words: parts joined by '+', shapes as 8x3x32x32."""
    if value is None or value == ():
        return "not recorded"
    if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
        return "+".join(value)
    if isinstance(value, tuple):
        return ", ".join("x".join(str(n) for n in shape) for shape in value)
    return str(value)


def _marker_warnings(before: bool, after: bool) -> list[str]:
    if before and after:
        return []
    if before or after:
        side = "before" if before else "after"
        return [
            f"ProfilerStep markers in {side} only: the other trace is one window over all "
            "its events, not a step: only windows with the same boundaries may be compared"
        ]
    return ["no ProfilerStep markers: each trace is one window over all its events"]


def _gpu_warnings(before: bool, after: bool) -> list[str]:
    if before == after:
        return []
    side = "before" if before else "after"
    return [
        f"GPU observed in {side} only: GPU busy and idle are not compared, and its kernels "
        "are not told appeared or disappeared"
    ]


def _cut_warnings(side: str, analysis: TraceAnalysis) -> Iterable[str]:
    lists = (
        ("operators", len(analysis.operators), analysis.operators_total),
        ("kernels", len(analysis.kernels), analysis.kernels_total),
    )
    return [
        f"{side}: the analysis lists {listed} of {total} {what}: names beyond them cannot be "
        "told to have appeared or disappeared"
        for what, listed, total in lists
        if listed < total
    ]
