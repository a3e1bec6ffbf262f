"""``gpu_per_step``: busy as a union over streams, work counted in the step that launched it."""

from __future__ import annotations

from itertools import pairwise
from statistics import median

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steptrace.analysis.spread import Spread
from steptrace.analysis.time.gpu import (
    GpuStep,
    communication_names,
    copy_kind,
    gpu_per_step,
)
from steptrace.analysis.time.gpu_busy import gpu_busy
from steptrace.analysis.time.links import cpu_tree, gpu_links
from steptrace.analysis.time.steps import StepWindow, find_steps
from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable
from tests.strategies import GRID
from tests.tables import (
    Row,
    driver,
    kernel,
    memcpy,
    memset,
    ms,
    op,
    runtime,
    step,
    table,
    windows,
)


def per_step(t: EventTable, steps: tuple[StepWindow, ...] | None = None) -> list[GpuStep]:
    results = gpu_per_step(
        t, steps or find_steps(t).windows, gpu_busy(t, gpu_links(t, cpu_tree(t)))
    )
    assert all(r is not None for r in results)
    return [r for r in results if r is not None]


def test_without_gpu_work_every_step_is_none_not_zero() -> None:
    t = table(step(1, 0, 100), step(2, 100, 100), op("aten::mm", 10, 50))
    steps = find_steps(t).windows
    assert gpu_per_step(t, steps, gpu_busy(t, gpu_links(t, cpu_tree(t)))) == (None, None)
    assert gpu_per_step(t, steps, None) == (None, None)


def test_concurrent_streams_are_a_union_never_a_sum() -> None:
    (gpu,) = per_step(table(step(1, 0, 100), kernel("a", 10, 40), kernel("b", 30, 40, stream=8)))
    assert (gpu.busy_ms, gpu.idle_ms) == (ms(60), ms(40))
    assert gpu.utilization == pytest.approx(0.6)
    assert (gpu.kernels.count, gpu.kernels.busy_ms) == (2, ms(60))
    assert gpu.kernels.duration_us == Spread(40, 40, 40)
    assert gpu.streams == (7, 8)


def test_devices_are_a_union_too() -> None:
    other_device = Row(Kind.KERNEL, "b", 5, 10, (1, 7), device=1, stream=7)
    (gpu,) = per_step(table(step(1, 0, 100), kernel("a", 0, 10), other_device))
    assert gpu.busy_ms == ms(15)
    assert gpu.streams == (7,)


def test_work_is_counted_where_launched_and_busy_where_it_ran() -> None:
    t = table(
        step(1, 0, 100),
        step(2, 100, 100),
        runtime("cudaLaunchKernel", 90, 5, correlation=1),
        kernel("late", 120, 30, correlation=1),  # launched in step 1, runs in step 2
        kernel("crossing", 80, 40, stream=8),  # no launch call: counted at its GPU start
    )
    first, second = per_step(t)
    assert (first.busy_ms, second.busy_ms) == (ms(20), ms(50))
    assert (first.kernels.count, second.kernels.count) == (2, 0)
    assert first.kernels.busy_ms == ms(70)  # [80, 150]: its own kernels, wherever they ran
    assert first.launch_delay_us == Spread(25, 25, 25)
    assert (first.streams, second.streams) == ((7, 8), ())
    assert second.kernels.duration_us is None and second.launch_delay_us is None


def test_launch_delay_and_kernels_shorter_than_their_launch() -> None:
    t = table(
        step(1, 0, 200),
        runtime("cudaLaunchKernel", 0, 10, correlation=1),
        kernel("short", 15, 4, correlation=1),  # delay 5, shorter than its 10 µs launch
        runtime("cudaLaunchKernel", 20, 2, correlation=2),
        kernel("long", 32, 8, correlation=2),  # delay 10
        runtime("cudaMemcpyAsync", 40, 3, correlation=3),
        memcpy("Memcpy HtoD (Pinned -> Device)", 73, 10, correlation=3),  # delay 30
        kernel("unlinked", 100, 1),  # no launch: no delay, not compared
    )
    (gpu,) = per_step(t)
    assert gpu.launch_delay_us == Spread(10, 5, 30)
    assert gpu.kernels.shorter_than_launch == 1
    assert gpu.kernels.count == 3
    assert gpu.kernels.duration_us == Spread(4, 1, 8)


