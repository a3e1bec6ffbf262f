"""``measure``: every analysis composed on one small trace, GPU absent or present."""

from __future__ import annotations

import pytest

from steptrace.analysis.measure import TraceAnalysis, measure
from steptrace.analysis.spread import Spread
from steptrace.trace.table import Device, Distributed, EventTable
from tests.tables import kernel, label, ms, op, runtime, step, table, trace

AFTER_LAST_STEP = "ms of GPU work ran after the last step ended"


def three_steps() -> EventTable:
    return table(
        step(1, 0, 300),
        step(2, 300, 100),
        step(3, 400, 100),
        label("forward", 10, 100),
        op("aten::mm", 20, 50, grad=True),
        runtime("cudaLaunchKernel", 30, 10, correlation=1),
        kernel("gemm", 60, 100, correlation=1),
        label("forward", 310, 50),
        op("aten::mm", 320, 20),
        runtime("cudaLaunchKernel", 325, 5, correlation=2),
        kernel("gemm", 340, 40, correlation=2),
        runtime("cudaLaunchKernel", 480, 5, correlation=3),
        kernel("relu", 495, 20, correlation=3),  # runs 15 µs past the last step
    )


def spread_ms(median: float, low: float, high: float) -> Spread:
    return Spread(ms(median), ms(low), ms(high))


def analysis() -> TraceAnalysis:
    t = three_steps()
    return measure(trace(t, thread_names={(1, 0): "main"}, warnings=("skipped 2 events",)))


def test_steps_carry_every_figure() -> None:
    result = analysis()
    assert [(s.name, s.number, s.start_us, s.wall_ms) for s in result.steps] == [
        ("ProfilerStep#1", 1, 0, ms(300)),
        ("ProfilerStep#2", 2, 300, ms(100)),
        ("ProfilerStep#3", 3, 400, ms(100)),
    ]
    assert {s.thread for s in result.steps} == {"pid 1 tid 0 (main)"}
    first, second, third = result.steps
    assert [s.gpu.busy_ms if s.gpu else None for s in result.steps] == [ms(100), ms(40), ms(5)]
    assert third.gpu is not None and third.gpu.kernels.count == 1
    (forward,) = first.phases
    assert (forward.name, forward.exclusive_ms, forward.gpu_idle_ms) == ("forward", ms(100), ms(50))
    assert forward.gpu_launches == 1
    assert first.unlabeled_ms == ms(200)
    assert (first.cpu.busy_ms, first.cpu.operators, first.cpu.grad_recording) == (ms(50), 1, 1)
    assert (second.cpu.operators, second.cpu.grad_recording) == (1, 0)
    assert third.phases == () and third.reading is None


def test_the_trace_summary() -> None:
    summary = analysis().trace
    assert summary.gpu_observed and summary.steps_from_markers
    assert (summary.path, summary.events, summary.launch_calls) == ("unit.json", 13, 3)
    first, second = summary.warnings
    assert first == "skipped 2 events"
    assert second.startswith(f"0.015 {AFTER_LAST_STEP}")


def test_steps_together_operators_kernels() -> None:
    result = analysis()
    summary = result.summary
    assert summary.count == 3  # the per-step divisor: every complete step
    assert summary.first_step is not None
    assert summary.first_step.ratio == pytest.approx(3)
    assert summary.first_step.differs  # 300 ms against 100 and 100: shown apart, so the
    assert summary.wall_ms == spread_ms(100, 100, 100)  # medians are the other two steps'
    assert summary.gpu_busy_ms == spread_ms(22.5, 5, 40)
    assert summary.gpu_idle_ms == spread_ms(77.5, 60, 95)
    (forward,) = summary.phases
    assert (forward.name, forward.steps) == ("forward", 1)  # in steps 1 and 2
    assert forward.exclusive_ms == spread_ms(50, 50, 50)
    (mm,) = result.operators
    assert (mm.name, mm.calls, mm.self_ms, mm.gpu_ms, mm.gpu_launches) == (
        "aten::mm",
        2,
        ms(70),
        ms(140),
        2,
    )
    assert [(k.name, k.calls) for k in result.kernels] == [("gemm", 2), ("relu", 1)]
    assert (result.operators_total, result.kernels_total, result.copies) == (1, 2, ())
    top = result.top(1)
    assert [k.name for k in top.kernels] == ["gemm"] and top.kernels_total == 2


