"""Communication per step: counted where launched, timed and overlapped on the timeline.

``overlap_with_compute_ms`` is the time, inside the step, during which a communication
kernel and a compute kernel (any other kernel, whichever step launched it) both ran on
the same device.
"""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from steptrace.analysis.time.gpu import GpuStep, gpu_per_step
from steptrace.analysis.time.gpu_busy import gpu_busy
from steptrace.analysis.time.links import cpu_tree, gpu_links
from steptrace.analysis.time.steps import StepWindow, find_steps
from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable
from tests.strategies import GRID
from tests.tables import DEVICE, Row, kernel, ms, runtime, step, table, windows

ALL_REDUCE = "ncclKernel_AllReduce_RING_LL_Sum_float"


def per_step(t: EventTable, steps: tuple[StepWindow, ...] | None = None) -> list[GpuStep]:
    found = gpu_per_step(t, steps or find_steps(t).windows, gpu_busy(t, gpu_links(t, cpu_tree(t))))
    return [g for g in found if g is not None]


def on_device(name: str, start: float, dur: float, device: int, stream: int = 7) -> Row:
    return Row(Kind.KERNEL, name, start, dur, (device, stream), device=device, stream=stream)


def test_compute_launched_in_the_previous_step_overlaps_this_steps_communication() -> None:
    t = table(
        step(1, 0, 100),
        step(2, 100, 100),
        runtime("cudaLaunchKernel", 90, 2, correlation=1),
        kernel("backward_gemm", 110, 40, correlation=1),  # launched in step 1, runs in step 2
        runtime("cudaLaunchKernel", 105, 2, correlation=2),
        kernel(ALL_REDUCE, 120, 50, stream=9, correlation=2),  # [120, 170]
    )
    first, second = per_step(t)
    assert (first.communication.count, second.communication.count) == (0, 1)
    assert second.communication.busy_ms == ms(50)
    assert second.communication.overlap_with_compute_ms == ms(30)  # [120, 150]
    assert first.communication.busy_ms == first.communication.overlap_with_compute_ms == 0


def test_communication_time_is_clipped_to_each_step() -> None:
    t = table(
        step(1, 0, 100),
        step(2, 100, 100),
        runtime("cudaLaunchKernel", 10, 2, correlation=1),
        kernel(ALL_REDUCE, 60, 80, stream=9, correlation=1),  # [60, 140]: launched in step 1
        kernel("gemm", 90, 20),  # [90, 110]: unlinked, counted in step 1
    )
    first, second = per_step(t)
    assert (first.communication.count, second.communication.count) == (1, 0)
    assert (first.communication.busy_ms, second.communication.busy_ms) == (ms(40), ms(40))
    assert first.communication.overlap_with_compute_ms == ms(10)  # [90, 100]
    assert second.communication.overlap_with_compute_ms == ms(10)  # [100, 110]


def test_compute_on_another_device_is_no_overlap() -> None:
    t = table(
        step(1, 0, 100),
        on_device(ALL_REDUCE, 0, 50, device=0, stream=9),
        on_device("gemm", 0, 50, device=1),  # another GPU: not overlapping this one's comm
        on_device(ALL_REDUCE, 60, 20, device=1, stream=9),
        on_device("relu", 70, 20, device=1),  # [70, 80] overlaps on device 1
    )
    (gpu,) = per_step(t)
    assert gpu.communication.count == 2
    assert gpu.communication.busy_ms == ms(70)
    assert gpu.communication.overlap_with_compute_ms == ms(10)


def test_overlaps_on_two_devices_at_once_count_once() -> None:
    t = table(
        step(1, 0, 100),
        on_device(ALL_REDUCE, 0, 40, device=0, stream=9),
        on_device("gemm", 10, 40, device=0),
        on_device(ALL_REDUCE, 20, 40, device=1, stream=9),
        on_device("gemm", 20, 10, device=1),
    )
    (gpu,) = per_step(t)
    assert gpu.communication.busy_ms == ms(60)  # [0, 60]
    assert gpu.communication.overlap_with_compute_ms == ms(30)  # [10, 40] and [20, 30], once


def test_copies_and_sets_are_not_compute() -> None:
    t = table(
        step(1, 0, 100),
        kernel(ALL_REDUCE, 0, 50, stream=9),
        Row(Kind.MEMCPY, "Memcpy DtoD (Device -> Device)", 0, 50, (DEVICE, 7), device=DEVICE),
    )
    (gpu,) = per_step(t)
    assert (gpu.communication.busy_ms, gpu.communication.overlap_with_compute_ms) == (ms(50), 0)


Spec = tuple[int, int, bool, int]  # start, duration, communication?, device


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, GRID), st.integers(0, 15), st.booleans(), st.integers(0, 1)),
        min_size=1,
        max_size=12,
    ),
    st.sets(st.integers(1, GRID - 1), max_size=3),
)
def test_busy_and_overlap_match_a_cell_by_cell_reference(
    kernels: list[Spec], cuts: set[int]
) -> None:
    rows = [
        on_device(ALL_REDUCE if comm else "gemm", start, dur, device, stream=9 if comm else 7)
        for start, dur, comm, device in kernels
    ]
    steps = windows(*pairwise([0, *sorted(cuts), GRID + 15]))
    for window, gpu in zip(steps, per_step(table(*rows), steps), strict=True):
        lo, hi = int(window.start_us), int(window.end_us)
        comm = {d: _cells(kernels, True, d, lo, hi) for d in (0, 1)}
        compute = {d: _cells(kernels, False, d, lo, hi) for d in (0, 1)}
        assert gpu.communication.busy_ms == ms(len(comm[0] | comm[1]))
        overlap = (comm[0] & compute[0]) | (comm[1] & compute[1])
        assert gpu.communication.overlap_with_compute_ms == ms(len(overlap))
        launched = [k for k in kernels if k[2] and lo <= k[0] < hi]  # unlinked: GPU start
        assert gpu.communication.count == len(launched)


def _cells(kernels: list[Spec], comm: bool, device: int, lo: int, hi: int) -> set[int]:
    """Unit cells of ``[lo, hi)`` covered by the communication (or compute) of ``device``."""
    return {
        c
        for start, dur, is_comm, dev in kernels
        if is_comm == comm and dev == device
        for c in range(max(start, lo), min(start + dur, hi))
    }
