"""The CPU this process runs on: the cores it may use and what else runs on them.

``cpu_load()`` reads, on Linux, the cores this process may run on (its affinity, within
a cgroup's CPU quota), how many tasks of *other* processes are runnable (``procs_running``
of ``/proc/stat`` less this process's own running threads, the median of a few samples a
few milliseconds apart) and the 1-minute load average. ``free_cores`` is what is left of
the cores for this process. Elsewhere the cores come from ``os.cpu_count()`` and the
others are not known (``None``).

Why it matters (measured on this project's 2-core machine, torch 2.13, two other
processes spinning): with 2 intra-op threads, every parallel operator waits at its end
for the thread the scheduler put aside, so every step took one scheduler quantum, 16 ms,
whatever its work (a 3.1 ms step and a 1.2 ms one alike); with 1 thread they took 3.1 and
1.2 ms. Threads beyond the free cores make timings measure the scheduler.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

SAMPLES, SPACING_S = 5, 0.002  # procs_running read this many times, this far apart


class CpuLoad(msgspec.Struct, frozen=True, kw_only=True):
    """The cores this process may use and the runnable tasks of other processes."""

    cores: int  # usable by this process: affinity, within a cgroup's CPU quota
    others_running: int | None  # other processes' runnable tasks (median); None: unknown
    load_1min: float | None  # the 1-minute load average (all processes); None: unknown

    @property
    def free_cores(self) -> int | None:
        """Cores not taken by other processes (0 when they take them all); None: unknown."""
        if self.others_running is None:
            return None
        return max(self.cores - self.others_running, 0)

    def fitting_threads(self, threads: int) -> int:
        """At most ``threads``, at most the free cores, at least 1 (unknown: ``threads``)."""
        free = self.free_cores
        return threads if free is None else max(1, min(threads, free))


def cpu_load(sleep: Callable[[float], None] = time.sleep) -> CpuLoad:
    """The CPU as it is now (a few milliseconds of sampling on Linux)."""
    return CpuLoad(cores=usable_cores(), others_running=_others_running(sleep), load_1min=_load())


def usable_cores() -> int:
    """The cores this process may run on, within a cgroup v2 CPU quota when there is one."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = _cgroup_quota()
    return max(1, min(cores, quota)) if quota is not None else max(cores, 1)


def _cgroup_quota() -> int | None:
    """``cpu.max`` of this process's cgroup v2 as whole cores (rounded up); None: none."""
    try:
        text = Path("/sys/fs/cgroup/cpu.max").read_text(encoding="ascii").split()
        limit, period = text[0], int(text[1])
    except (OSError, IndexError, ValueError):
        return None
    if limit == "max" or period <= 0:
        return None
    try:
        return max(1, -(-int(limit) // period))
    except ValueError:
        return None


def _others_running(sleep: Callable[[float], None]) -> int | None:
    counts = []
    for i in range(SAMPLES):
        if i:
            sleep(SPACING_S)
        running, own = _procs_running(), _own_running()
        if running is None or own is None:
            return None
        counts.append(max(running - own, 0))
    return int(statistics.median_low(counts))


def _procs_running() -> int | None:
    """Runnable tasks on the machine (``procs_running`` of ``/proc/stat``)."""
    try:
        with Path("/proc/stat").open(encoding="ascii") as stat:
            for line in stat:
                if line.startswith("procs_running "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def _own_running() -> int | None:
    """This process's threads that are runnable now (this one, reading, among them)."""
    try:
        tasks = list(Path("/proc/self/task").iterdir())
    except OSError:
        return None
    running = 0
    for task in tasks:
        try:
            text = (task / "stat").read_text(encoding="ascii", errors="replace")
        except OSError:
            continue  # the thread ended meanwhile
        state = text.rpartition(")")[2].split()[:1]
        running += state == ["R"]
    return max(running, 1)


def _load() -> float | None:
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return None