def test_a_kernel_as_long_as_its_launch_is_not_shorter() -> None:
    t = table(
        step(1, 0, 100),
        runtime("cudaLaunchKernel", 0, 3, correlation=1),
        kernel("equal", 10, 3, correlation=1),
        runtime("cudaLaunchKernel", 20, 3, correlation=2),
        kernel("shorter", 30, 2.5, correlation=2),
    )
    (gpu,) = per_step(t)
    assert gpu.kernels.shorter_than_launch == 1


def test_unlinked_work_has_no_launch_figures() -> None:
    (gpu,) = per_step(table(step(1, 0, 100), kernel("a", 10, 10), kernel("b", 40, 10)))
    assert gpu.launch_delay_us is None
    assert gpu.idle_waiting_on_host_ms is None  # not observed: no launch call known
    assert gpu.kernels.shorter_than_launch == 0


def test_copies_by_direction_bytes_and_host_memory() -> None:
    t = table(
        step(1, 0, 100),
        memcpy("Memcpy HtoD (Pageable -> Device)", 10, 5, bytes=1000),
        memcpy("Memcpy HtoD (Pinned -> Device)", 12, 5, bytes=500, stream=8),
        memcpy("Memcpy DtoH (Device -> Pageable)", 30, 10),  # no byte count
        memcpy("Memcpy DtoD (Device -> Device)", 50, 5, bytes=64),
        memset(60, 5),
        memset(62, 5, stream=8),
    )
    (gpu,) = per_step(t)
    found = [(c.direction, c.count, c.busy_ms, c.bytes, c.pageable, c.pinned) for c in gpu.memcpy]
    assert found == [
        ("DtoD", 1, ms(5), 64, 0, 0),
        ("DtoH", 1, ms(10), None, 1, 0),
        ("HtoD", 2, ms(7), 1500, 1, 1),
    ]
    pageable = [(c.direction, c.pageable_bytes, c.pageable_busy_ms) for c in gpu.memcpy]
    assert pageable == [("DtoD", 0, 0.0), ("DtoH", None, ms(10)), ("HtoD", 1000, ms(5))]
    assert (gpu.memset.count, gpu.memset.busy_ms) == (2, ms(7))
    assert gpu.kernels.count == 0 and gpu.kernels.duration_us is None
    assert gpu.busy_ms == ms(7 + 10 + 5 + 7)


def test_bytes_add_up_the_known_counts() -> None:
    t = table(
        step(1, 0, 100),
        memcpy("Memcpy HtoD (Pageable -> Device)", 10, 5, bytes=1000),
        memcpy("Memcpy HtoD (Pageable -> Device)", 20, 5),
    )
    ((copies,),) = (g.memcpy for g in per_step(t))
    assert (copies.count, copies.bytes, copies.pageable) == (2, 1000, 2)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Memcpy HtoD (Pageable -> Device)", ("HtoD", "Pageable")),
        ("Memcpy HtoD (Pinned -> Device)", ("HtoD", "Pinned")),
        ("Memcpy DtoH (Device -> Pageable)", ("DtoH", "Pageable")),
        ("Memcpy DtoH (Device -> Pinned)", ("DtoH", "Pinned")),
        ("Memcpy DtoD (Device -> Device)", ("DtoD", None)),
        ("Memcpy PtoP (Device -> Device)", ("PtoP", None)),
        ("Memcpy HtoD", ("HtoD", None)),  # the 2021 vocabulary: no memory kinds
        ("Memcpy DtoH (Device -> Managed)", ("DtoH", None)),
        ("Memset (Device)", ("other", None)),
        ("cudaMemcpyAsync", ("other", None)),
    ],
)
def test_copy_kind(name: str, expected: tuple[str, str | None]) -> None:
    assert copy_kind(name) == expected


def test_communication_is_counted_apart_with_its_overlap_with_compute() -> None:
    t = table(
        step(1, 0, 100),
        kernel("gemm", 0, 30),
        kernel("relu", 35, 10),
        kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 10, 40, stream=9),
    )
    (gpu,) = per_step(t)
    comm = gpu.communication
    assert (comm.count, comm.busy_ms, comm.overlap_with_compute_ms) == (1, ms(40), ms(30))
    assert gpu.kernels.count == 3
    assert gpu.busy_ms == ms(50)


def test_communication_names() -> None:
    t = table(
        kernel("ncclDevKernel_Generic", 0, 1),
        kernel("RCCL_AllGather", 1, 1),
        kernel("gloo_allreduce", 2, 1),
        kernel("gemm", 3, 1),
    )
    assert communication_names(t).tolist() == [True, True, True, False]


