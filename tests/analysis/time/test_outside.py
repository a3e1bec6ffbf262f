"""``gpu_outside_steps``: what no step launched, and GPU time outside every step window."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from steptrace.analysis.measure import measure
from steptrace.analysis.time.gpu import gpu_per_step
from steptrace.analysis.time.gpu_busy import gpu_busy
from steptrace.analysis.time.links import cpu_tree, gpu_links
from steptrace.analysis.time.outside import (
    GpuOutsideSteps,
    GpuWork,
    gpu_outside_steps,
    outside_warnings,
)
from steptrace.analysis.time.steps import StepWindow, find_steps
from steptrace.trace.table import EventTable
from tests.strategies import GRID
from tests.tables import kernel, memcpy, memset, ms, op, runtime, step, table, trace, windows

NOTHING = GpuWork(0, 0, 0, 0.0)


def outside_of(t: EventTable, steps: tuple[StepWindow, ...] | None = None) -> GpuOutsideSteps:
    found = gpu_outside_steps(
        t, steps or find_steps(t).windows, gpu_busy(t, gpu_links(t, cpu_tree(t)))
    )
    assert found is not None
    return found


def gaps_and_edges() -> EventTable:
    """Steps [10, 50], [60, 100], [100, 150]; GPU work before, between, after them."""
    return table(
        step(1, 10, 40),
        step(2, 60, 40),
        step(3, 100, 50),
        kernel("early", 0, 5),  # unlinked: issued at its start, before the first step
        kernel("straddles_first", 8, 4, stream=8),  # [8, 12]: 2 before, 2 inside
        runtime("cudaLaunchKernel", 20, 2, correlation=1),
        kernel("across_gap", 45, 20, correlation=1),  # [45, 65]: 10 in the gap [50, 60]
        runtime("cudaMemcpyAsync", 55, 2, correlation=2),  # launched in the gap
        memcpy("Memcpy HtoD (Pinned -> Device)", 56, 2, correlation=2),
        runtime("cudaLaunchKernel", 140, 2, correlation=3),
        kernel("late", 145, 25, correlation=3),  # [145, 170]: 20 after the last step
        memset(160, 20, stream=9),  # unlinked, issued after the last step: [160, 180]
    )


def test_busy_time_before_between_and_after_the_steps() -> None:
    outside = outside_of(gaps_and_edges())
    assert outside.before_first_step_ms == ms(5 + 2)
    assert outside.between_steps_ms == ms(10)  # [50, 60]: the copy [56, 58] is inside it
    assert outside.after_last_step_ms == ms(30)  # [150, 180]


def test_work_launched_outside_every_step_is_counted_apart() -> None:
    t = gaps_and_edges()
    outside = outside_of(t)
    assert outside.launched_outside_steps == GpuWork(2, 1, 1, ms(5 + 4 + 2 + 20))
    assert outside.launched_before_trace == NOTHING
    steps = gpu_per_step(t, find_steps(t).windows, gpu_busy(t, gpu_links(t, cpu_tree(t))))
    counted = [(g.kernels.count, sum(c.count for c in g.memcpy)) for g in steps if g]
    assert counted == [(1, 0), (0, 0), (1, 0)]  # across_gap, late; the copy is nobody's


def test_without_gpu_work_nothing_is_observed() -> None:
    t = table(step(1, 0, 10), op("aten::mm", 2, 3))
    assert gpu_outside_steps(t, find_steps(t).windows, None) is None
    assert outside_warnings(None) == []


def test_overlapping_steps_leave_no_gap_between_them() -> None:
    t = table(kernel("a", 0, 100))
    outside = outside_of(t, windows((10, 50), (40, 70), (60, 80)))
    assert (outside.before_first_step_ms, outside.between_steps_ms) == (ms(10), 0)
    assert outside.after_last_step_ms == ms(20)


def test_the_warnings_say_each_figure_that_is_not_zero() -> None:
    noticed = measure(trace(gaps_and_edges())).trace.warnings
    assert noticed == (
        "GPU work launched outside every step: 2 kernels, 1 copy, 1 set, 0.031 ms: counted "
        "in no step",
        "0.017 ms of GPU work ran outside every step (0.007 ms before the first, 0.010 ms "
        "between steps): in no step's busy time",
        "0.030 ms of GPU work ran after the last step ended: in no step's busy time, though "
        "counted in the step that launched it, if any",
    )
    quiet = GpuOutsideSteps(NOTHING, NOTHING, 0.0, 0.0, 0.0)
    assert outside_warnings(quiet) == []
    tiny = GpuOutsideSteps(NOTHING, NOTHING, 0.0, 0.0004, 0.0)
    assert outside_warnings(tiny) == [
        "< 0.001 ms of GPU work ran outside every step (< 0.001 ms between steps): in no "
        "step's busy time"
    ]


def test_the_analysis_carries_the_figures_and_none_without_gpu() -> None:
    assert measure(trace(gaps_and_edges())).gpu_outside_steps == outside_of(gaps_and_edges())
    assert measure(trace(table(step(1, 0, 10), op("aten::mm", 2, 3)))).gpu_outside_steps is None


Kernel = tuple[int, int, int | None, int]  # start, duration, launch time, stream
BEFORE = -1  # launch time of a kernel launched before the trace (correlation 0)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, GRID),
            st.integers(0, 15),
            st.none() | st.just(BEFORE) | st.integers(0, GRID),  # None: no correlation
            st.integers(7, 8),
        ),
        min_size=1,
        max_size=12,
    ),
    st.lists(st.tuples(st.integers(0, GRID), st.integers(0, 20)), min_size=1, max_size=4),
)
def test_counts_add_up_and_busy_time_is_partitioned(
    kernels: list[Kernel], bounds: list[tuple[int, int]]
) -> None:
    rows = []
    for k, (start, dur, launch, stream) in enumerate(kernels):
        if launch is None:
            rows.append(kernel(f"k{k}", start, dur, stream))
        elif launch == BEFORE:
            rows.append(kernel(f"k{k}", start, dur, stream, correlation=0))
        else:
            rows.append(kernel(f"k{k}", start, dur, stream, correlation=k + 1))
            rows.append(runtime("cudaLaunchKernel", launch, 1, correlation=k + 1))
    t = table(*rows)
    steps = windows(*sorted((lo, lo + width) for lo, width in bounds))
    timeline = gpu_busy(t, gpu_links(t, cpu_tree(t)))
    outside = gpu_outside_steps(t, steps, timeline)
    per_step = gpu_per_step(t, steps, timeline)
    assert outside is not None
    any_launch = any(launch not in (None, BEFORE) for _, _, launch, _ in kernels)
    before = [k for k in kernels if k[2] == BEFORE and any_launch]
    issued = [k[2] if k[2] not in (None, BEFORE) else k[0] for k in kernels if k not in before]
    in_no_step = [at for at in issued if not any(w.start_us <= at < w.end_us for w in steps)]
    assert outside.launched_before_trace.kernels == len(before)
    assert outside.launched_outside_steps.kernels == len(in_no_step)
    counted = sum(g.kernels.count for g in per_step if g is not None)
    assert counted + len(before) + len(in_no_step) == len(kernels)
    cells = {c for start, dur, _, _ in kernels for c in range(start, start + dur)}
    in_steps = {c for w in steps for c in range(int(w.start_us), int(w.end_us))}
    first, last = min(w.start_us for w in steps), max(w.end_us for w in steps)
    assert outside.before_first_step_ms == ms(len({c for c in cells if c < first}))
    assert outside.after_last_step_ms == ms(len({c for c in cells if c >= last}))
    between = {c for c in cells - in_steps if first <= c < last}
    assert outside.between_steps_ms == ms(len(between))


def test_contiguous_steps_have_nothing_between_them() -> None:
    cuts = [0, 30, 60, 100]
    outside = outside_of(table(kernel("a", 0, 100)), windows(*pairwise(cuts)))
    assert (outside.before_first_step_ms, outside.between_steps_ms) == (0, 0)
    assert outside.after_last_step_ms == 0
