"""Overlapping ``ProfilerStep``s: named in a warning, and each launch counted in one step."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steptrace.analysis.measure import measure
from steptrace.analysis.time.gpu import GpuStep, gpu_per_step
from steptrace.analysis.time.gpu_busy import gpu_busy
from steptrace.analysis.time.links import cpu_tree, gpu_links
from steptrace.analysis.time.steps import (
    StepWindow,
    find_steps,
    overlap_warnings,
    overlapping,
    step_of,
)
from steptrace.trace.table import EventTable
from tests.strategies import GRID
from tests.tables import kernel, runtime, step, table, trace, windows


def per_step(t: EventTable, steps: tuple[StepWindow, ...] | None = None) -> list[GpuStep]:
    found = gpu_per_step(t, steps or find_steps(t).windows, gpu_busy(t, gpu_links(t, cpu_tree(t))))
    return [g for g in found if g is not None]


def names(pairs: tuple[tuple[StepWindow, StepWindow], ...]) -> list[tuple[str, str]]:
    return [(a.name, b.name) for a, b in pairs]


def test_overlapping_pairs_earlier_begun_first() -> None:
    steps = windows((0, 100), (90, 200), (200, 300), (250, 260), (400, 400))
    assert names(overlapping(steps)) == [
        ("ProfilerStep#1", "ProfilerStep#2"),
        ("ProfilerStep#3", "ProfilerStep#4"),  # nested
    ]
    assert overlapping(windows((0, 10), (10, 20), (20, 20))) == ()  # touching, empty


def test_overlapping_whatever_the_order_given() -> None:
    a, b, c = windows((50, 80), (0, 60), (100, 120))
    assert names(overlapping((a, b, c))) == [("ProfilerStep#2", "ProfilerStep#1")]


def test_a_zero_length_step_inside_another_is_no_overlap() -> None:
    assert overlapping(windows((0, 100), (50, 50))) == ()


def test_each_time_goes_to_the_latest_begun_step_that_holds_it() -> None:
    steps = windows((0, 100), (50, 150), (60, 70))
    times = np.array([0, 49, 50, 65, 70, 120, 150, np.nan, -1])
    assert step_of(steps, times).tolist() == [0, 0, 1, 2, 1, 1, -1, -1, -1]


def test_step_of_does_not_depend_on_the_order_of_the_windows() -> None:
    first, second = windows((0, 100), (50, 150))
    times = np.array([10.0, 60.0, 120.0])
    assert step_of((second, first), times).tolist() == [1, 0, 0]  # indices into the given tuple


def overlapping_steps() -> EventTable:
    """Step 2 begins (on another thread) before step 1 ends."""
    return table(
        step(1, 0, 100),
        step(2, 80, 100, thread=1),
        runtime("cudaLaunchKernel", 10, 2, correlation=1),
        kernel("a", 20, 10, correlation=1),
        runtime("cudaLaunchKernel", 85, 2, correlation=2),  # in both: goes to step 2
        kernel("b", 90, 20, correlation=2),
        runtime("cudaStreamSynchronize", 95, 3, correlation=3),  # in both: step 2
        runtime("cudaLaunchKernel", 150, 2, correlation=4, thread=1),
        kernel("c", 160, 10, correlation=4),
    )


def test_launches_in_the_overlap_are_counted_once_in_the_later_step() -> None:
    first, second = per_step(overlapping_steps())
    assert (first.kernels.count, second.kernels.count) == (1, 2)
    assert (first.sync_calls, [s.count for s in second.sync_calls]) == ((), [1])
    # busy time stays each step's own window: the overlap [90, 100] is in both
    assert (first.busy_ms, second.busy_ms) == (pytest.approx(0.02), pytest.approx(0.03))


def test_measure_warns_naming_the_steps() -> None:
    result = measure(trace(overlapping_steps()))
    (warning,) = result.trace.warnings
    assert warning.startswith("steps overlap: ProfilerStep#1 and ProfilerStep#2 (0.020 ms)")
    assert [s.wall_ms for s in result.steps] == [pytest.approx(0.1)] * 2  # as written


def test_the_warning_names_three_pairs_and_counts_the_rest() -> None:
    steps = windows(*((10 * k, 10 * k + 15) for k in range(5)))
    (warning,) = overlap_warnings(steps)
    assert "ProfilerStep#3 and ProfilerStep#4 (0.005 ms)" in warning
    assert "ProfilerStep#4 and ProfilerStep#5" not in warning
    assert "and 1 more pairs" in warning
    assert overlap_warnings(windows((0, 10), (10, 20))) == []


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, GRID), st.integers(0, 10)), min_size=1, max_size=10),
    st.lists(st.tuples(st.integers(0, GRID), st.integers(0, 30)), min_size=1, max_size=4),
)
def test_counts_across_overlapping_steps_sum_to_the_launches_inside_any(
    launches: list[tuple[int, int]], bounds: list[tuple[int, int]]
) -> None:
    rows = []
    for k, (at, delay) in enumerate(launches):
        rows.append(runtime("cudaLaunchKernel", at, 1, correlation=k + 1))
        rows.append(kernel(f"k{k}", at + delay, 3, correlation=k + 1))
    steps = windows(*((lo, lo + width) for lo, width in bounds))
    counts = [g.kernels.count for g in per_step(table(*rows), steps)]
    holding = [
        [k for k, w in enumerate(steps) if w.start_us <= at < w.end_us] for at, _ in launches
    ]
    assert sum(counts) == sum(1 for h in holding if h)
    expected = [0] * len(steps)
    for h in holding:
        if h:  # the holder that began last; on a tie, the later one given
            expected[max(h, key=lambda k: (steps[k].start_us, k))] += 1
    assert counts == expected
