"""GPU work launched before the trace began: marked, counted in no step, busy where it ran."""

from __future__ import annotations

import numpy as np

from steptrace.analysis.measure import measure
from steptrace.analysis.time.gpu import GpuStep, gpu_per_step
from steptrace.analysis.time.gpu_busy import gpu_busy
from steptrace.analysis.time.links import cpu_tree, gpu_links
from steptrace.analysis.time.steps import find_steps
from steptrace.trace.table import EventTable
from tests.tables import kernel, memcpy, memset, ms, op, runtime, step, table, trace

NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


def one_step(t: EventTable) -> GpuStep:
    (gpu,) = gpu_per_step(t, find_steps(t).windows, gpu_busy(t, gpu_links(t, cpu_tree(t))))
    assert gpu is not None
    return gpu


def qwen_like() -> EventTable:
    """A step whose GPU first drains work queued before profiling began (ids 3 and 4)."""
    return table(
        step(1, 0, 100),
        kernel("queued", 0, 20, correlation=3),  # launched before the trace, runs in the step
        memset(20, 5, correlation=4),
        kernel("queued_nccl", 25, 10, stream=9, correlation=4),
        op("aten::mm", 10, 20),
        runtime("cudaLaunchKernel", 12, 3, correlation=10),
        runtime("cudaLaunchKernel", 16, 3, correlation=11),
        kernel("gemm", 35, 30, correlation=10),
        kernel("relu", 40, 10, stream=8, correlation=11),
    )


def test_work_below_every_launch_correlation_is_marked_before_the_trace() -> None:
    t = table(
        runtime("cudaLaunchKernel", 10, 2, correlation=5),
        runtime("cudaStreamSynchronize", 20, 2, correlation=7),  # every runtime call counts
        kernel("before", 0, 3, correlation=4),
        memcpy("Memcpy DtoD (Device -> Device)", 1, 2, correlation=0),
        kernel("linked", 15, 3, correlation=5),
        kernel("lost_launch", 25, 3, correlation=6),  # above the first id: launch not recorded
        kernel("no_correlation", 30, 3),
    )
    links = gpu_links(t, cpu_tree(t))
    marked = [t.name_of(int(r)) for r in links.rows[links.before_trace]]
    assert marked == ["before", "Memcpy DtoD (Device -> Device)"]


def test_without_any_correlated_launch_call_nothing_is_marked() -> None:
    t = table(runtime("cudaMalloc", 0, 2), kernel("a", 5, 3, correlation=1))
    assert gpu_links(t, cpu_tree(t)).before_trace.tolist() == [False]


def test_the_timeline_has_no_issue_time_for_it() -> None:
    t = qwen_like()
    timeline = gpu_busy(t, gpu_links(t, cpu_tree(t)))
    assert timeline is not None
    names = [t.name_of(int(r)) for r in timeline.rows]
    issued = dict(zip(names, timeline.issued_us.tolist(), strict=True))
    assert np.isnan([issued["queued"], issued["Memset (Device)"], issued["queued_nccl"]]).all()
    assert (issued["gemm"], issued["relu"]) == (12, 16)


def test_the_step_counts_only_what_it_launched_but_is_busy_while_the_old_work_runs() -> None:
    gpu = one_step(qwen_like())
    assert gpu.kernels.count == 2 and gpu.memset.count == 0
    assert gpu.kernels.busy_ms == ms(30)  # [35, 65]: its own kernels only
    assert gpu.busy_ms == ms(65)  # [0, 65]: the GPU was busy, whoever launched the work
    assert gpu.streams == (7, 8)
    assert gpu.communication.count == 0  # the queued collective is not the step's
    assert gpu.communication.busy_ms == ms(10)  # but it ran during the step
    assert gpu.communication.overlap_with_compute_ms == 0


def test_measure_reports_it_apart_with_a_warning() -> None:
    result = measure(trace(qwen_like()))
    outside = result.gpu_outside_steps
    assert outside is not None
    before = outside.launched_before_trace
    assert (before.kernels, before.copies, before.sets) == (2, 0, 1)
    assert before.busy_ms == ms(35)  # [0, 20] + [20, 25] + [25, 35]
    assert outside.launched_outside_steps.count == 0
    (warning,) = result.trace.warnings
    assert warning.startswith("GPU work launched before the trace began: 2 kernels, 1 set, 0.035")
    step_gpu = result.steps[0].gpu
    assert step_gpu is not None and step_gpu.kernels.count == 2
    (mm,) = result.operators
    assert (mm.gpu_launches, mm.gpu_ms) == (2, ms(40))  # the queued work has no operator


def test_without_markers_the_window_does_not_count_it_either() -> None:
    t = table(
        kernel("queued", 0, 10, correlation=1),
        runtime("cudaLaunchKernel", 2, 2, correlation=2),
        kernel("gemm", 10, 5, correlation=2),
    )
    result = measure(trace(t))
    assert not result.trace.steps_from_markers
    (window,) = result.steps
    assert window.gpu is not None and window.gpu.kernels.count == 1
    assert result.gpu_outside_steps is not None
    assert result.gpu_outside_steps.launched_before_trace.kernels == 1
