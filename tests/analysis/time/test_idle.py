"""Idle gaps and their causes: the host filled them too late, a blocking call ended in
them, nothing followed, or not known; one cause each, in that order of precedence."""

from __future__ import annotations

import numpy as np
import pytest

from steptrace.analysis.time.gpu_busy import GpuBusy, gpu_busy
from steptrace.analysis.time.idle import (
    AFTER_SYNC,
    NOT_KNOWN,
    NOTHING_AFTER,
    WAITING_ON_HOST,
    SyncCalls,
    idle_gaps_us,
)
from steptrace.analysis.time.links import cpu_tree, gpu_links
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


NO_SYNC = SyncCalls(np.zeros(0), np.zeros(0))


def gaps(
    gpu: GpuBusy,
    lo: float,
    hi: float,
    sync_ends: list[float] | None = None,
    blocked: float = 1e9,
) -> list[tuple[float, float, str]]:
    """(start, end, cause) of each gap of ``[lo, hi)``; each blocking call ends at one of
    ``sync_ends`` after blocking the host ``blocked`` µs."""
    ends = np.array(sync_ends or [], dtype=float)
    found = idle_gaps_us(gpu, SyncCalls.of(ends - blocked, ends), lo, hi)
    return list(
        zip(found.start_us.tolist(), found.end_us.tolist(), found.cause.tolist(), strict=True)
    )


def test_without_linked_work_no_gap_is_blamed_on_the_host() -> None:
    gpu = timeline(kernel("a", 0, 10), kernel("b", 20, 10))
    assert gaps(gpu, 0, 100) == [(10, 20, NOT_KNOWN), (30, 100, NOTHING_AFTER)]


def test_a_gap_is_the_hosts_when_the_next_launch_ended_after_the_gpu_went_idle() -> None:
    gpu = timeline(
        *launched("first", 0, 10, launch_end=2, corr=1),
        *launched("late", 20, 10, launch_end=18, corr=2),  # gap [10, 20]: launched late
        *launched("queued", 40, 10, launch_end=7, corr=3),  # gap [30, 40]: it was waiting
    )
    assert gaps(gpu, 0, 100) == [
        (10, 20, WAITING_ON_HOST),
        (30, 40, NOT_KNOWN),
        (50, 100, NOTHING_AFTER),
    ]
    assert idle_gaps_us(gpu, NO_SYNC, 0, 100).total_ms(WAITING_ON_HOST) == 0.01


def test_the_gaps_at_the_steps_edges_count_like_the_others() -> None:
    gpu = timeline(*launched("only", 20, 10, launch_end=19, corr=1))
    assert gaps(gpu, 0, 100) == [(0, 20, WAITING_ON_HOST), (30, 100, NOTHING_AFTER)]


def test_gaps_are_clipped_to_the_step() -> None:
    gpu = timeline(
        *launched("a", 0, 10, launch_end=1, corr=1),
        *launched("b", 20, 10, launch_end=15, corr=2),
        *launched("c", 40, 10, launch_end=35, corr=3),
    )
    assert gaps(gpu, 0, 25) == [(10, 20, WAITING_ON_HOST)]
    assert gaps(gpu, 25, 60) == [(30, 40, WAITING_ON_HOST), (50, 60, NOTHING_AFTER)]


def test_streams_are_merged_before_looking_for_gaps() -> None:
    gpu = timeline(
        *launched("a", 0, 10, launch_end=1, corr=1),
        kernel("b", 5, 10, stream=8, correlation=2),
        runtime("cudaLaunchKernel", 11, 1, correlation=2),  # late, but b ran while a did
        *launched("c", 25, 5, launch_end=20, corr=3),  # gap [15, 25]
    )
    assert gaps(gpu, 0, 30) == [(15, 25, WAITING_ON_HOST)]


def test_a_gap_before_unlinked_work_is_not_blamed_on_the_host() -> None:
    gpu = timeline(
        *launched("a", 0, 10, launch_end=1, corr=1),
        kernel("unlinked", 20, 10),
    )
    assert gaps(gpu, 0, 30) == [(10, 20, NOT_KNOWN)]


@pytest.mark.parametrize(
    ("sync_ends", "expected"),
    [
        ([30], [(25, 30, NOT_KNOWN), (30, 50, AFTER_SYNC), (65, 100, NOTHING_AFTER)]),
        ([5], [(25, 50, NOT_KNOWN), (65, 100, NOTHING_AFTER)]),  # ends while busy
        ([50], [(25, 50, NOT_KNOWN), (65, 100, NOTHING_AFTER)]),  # ends as b starts
        ([25], [(25, 50, AFTER_SYNC), (65, 100, NOTHING_AFTER)]),  # ends as a ends
        ([80], [(25, 50, NOT_KNOWN), (65, 80, NOTHING_AFTER), (80, 100, AFTER_SYNC)]),
        ([30, 40], [(25, 30, NOT_KNOWN), (30, 50, AFTER_SYNC), (65, 100, NOTHING_AFTER)]),
        ([100, -5], [(25, 50, NOT_KNOWN), (65, 100, NOTHING_AFTER)]),  # outside the step
    ],
)
def test_idle_after_a_blocking_call_runs_from_its_end(
    sync_ends: list[float], expected: list[tuple[float, float, str]]
) -> None:
    gpu = timeline(kernel("a", 0, 25), kernel("b", 50, 10), kernel("c", 55, 10, stream=8))
    assert gaps(gpu, 0, 100, sync_ends) == expected


def test_a_blocking_call_comes_before_a_late_launch() -> None:
    gpu = timeline(
        *launched("a", 0, 10, launch_end=1, corr=1),
        *launched("b", 30, 10, launch_end=25, corr=2),  # late, but a sync ended at 15
    )
    assert gaps(gpu, 0, 40, [15]) == [(10, 15, WAITING_ON_HOST), (15, 30, AFTER_SYNC)]
    assert gaps(gpu, 0, 40, [10]) == [(10, 30, AFTER_SYNC)]


def test_a_blocking_call_owns_no_more_idle_than_it_blocked_the_host() -> None:
    """A 2 µs sync followed by 13 s of host work is not 13 s of sync: the rest of the
    gap is the host's (the Triton trace's cudaDeviceSynchronize)."""
    gpu = timeline(
        *launched("a", 0, 10, launch_end=1, corr=1),
        *launched("b", 100, 10, launch_end=95, corr=2),
    )
    assert gaps(gpu, 0, 110, [12], blocked=2) == [
        (10, 12, WAITING_ON_HOST),
        (12, 14, AFTER_SYNC),
        (14, 100, WAITING_ON_HOST),
    ]
    assert gaps(gpu, 0, 110, [12], blocked=200) == [
        (10, 12, WAITING_ON_HOST),
        (12, 100, AFTER_SYNC),
    ]
    host = [(10, 12, WAITING_ON_HOST), (12, 100, WAITING_ON_HOST)]
    assert gaps(gpu, 0, 110, [12], blocked=0) == host