def test_sync_calls_per_step_by_name_as_a_union() -> None:
    t = table(
        step(1, 0, 100),
        step(2, 100, 100),
        kernel("k", 0, 5),
        runtime("cudaLaunchKernel", 10, 5, correlation=1),  # not a sync call
        runtime("cudaStreamSynchronize", 40, 20),
        runtime("cudaStreamSynchronize", 50, 20, thread=1),  # overlaps: counted once
        runtime("cudaStreamSynchronize", 70, 5),
        driver("cuCtxSynchronize", 80, 5),
        runtime("cudaDeviceSynchronize", 95, 10),  # starts in step 1
        runtime("cudaStreamSynchronize", 150, 5),
    )
    first, second = per_step(t)
    assert [(s.name, s.count, s.total_ms) for s in first.sync_calls] == [
        ("cuCtxSynchronize", 1, ms(5)),
        ("cudaDeviceSynchronize", 1, ms(10)),
        ("cudaStreamSynchronize", 3, ms(35)),
    ]
    assert [(s.name, s.count, s.total_ms) for s in second.sync_calls] == [
        ("cudaStreamSynchronize", 1, ms(5))
    ]


def test_idle_causes_reach_the_step() -> None:
    t = table(
        step(1, 0, 100),
        runtime("cudaLaunchKernel", 0, 2, correlation=1),
        kernel("first", 0, 25, correlation=1),
        runtime("cudaStreamSynchronize", 20, 10),  # ends at 30, in the gap [25, 50]
        runtime("cudaLaunchKernel", 40, 5, correlation=2),  # ends at 45: after the GPU idled
        kernel("second", 50, 10, correlation=2),
        runtime("cudaLaunchKernel", 70, 5, correlation=3),  # ends at 75: after the GPU idled
        kernel("third", 80, 5, correlation=3),
    )
    (gpu,) = per_step(t)
    assert gpu.idle_after_sync_ms == ms(10)  # [30, 40]: from its end, as long as it blocked
    assert gpu.idle_waiting_on_host_ms == ms(5 + 10 + 20)  # [25, 30], [40, 50], [60, 80]
    assert gpu.idle_ms == ms(25 + 20 + 15)  # and [85, 100]: nothing after it


def test_a_zero_length_step_is_all_zero() -> None:
    t = table(kernel("a", 40, 20), kernel("b", 50, 10, stream=8))
    first, empty, last = per_step(t, windows((0, 50), (50, 50), (50, 100)))
    assert (empty.busy_ms, empty.idle_ms, empty.utilization) == (0, 0, 0)
    assert (empty.kernels.count, empty.streams) == (0, ())
    assert (first.kernels.count, last.kernels.count) == (1, 1)
    assert (first.busy_ms, last.busy_ms) == (ms(10), ms(10))


Kernel = tuple[int, int, int, int | None]  # start, duration, stream, launch delay (None: unlinked)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, GRID),
            st.integers(0, 20),
            st.integers(7, 9),
            st.none() | st.integers(0, 10),
        ),
        min_size=1,
        max_size=12,
    ),
    st.sets(st.integers(1, GRID - 1), max_size=3),
)
def test_busy_and_counts_match_a_cell_by_cell_reference(
    kernels: list[Kernel], cuts: set[int]
) -> None:
    rows = []
    for k, (start, dur, stream, delay) in enumerate(kernels):
        linked = -1 if delay is None else k
        rows.append(kernel(f"k{k % 3}", start, dur, stream, correlation=linked))
        if delay is not None:
            rows.append(runtime("cudaLaunchKernel", start - delay, 1, correlation=k))
    steps = windows(*pairwise([0, *sorted(cuts), GRID]))
    for window, gpu in zip(steps, per_step(table(*rows), steps), strict=True):
        lo, hi = int(window.start_us), int(window.end_us)
        cells = {c for s, d, _, _ in kernels for c in range(s, s + d)}
        mine = [k for k in kernels if lo <= k[0] - (k[3] or 0) < hi]
        assert gpu.busy_ms == ms(len(cells & set(range(lo, hi))))
        assert gpu.idle_ms == ms(hi - lo - len(cells & set(range(lo, hi))))
        assert gpu.kernels.count == len(mine)
        assert gpu.kernels.busy_ms == ms(len({c for s, d, _, _ in mine for c in range(s, s + d)}))
        assert gpu.streams == tuple(sorted({k[2] for k in mine}))
        delays = [d - 1 for _, _, _, d in mine if d is not None]  # each launch lasts 1 µs
        expected = Spread(median(delays), min(delays), max(delays)) if delays else None
        assert gpu.launch_delay_us == expected
