"""The analysis of every real trace in ../shared/traces against a plain-Python reference."""

from __future__ import annotations

import pytest

import steptrace
from tests import reference
from tests.conftest import (
    NO_TRACES,
    Case,
    gpu_trace,
    read_json,
    real_traces,
    report_of,
)

NS = 5e-10  # in ms: half a nanosecond, the trace's own resolution


def test_step_wall_times_match_the_profiler_step_spans(analyzed: Case) -> None:
    windows = reference.step_windows(analyzed.evs)
    result = analyzed.result
    if not windows:
        assert [s.name for s in result.steps] == ["window"]
        assert not result.trace.steps_from_markers
        return
    assert [s.name for s in result.steps] == [w[0] for w in windows]
    for step, (_, lo, hi) in zip(result.steps, windows, strict=True):
        assert step.wall_ms == pytest.approx((hi - lo) / 1e6, abs=NS)
        assert step.start_us == pytest.approx(lo / 1e3, abs=NS * 1e3)


def test_gpu_busy_per_step_is_the_clipped_union(analyzed: Case) -> None:
    gpu = reference.gpu_events(analyzed.evs)
    result = analyzed.result
    assert result.trace.gpu_observed == bool(gpu)
    for step, (lo, hi) in zip(result.steps, _windows(analyzed), strict=True):
        if not gpu:
            assert step.gpu is None  # not observed, never zero
            continue
        expected = reference.busy_ns(gpu, lo, hi)
        assert step.gpu is not None
        assert step.gpu.busy_ms == pytest.approx(expected / 1e6, abs=NS)
        assert step.gpu.idle_ms == pytest.approx((hi - lo - expected) / 1e6, abs=NS)


def test_cpu_busy_per_step_is_the_clipped_union_of_operators(analyzed: Case) -> None:
    ops = [e for e in analyzed.evs if reference.is_cpu_op(e)]
    for step, (lo, hi) in zip(analyzed.result.steps, _windows(analyzed), strict=True):
        assert step.cpu.busy_ms == pytest.approx(reference.busy_ns(ops, lo, hi) / 1e6, abs=NS)
        started = sorted(e.dur for e in ops if lo <= e.start < hi)
        assert step.cpu.operators == len(started)
        if started:
            spread = step.cpu.operator_us
            assert spread is not None
            assert spread.min == pytest.approx(started[0] / 1e3, abs=NS * 1e3)
            assert spread.max == pytest.approx(started[-1] / 1e3, abs=NS * 1e3)
            assert spread.median == pytest.approx(reference.median(started) / 1e3, abs=NS * 1e3)


def test_operator_self_and_inclusive_times_are_exact(analyzed: Case) -> None:
    expected = reference.operator_times(analyzed.evs)
    result = analyzed.result
    assert result.operators_total == len(expected)
    for op in result.operators:
        calls, own, inclusive = expected[op.name]
        assert op.calls == calls, op.name
        assert op.self_ms == pytest.approx(own / 1e6, abs=NS), op.name
        assert op.inclusive_ms == pytest.approx(inclusive / 1e6, abs=NS), op.name


def test_label_exclusive_times_are_the_innermost_label_time(analyzed: Case) -> None:
    for step, (lo, hi) in zip(analyzed.result.steps, _windows(analyzed), strict=True):
        expected = reference.label_exclusive(analyzed.evs, lo, hi)
        measured = {p.name: p.exclusive_ms for p in step.phases}
        assert {n for n, v in measured.items() if v > 0} == {n for n, v in expected.items() if v}
        for name, value in measured.items():
            assert value == pytest.approx(expected.get(name, 0) / 1e6, abs=NS), name
        inclusive = reference.label_inclusive(analyzed.evs, lo, hi)
        for phase in step.phases:
            assert phase.inclusive_ms == pytest.approx(inclusive[phase.name] / 1e6, abs=NS)


def test_gpu_work_launched_by_each_operator_is_exact(analyzed: Case) -> None:
    if not reference.gpu_events(analyzed.evs):
        assert all(o.gpu_ms is None and o.gpu_launches is None for o in analyzed.result.operators)
        return
    expected = reference.launched_gpu_ns(analyzed.evs)
    for op in analyzed.result.operators:
        count, total = expected.get(op.name, (0, 0))
        assert op.gpu_launches == count, op.name
        assert op.gpu_ms == pytest.approx(total / 1e6, abs=NS), op.name


def test_kernel_statistics_are_exact_for_every_kernel(analyzed: Case) -> None:
    expected = reference.kernel_table(analyzed.evs)
    result = analyzed.result
    assert result.kernels_total == len(expected)
    for stat in result.kernels:
        durations = expected[stat.name]
        assert stat.calls == len(durations)
        assert stat.total_ms == pytest.approx(sum(durations) / 1e6, abs=NS)
        assert stat.min_us == pytest.approx(min(durations) / 1e3, abs=NS * 1e3)
        assert stat.max_us == pytest.approx(max(durations) / 1e3, abs=NS * 1e3)
        assert stat.mean_us == pytest.approx(sum(durations) / len(durations) / 1e3, rel=1e-12)


def _windows(case: Case) -> list[tuple[int, int]]:
    """Each analyzed step's span in integer ns: the markers', or the whole trace."""
    windows = reference.step_windows(case.evs)
    if windows:
        return [(lo, hi) for _, lo, hi in windows]
    measured = [e for e in case.evs if e.cat.lower() != "trace"] or case.evs
    return [(min(e.start for e in measured), max(e.end for e in measured))]


def test_no_negative_duration_anywhere(analyzed: Case) -> None:
    result = analyzed.result
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
    doc = reference.read_exact(path)
    name = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    expected = sum(e.dur for e in reference.events(doc) if e.name == name) / 1e6
    result = report_of("resnet50_train_dataloader_nw0").analysis
    measured = sum(p.exclusive_ms for s in result.steps for p in s.phases if p.name == name)
    assert measured == pytest.approx(expected, abs=NS)
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


def test_the_steps_median_leaves_out_a_first_step_shown_apart(analyzed: Case) -> None:
    """A first step more than 10% away from the median of the others is shown apart and
    left out of the summary's median and range (the others' alone), in integer ns."""
    walls = [hi - lo for _, lo, hi in reference.counted_windows(analyzed.evs)]
    if len(walls) < 2:
        assert analyzed.result.summary.first_step is None
        return
    others = reference.median(walls[1:])
    apart = others > 0 and abs(walls[0] - others) * 10 > others
    counted = walls[1:] if apart else walls
    summary = analyzed.result.summary
    assert summary.first_step is not None and summary.first_step.differs == apart
    assert summary.count == len(walls)  # the per-step divisor keeps every step
    wall = summary.wall_ms
    assert wall.median == pytest.approx(reference.median(counted) / 1e6, abs=NS)
    assert (wall.min, wall.max) == (
        pytest.approx(min(counted) / 1e6, abs=NS),
        pytest.approx(max(counted) / 1e6, abs=NS),
    )
