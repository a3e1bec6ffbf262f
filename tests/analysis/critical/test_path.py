"""The critical path of every real trace, checked against the raw events (integer ns)."""

from __future__ import annotations

import bisect
from collections import defaultdict

import pytest

from steptrace.analysis.context import TraceContext
from steptrace.analysis.critical.path import CriticalPath, StepPath, critical_path
from steptrace.trace.load import load_trace
from tests import reference
from tests.conftest import Case, WriteTrace

KINDS = {"cpu", "launch", "gpu", "wait", "idle"}
CPU_CATEGORIES = {"cpu_op", "user_annotation", "python_function", "Operator", "python"}
GPU_CATEGORIES = reference.GPU_CATEGORIES


def path_of(case: Case) -> CriticalPath:
    found = case.result.critical_path
    return found if found is not None else critical_path(TraceContext(load_trace(case.path)))


def ns(us: float) -> int:
    return round(us * 1000)


def test_segments_tile_the_path_in_time_order(analyzed: Case) -> None:
    found = path_of(analyzed)
    assert len(found.steps) == len(analyzed.result.steps)
    for step, result in zip(found.steps, analyzed.result.steps, strict=True):
        assert step.step == result.name
        assert ns(step.start_us) == ns(result.start_us)
        assert step.segments, step.step
        assert ns(step.segments[0].start_us) == ns(step.start_us)
        assert ns(step.segments[-1].end_us) == ns(step.end_us)
        for before, after in zip(step.segments, step.segments[1:], strict=False):
            assert ns(before.end_us) == ns(after.start_us)  # no gap, no overlap
        assert all(ns(s.end_us) > ns(s.start_us) for s in step.segments)  # no cycle
        assert step.length_ms == pytest.approx((ns(step.end_us) - ns(step.start_us)) / 1e6)
        assert step.length_ms >= step.wall_ms - 1e-6


def test_by_kind_adds_up_to_the_length(analyzed: Case) -> None:
    for step in path_of(analyzed).steps:
        assert set(step.by_kind_ms) == KINDS
        assert sum(step.by_kind_ms.values()) == pytest.approx(step.length_ms, abs=1e-6)
        for kind in KINDS:
            spent = sum(ns(s.end_us) - ns(s.start_us) for s in step.segments if s.kind == kind)
            assert step.by_kind_ms[kind] == pytest.approx(spent / 1e6, abs=1e-5)


def test_each_cpu_and_gpu_segment_lies_inside_a_raw_event_of_its_name(analyzed: Case) -> None:
    spans: dict[tuple[str, bool], list[tuple[int, int]]] = defaultdict(list)
    for e in analyzed.evs:
        if e.cat in GPU_CATEGORIES or e.cat in CPU_CATEGORIES:
            spans[(e.name, e.cat in GPU_CATEGORIES)].append((e.start, e.end))
    for found in spans.values():
        found.sort()
    for step in path_of(analyzed).steps:
        for segment in step.segments:
            if segment.kind in ("cpu", "gpu"):
                assert segment.name is not None
                on_gpu = segment.kind == "gpu"
                assert _inside(spans[(segment.name, on_gpu)], segment), segment
                assert (segment.stream is not None) == on_gpu


def _inside(spans: list[tuple[int, int]], segment: object) -> bool:
    lo, hi = ns(segment.start_us), ns(segment.end_us)  # type: ignore[attr-defined]
    at = bisect.bisect_right(spans, (lo, 2**62))
    return any(s <= lo + 1 and hi <= e + 1 for s, e in spans[max(0, at - 5000) : at])


def test_the_top_operators_and_kernels_are_on_the_path(analyzed: Case) -> None:
    for step in path_of(analyzed).steps:
        _top_matches(step, "cpu", [o.name for o in step.operators], step.operators)
        _top_matches(step, "gpu", [k.name for k in step.kernels], step.kernels)


def _top_matches(step: StepPath, kind: str, names: list[str], listed: tuple) -> None:  # type: ignore[type-arg]
    times = [o.on_path_ms for o in listed]
    assert times == sorted(times, reverse=True)
    for name, ms in zip(names, times, strict=True):
        spent = sum(
            ns(s.end_us) - ns(s.start_us)
            for s in step.segments
            if s.kind == kind and s.name == name
        )
        assert ms == pytest.approx(spent / 1e6, abs=1e-5)


def test_a_step_of_no_time_has_an_empty_path(write_trace: WriteTrace) -> None:
    events = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#1",
            "pid": 1,
            "tid": 1,
            "ts": 0,
            "dur": 0,
        },
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
    ]
    path = critical_path(TraceContext(load_trace(write_trace({"traceEvents": events}))))
    (step,) = path.steps
    assert step.length_ms == 0 and step.segments == ()
    assert all(w.on_path_ms == 0 and w.step_ms == 0 for w in path.what_if)
