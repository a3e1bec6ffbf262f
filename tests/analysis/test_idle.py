"""Idle causes: gaps the host filled too late, and idle time after a blocking call."""

from __future__ import annotations

import numpy as np
import pytest

from steptrace.analysis.gpu_busy import GpuBusy, gpu_busy
from steptrace.analysis.idle import after_sync_us, waiting_on_host_us
from steptrace.analysis.links import cpu_tree, gpu_links
from tests.tables import Row, kernel, runtime, table


def timeline(*rows: Row) -> GpuBusy:
    t = table(*rows)
    found = gpu_busy(t, gpu_links(t, cpu_tree(t)))
    assert found is not None
    return found


def launched(name: str, start: float, dur: float, launch_end: float, corr: int) -> list[Row]:
    """A kernel and its 1 µs launch call, ending at ``launch_end``."""
    return [
        runtime("cudaLaunchKernel", launch_end - 1, 1, correlation=corr),
        kernel(name, start, dur, correlation=corr),
    ]


def test_no_linked_work_means_not_observed() -> None:
    gpu = timeline(kernel("a", 0, 10), kernel("b", 20, 10))
    assert waiting_on_host_us(gpu, 0, 100) is None


def test_only_gaps_whose_next_launch_ended_after_the_gpu_went_idle() -> None:
    gpu = timeline(
        *launched("first", 0, 10, launch_end=2, corr=1),
        *launched("late", 20, 10, launch_end=18, corr=2),  # gap [10, 20]: launched late
        *launched("queued", 40, 10, launch_end=7, corr=3),  # gap [30, 40]: it was waiting
    )
    assert waiting_on_host_us(gpu, 0, 100) == 10


def test_gaps_before_the_first_and_after_the_last_activity_do_not_count() -> None:
    gpu = timeline(*launched("only", 20, 10, launch_end=19, corr=1))
    assert waiting_on_host_us(gpu, 0, 100) == 0


def test_gaps_are_clipped_to_the_step() -> None:
    gpu = timeline(
        *launched("a", 0, 10, launch_end=1, corr=1),
        *launched("b", 20, 10, launch_end=15, corr=2),
        *launched("c", 40, 10, launch_end=35, corr=3),
    )
    assert waiting_on_host_us(gpu, 0, 25) == 10  # [10, 20]; [30, 40] is outside
    assert waiting_on_host_us(gpu, 25, 60) == 10  # [30, 40]
    assert waiting_on_host_us(gpu, 0, 100) == 20


def test_streams_are_merged_before_looking_for_gaps() -> None:
    gpu = timeline(
        *launched("a", 0, 10, launch_end=1, corr=1),
        kernel("b", 5, 10, stream=8, correlation=2),
        runtime("cudaLaunchKernel", 11, 1, correlation=2),  # late, but b ran while a did
        *launched("c", 25, 5, launch_end=20, corr=3),  # gap [15, 25]
    )
    assert waiting_on_host_us(gpu, 0, 100) == 10


def test_a_gap_before_unlinked_work_is_not_blamed_on_the_host() -> None:
    gpu = timeline(
        *launched("a", 0, 10, launch_end=1, corr=1),
        kernel("unlinked", 20, 10),
    )
    assert waiting_on_host_us(gpu, 0, 100) == 0


@pytest.mark.parametrize(
    ("sync_ends", "lo", "hi", "expected"),
    [
        ([30], 0, 100, 20),  # idle [30, 50] until the next kernel
        ([5], 0, 100, 0),  # ends while the GPU is busy
        ([50], 0, 100, 0),  # ends as the next kernel starts
        ([25], 0, 100, 25),  # ends as a kernel ends: idle [25, 50]
        ([80], 0, 100, 20),  # nothing follows: idle to the step end
        ([30, 40], 0, 100, 20),  # two in one gap: [30, 50] once
        ([30, 70], 0, 100, 50),  # [30, 50] and [70, 100]
        ([30], 0, 45, 15),  # the next kernel starts after the step: cut at its end
        ([100, -5], 0, 100, 0),  # outside the step
        ([], 0, 100, 0),
    ],
)
def test_idle_after_a_blocking_call(
    sync_ends: list[float], lo: float, hi: float, expected: float
) -> None:
    gpu = timeline(kernel("a", 0, 25), kernel("b", 50, 10), kernel("c", 55, 10, stream=8))
    assert after_sync_us(gpu, np.array(sync_ends, dtype=float), lo, hi) == expected
