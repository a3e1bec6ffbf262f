"""The analysis of every real trace in ../shared/traces against a plain-Python reference."""

from __future__ import annotations

from pathlib import Path

import pytest

import steptrace
from tests import reference
from tests.conftest import NO_TRACES, gpu_trace, read_json, real_traces, report_of, trace_params


@pytest.fixture(scope="module", params=trace_params())
def analyzed(request: pytest.FixtureRequest) -> tuple[Path, dict, steptrace.TraceAnalysis]:  # type: ignore[type-arg]
    path: Path = request.param
    return path, read_json(path), report_of(path.name).analysis


def test_step_wall_times_match_the_profiler_step_spans(analyzed) -> None:  # type: ignore[no-untyped-def]
    _, doc, result = analyzed
    windows = reference.step_windows(doc)
    if not windows:
        assert [s.name for s in result.steps] == ["window"]
        assert not result.trace.steps_from_markers
        return
    assert [s.name for s in result.steps] == [w[0] for w in windows]
    for step, (_, lo, hi) in zip(result.steps, windows, strict=True):
        assert step.wall_ms == pytest.approx((hi - lo) / 1000, abs=1e-9)


def test_gpu_busy_per_step_is_the_clipped_union(analyzed) -> None:  # type: ignore[no-untyped-def]
    _, doc, result = analyzed
    has_gpu = any(e.get("cat") in reference.GPU_CATEGORIES for e in reference.complete_events(doc))
    assert result.trace.gpu_observed == has_gpu
    for step in result.steps:
        if not has_gpu:
            assert step.gpu is None  # not observed, never zero
            continue
        lo = step.start_us
        hi = lo + step.wall_ms * 1000
        expected_ms = reference.gpu_busy_us(doc, lo, hi) / 1000
        assert step.gpu is not None
        assert step.gpu.busy_ms == pytest.approx(expected_ms, rel=1e-9, abs=1e-6)
        assert step.gpu.idle_ms == pytest.approx(step.wall_ms - expected_ms, rel=1e-9, abs=1e-6)
        assert 0 <= step.gpu.busy_ms <= step.wall_ms + 1e-9


def test_kernel_statistics_are_exact_for_every_kernel(analyzed) -> None:  # type: ignore[no-untyped-def]
    _, doc, result = analyzed
    expected = reference.kernel_table(doc)
    assert result.kernels_total == len(expected)
    for stat in result.kernels:
        durations = expected[stat.name]
        assert stat.calls == len(durations)
        assert stat.total_ms == pytest.approx(sum(durations) / 1000, rel=1e-9)
        assert stat.min_us == min(durations)
        assert stat.max_us == max(durations)
        assert stat.mean_us == pytest.approx(sum(durations) / len(durations), rel=1e-9)


def test_no_negative_duration_anywhere(analyzed) -> None:  # type: ignore[no-untyped-def]
    _, _, result = analyzed
    for step in result.steps:
        for phase in step.phases:
            assert phase.exclusive_ms >= 0 and phase.inclusive_ms >= 0
            assert phase.exclusive_ms <= phase.inclusive_ms + 1e-9
        assert 0 <= step.cpu.busy_ms <= step.wall_ms + 1e-9
        if step.gpu is not None:
            assert step.gpu.idle_ms >= -1e-9
            idle = step.gpu.idle_ms + 1e-9
            assert 0 <= step.gpu.idle_after_sync_ms <= idle
            waiting = step.gpu.idle_waiting_on_host_ms
            assert waiting is None or 0 <= waiting <= idle
            assert step.gpu.kernels.shorter_than_launch <= step.gpu.kernels.count
    assert all(k.min_us >= 0 for k in result.kernels)
    assert all(o.self_ms >= 0 and o.self_ms <= o.inclusive_ms + 1e-9 for o in result.operators)


def test_dataloader_wait_of_the_resnet50_trace() -> None:
    """Provenance says the DataLoader __next__ spans total 415.8 ms over 6 steps."""
    path = gpu_trace("resnet50_train_dataloader_nw0")
    doc = read_json(path)
    name = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    expected = sum(e["dur"] for e in reference.complete_events(doc) if e["name"] == name) / 1000
    result = report_of("resnet50_train_dataloader_nw0").analysis
    measured = sum(p.exclusive_ms for s in result.steps for p in s.phases if p.name == name)
    assert measured == pytest.approx(expected, rel=1e-9)
    assert measured == pytest.approx(415.8, abs=0.05)
    # Labels and ops are told apart in the 2021 vocabulary: autograd nodes are not labels.
    labels = {p.name for s in result.steps for p in s.phases}
    assert name in labels and "AddmmBackward" not in labels
    assert "AddmmBackward" in {o.name for o in result.operators}


def test_sub_microsecond_memsets_keep_their_exact_durations() -> None:
    path = gpu_trace("tracelens_h100")
    doc = read_json(path)
    memsets = [e["dur"] for e in reference.complete_events(doc) if e.get("cat") == "gpu_memset"]
    assert min(memsets) < 1.0
    trace = steptrace.load_trace(path)
    from steptrace.trace.kinds import Kind

    loaded = trace.events.dur_us[trace.events.kind == Kind.MEMSET]
    assert sorted(loaded.tolist()) == sorted(float(d) for d in memsets)


def test_cpu_only_trace_reports_gpu_as_not_observed() -> None:
    paths = [p for p in real_traces() if "cpu" in p.parent.name or "cpu_only" in p.name]
    if not paths:
        pytest.skip(NO_TRACES)
    for path in paths:
        result = report_of(path.name).analysis
        assert not result.trace.gpu_observed
        assert result.summary.gpu_busy_ms is None
        assert all(s.gpu is None for s in result.steps)
        assert all(o.gpu_ms is None for o in result.operators)
