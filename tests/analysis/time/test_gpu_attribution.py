"""Which step GPU work belongs to, on every real trace, against plain-Python references.

Kernels are counted in the step whose launch call they follow (``correlation``), never in a
step when they were launched before the trace began (correlation below every launch call's)
or outside every step; GPU time outside every step window is measured; communication
overlap is the time communication and compute kernels ran together on one device. Every
expected figure is recomputed here from the raw JSON with loops and merges.
"""

from __future__ import annotations

import re
from itertools import pairwise

import pytest

from tests import reference
from tests.conftest import Case, gpu_trace, report_of

NS = 5e-10  # in ms: half a nanosecond, the trace's own resolution
LAUNCH_CATEGORIES = {"cuda_runtime", "cuda_driver", "runtime"}
COMMUNICATION = re.compile(r"nccl|rccl|gloo", re.IGNORECASE)
FAR = 2**62  # ns: beyond any trace's end


def correlation(e: reference.Ev) -> int | None:
    value = (e.raw.get("args") or {}).get("correlation")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def launch_calls(evs: list[reference.Ev]) -> dict[int, reference.Ev]:
    """Correlation id -> the first runtime or driver call carrying it."""
    calls: dict[int, reference.Ev] = {}
    for e in evs:
        c = correlation(e)
        if e.cat.lower() in LAUNCH_CATEGORIES and c is not None and c >= 0:
            calls.setdefault(c, e)
    return calls


def launched_before_trace(evs: list[reference.Ev]) -> list[reference.Ev]:
    """GPU events whose correlation id is below every launch call's."""
    calls = launch_calls(evs)
    if not calls:
        return []
    first = min(calls)
    return [
        e for e in reference.gpu_events(evs) if (c := correlation(e)) is not None and 0 <= c < first
    ]


def kernels(evs: list[reference.Ev]) -> list[reference.Ev]:
    return [e for e in evs if e.cat in reference.KERNEL_CATEGORIES]


def test_the_h100_step_counts_the_kernels_it_launched_and_not_those_queued_before() -> None:
    path = gpu_trace("tracelens_h100")
    evs = reference.events(reference.read_exact(path))
    result = report_of(path.name).analysis
    calls = launch_calls(evs)
    (_, lo, hi), *_ = reference.step_windows(evs)
    launched = [
        k for k in kernels(evs) if (c := correlation(k)) in calls and lo <= calls[c].start < hi
    ]
    before = launched_before_trace(evs)
    before_kernels = [e for e in before if e.cat in reference.KERNEL_CATEGORIES]
    assert before_kernels, "this trace starts with kernels queued before profiling began"
    first = result.steps[0].gpu
    assert first is not None
    assert first.kernels.count == len(launched)
    outside = result.gpu_outside_steps
    assert outside is not None
    assert outside.launched_before_trace.kernels == len(before_kernels)
    assert outside.launched_before_trace.count == len(before)
    expected_ms = reference.busy_ns(before, -FAR, FAR) / 1e6
    assert outside.launched_before_trace.busy_ms == pytest.approx(expected_ms, abs=NS)
    assert any(
        w.startswith("GPU work launched before the trace began") for w in result.trace.warnings
    )


def test_every_kernel_is_counted_once_in_a_step_or_apart(analyzed: Case) -> None:
    result, evs = analyzed.result, analyzed.evs
    total = len(kernels(evs))
    outside = result.gpu_outside_steps
    if outside is None:
        assert total == 0 and all(s.gpu is None for s in result.steps)
        return
    in_steps = sum(s.gpu.kernels.count for s in result.steps if s.gpu is not None)
    apart = outside.launched_before_trace.kernels + outside.launched_outside_steps.kernels
    assert in_steps + apart == total
    before = [e for e in launched_before_trace(evs) if e.cat in reference.KERNEL_CATEGORIES]
    assert outside.launched_before_trace.kernels == len(before)


def merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, disjoint spans covering the same time (empty spans dropped)."""
    out: list[list[int]] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


def test_gpu_time_before_between_and_after_the_steps(analyzed: Case) -> None:
    windows = [(lo, hi) for _, lo, hi in reference.step_windows(analyzed.evs)]
    outside = analyzed.result.gpu_outside_steps
    gpu = reference.gpu_events(analyzed.evs)
    if not gpu:
        assert outside is None  # not observed, never zero
        return
    assert outside is not None
    if not windows:  # one window over every event: the GPU's work is all inside it
        assert outside.before_first_step_ms == outside.between_steps_ms == 0
        assert outside.after_last_step_ms == 0
        return
    steps = merged(windows)
    gaps = [(a[1], b[0]) for a, b in pairwise(steps)]
    between = sum(reference.busy_ns(gpu, lo, hi) for lo, hi in gaps)
    assert outside.between_steps_ms == pytest.approx(between / 1e6, abs=NS)
    before = reference.busy_ns(gpu, -FAR, steps[0][0])
    assert outside.before_first_step_ms == pytest.approx(before / 1e6, abs=NS)
    after = reference.busy_ns(gpu, steps[-1][1], FAR)
    assert outside.after_last_step_ms == pytest.approx(after / 1e6, abs=NS)


def test_the_resnet50_trace_has_gpu_work_between_its_steps() -> None:
    path = gpu_trace("resnet50")
    evs = reference.events(reference.read_exact(path))
    windows = [(lo, hi) for _, lo, hi in reference.step_windows(evs)]
    busy = merged([(e.start, e.end) for e in reference.gpu_events(evs)])
    between = 0
    for (_, end), (start, _) in pairwise(windows):
        between += sum(max(0, min(b, start) - max(a, end)) for a, b in busy)
    assert between > 0
    outside = report_of(path.name).analysis.gpu_outside_steps
    assert outside is not None
    assert outside.between_steps_ms == pytest.approx(between / 1e6, abs=NS)
    warnings = report_of(path.name).analysis.trace.warnings
    assert any("between steps" in w for w in warnings)


def intersection(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Time covered by both sorted, disjoint span lists (two pointers)."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def test_communication_time_and_overlap_with_compute_on_one_device(analyzed: Case) -> None:
    ks = kernels(analyzed.evs)
    comm = [k for k in ks if COMMUNICATION.search(k.name)]
    if not comm:  # nothing to overlap: every step says none, or the GPU was not observed
        for step in analyzed.result.steps:
            assert step.gpu is None or step.gpu.communication.busy_ms == 0
        return
    windows = reference.step_windows(analyzed.evs)
    devices = {(k.raw.get("args") or {}).get("device") for k in ks}
    for step, (_, lo, hi) in zip(analyzed.result.steps, windows, strict=True):
        assert step.gpu is not None
        overlap: list[tuple[int, int]] = []
        for device in devices:
            on = [k for k in ks if (k.raw.get("args") or {}).get("device") == device]
            clipped = [(k, (max(k.start, lo), min(k.end, hi))) for k in on]
            c = merged([s for k, s in clipped if COMMUNICATION.search(k.name)])
            rest = merged([s for k, s in clipped if not COMMUNICATION.search(k.name)])
            overlap += intersection(c, rest)
        expected_overlap = reference.merged_length(overlap)
        expected_busy = reference.busy_ns(comm, lo, hi)
        got = step.gpu.communication
        assert got.busy_ms == pytest.approx(expected_busy / 1e6, abs=NS)
        assert got.overlap_with_compute_ms == pytest.approx(expected_overlap / 1e6, abs=NS)
        assert got.busy_ms <= step.wall_ms + NS
