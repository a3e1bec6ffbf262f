"""A command's whole process tree, measured: wall time, CPU time and peak summed RSS.

A command that starts worker processes (a pool decoding one trace, a pool or a Dask
cluster of ranks) holds memory in all of them: ``ru_maxrss`` gives the largest single
process, not their sum. Here a thread samples the tree every 20 ms with psutil and keeps
the peak of the summed RSS (an upper bound: pages a forked worker still shares with its
parent count twice) and each process's last CPU seconds (user + system).
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
    peak_rss_bytes: int  # the largest sum over the tree's processes at one sample
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
        peak = [0]
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
    return TreeRun(wall, sum(cpu.values()), peak[0], child.returncode, err.decode(errors="replace"))


def _sample(pid: int, peak: list[int], cpu: dict[int, float]) -> None:
    """The peak of the summed RSS, and each process's CPU seconds, until the root ends."""
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
        total = 0
        for process in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                total += process.memory_info().rss
                times = process.cpu_times()
                cpu[process.pid] = times.user + times.system
        peak[0] = max(peak[0], total)
        time.sleep(_PERIOD_S)
