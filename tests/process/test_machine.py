"""The CPU as the timings see it: the cores, other processes' runnable tasks, the threads
a comparison fits to them, and the clock that leaves out the wait for a CPU."""

from __future__ import annotations

import os
import sys
import time

import pytest

from steptrace.process.clocks import RunningClock, running_clock_works
from steptrace.process.machine import CpuLoad, cpu_load, usable_cores
from tests.spinners import spinning

LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")


def test_threads_fit_the_cores_other_processes_leave() -> None:
    assert CpuLoad(cores=8, others_running=3, load_1min=None).fitting_threads(8) == 5
    assert CpuLoad(cores=8, others_running=0, load_1min=None).fitting_threads(4) == 4
    assert CpuLoad(cores=2, others_running=2, load_1min=None).fitting_threads(2) == 1
    assert CpuLoad(cores=2, others_running=5, load_1min=None).free_cores == 0
    unknown = CpuLoad(cores=2, others_running=None, load_1min=None)
    assert unknown.free_cores is None and unknown.fitting_threads(2) == 2


@LINUX
def test_spinning_processes_are_counted_as_others() -> None:
    with spinning(2):
        time.sleep(0.05)
        load = cpu_load()
    assert load.cores == usable_cores() >= 1
    assert load.others_running is not None and load.others_running >= 2
    assert load.fitting_threads(load.cores) <= max(1, load.cores - 2)


def _work(n: int = 3_000_000) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


@LINUX
@pytest.mark.skipif(not running_clock_works(), reason="no per-thread scheduler statistics")
def test_the_running_clock_leaves_out_a_wait_for_the_cpu_the_wall_clock_counts() -> None:
    """The same work, pinned to one core beside a process spinning on it: the wall clock
    counts the turns the spinner took, the running clock not (it reads the work alone)."""
    before = os.sched_getaffinity(0)
    clock = RunningClock()
    try:
        os.sched_setaffinity(0, {min(before)})
        with spinning(1, cores=(min(before),)):
            wall0, run0 = time.perf_counter(), clock()
            _work()
            wall, running = time.perf_counter() - wall0, clock() - run0
    finally:
        os.sched_setaffinity(0, before)
    assert clock.waited_s > 0.3 * wall  # the spinner had its turns
    assert running < 0.75 * wall
    assert running == pytest.approx(wall - clock.waited_s, rel=0.05)