def test_without_gpu_every_gpu_figure_is_none() -> None:
    t = table(
        step(1, 0, 100),
        step(2, 100, 100),
        label("x", 10, 50),
        op("aten::mm", 20, 10),
        runtime("cudaMalloc", 25, 2),
    )
    result = measure(trace(t))
    assert not result.trace.gpu_observed
    assert result.trace.warnings == ()
    assert [s.gpu for s in result.steps] == [None, None]
    assert (result.summary.gpu_busy_ms, result.summary.gpu_idle_ms) == (None, None)
    (x,) = result.steps[0].phases
    assert (x.gpu_idle_ms, x.gpu_idle_exclusive_ms, x.gpu_launches) == (None, None, None)
    assert result.summary.phases[0].gpu_idle_ms is None
    assert [(o.gpu_ms, o.gpu_launches) for o in result.operators] == [(None, None)]
    assert (result.kernels, result.copies, result.trace.launch_calls) == ((), (), 1)


def test_without_markers_one_window() -> None:
    result = measure(trace(table(op("aten::mm", 10, 40), kernel("k", 30, 40))))
    assert not result.trace.steps_from_markers
    (window,) = result.steps
    assert (window.name, window.number, window.thread, window.wall_ms) == (
        "window",
        None,
        None,
        ms(60),
    )
    assert window.unlabeled_ms is None
    assert window.gpu is not None and window.gpu.busy_ms == ms(40)
    assert result.summary.first_step is None
    assert result.trace.warnings == ()


def test_what_the_trace_says_about_itself_is_passed_on() -> None:
    devices = (Device(0, "Test GPU", "9.0", 80 * 2**30),)
    info = trace(
        table(step(1, 0, 10)),
        distributed=Distributed(rank=1, world_size=8, backend="nccl"),
        devices=devices,
        base_time_ns=123,
        options={"record_shapes": "1"},
        memory_events=4,
        fwdbwd_flows=2,
        events_total=99,
    )
    summary = measure(info).trace
    assert (summary.rank, summary.world_size, summary.backend) == (1, 8, "nccl")
    assert (summary.devices, summary.base_time_ns, summary.options) == (
        devices,
        123,
        {"record_shapes": "1"},
    )
    assert (summary.memory_events, summary.fwdbwd_flows, summary.events) == (4, 2, 99)
    assert measure(info).steps[0].thread == "pid 1 tid 0"  # no thread name recorded


@pytest.mark.parametrize(
    ("walls", "ratio", "differs"),
    [
        ((105, 100, 100), pytest.approx(1.05), False),
        ((100, 150, 50), pytest.approx(1.0), False),
        ((100, 0, 0), None, False),  # the others take no time: no ratio
    ],
)
def test_the_first_step_beside_the_others(
    walls: tuple[int, ...], ratio: object, differs: bool
) -> None:
    starts = [sum(walls[:k]) for k in range(len(walls))]
    rows = [
        step(k + 1, start, wall) for k, (start, wall) in enumerate(zip(starts, walls, strict=True))
    ]
    rows += [op("aten::add", start, 1) for start in starts]  # no step is an empty stop marker
    first = measure(trace(table(*rows, kernel("k", 0, 10)))).summary.first_step
    assert first is not None
    assert (first.ratio, first.differs) == (ratio, differs)
    assert first.wall_ms == ms(walls[0])


def test_gpu_work_ending_with_the_last_step_is_no_warning() -> None:
    launch = runtime("cudaLaunchKernel", 10, 5, correlation=1)
    ended = measure(trace(table(step(1, 0, 100), launch, kernel("k", 50, 50, correlation=1))))
    assert ended.trace.warnings == ()
    late = measure(trace(table(step(1, 0, 100), launch, kernel("k", 50, 51, correlation=1))))
    (warning,) = late.trace.warnings
    assert warning.startswith(f"0.001 {AFTER_LAST_STEP}")
