"""A command's whole process tree, measured: wall time, CPU time and peak memory.

A command that starts worker processes (a pool decoding one trace, a pool or a Dask
cluster of ranks) holds memory in all of them: ``ru_maxrss`` gives the largest single
process, not their sum. Here a thread samples the tree every 20 ms with psutil and keeps
two peaks and each process's last CPU seconds (user + system):

* the summed PSS (proportional set size, Linux): a page shared by n processes counts 1/n
  in each, so the sum is the memory the tree takes from the machine. This is the figure
  targets are judged on. A forked worker shares its parent's pages (the interpreter, the
  modules, the ring that carries the text): summed RSS counts them once per process;
* the summed RSS, an upper bound, kept beside it for comparison with earlier rows.

Where PSS cannot be read (not Linux), the summed RSS stands for both.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

_PERIOD_S = 0.02


@dataclass
class TreeRun:
    """One finished command."""

    wall_s: float
    cpu_s: float  # every process of the tree, user + system
    peak_rss_bytes: int  # the largest summed RSS of the tree's processes at one sample
    peak_pss_bytes: int  # the largest summed PSS (see module)
    returncode: int
    stderr: str


def run_tree(
    command: list[str],
    out: Path | None = None,
    env: dict[str, str] | None = None,
    timeout_s: float = 3600.0,
) -> TreeRun:
    """Run ``command`` (stdout to ``out``, else nowhere) and measure its process tree."""
    target = (out if out is not None else Path(os.devnull)).open("wb")
    with target as stdout:
        start = time.perf_counter()
        child = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE, env=env
        )
        peak = [0, 0]
        cpu: dict[int, float] = {}
        sampler = threading.Thread(target=_sample, args=(child.pid, peak, cpu), daemon=True)
        sampler.start()
        try:
            _, err = child.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            child.kill()
            _, err = child.communicate()
        wall = time.perf_counter() - start
        sampler.join()
    stderr = err.decode(errors="replace")
    return TreeRun(wall, sum(cpu.values()), peak[0], peak[1], child.returncode, stderr)


def _sample(pid: int, peak: list[int], cpu: dict[int, float]) -> None:
    """The peaks of the summed RSS and PSS, and each process's CPU seconds, until the root
    ends."""
    try:
        root = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    while True:
        try:
            tree = [root, *root.children(recursive=True)]
            if not root.is_running() or root.status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        rss = pss = 0
        for process in tree:
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                memory = process.memory_full_info()
                rss += memory.rss
                pss += getattr(memory, "pss", memory.rss)
                times = process.cpu_times()
                cpu[process.pid] = times.user + times.system
        peak[0], peak[1] = max(peak[0], rss), max(peak[1], pss)
        time.sleep(_PERIOD_S)
