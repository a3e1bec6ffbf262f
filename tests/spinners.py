"""Processes that keep a CPU busy, for tests that must hold beside other work.

``spinning(2)`` starts two processes that spin until the block ends (each ended by its
own pid), optionally pinned to some cores. ``make test-loaded`` runs the whole suite
beside two of them (``tests/spin.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

SPIN = "import os, sys\nif sys.argv[1:]: os.sched_setaffinity(0, {int(c) for c in sys.argv[1:]})\n"
SPIN += "print('spinning', flush=True)\nwhile True:\n    pass\n"


@contextmanager
def spinning(count: int, cores: tuple[int, ...] = ()) -> Iterator[list[int]]:
    """``count`` spinning processes (on ``cores`` when given) for the block; their pids."""
    started: list[subprocess.Popen[str]] = []
    try:
        for _ in range(count):
            spinner = subprocess.Popen(
                [sys.executable, "-c", SPIN, *map(str, cores)],
                stdout=subprocess.PIPE,
                text=True,
            )
            started.append(spinner)
            assert spinner.stdout is not None
            spinner.stdout.readline()  # it spins from here on
        yield [s.pid for s in started]
    finally:
        for spinner in started:
            spinner.kill()
            spinner.wait()


@contextmanager
def crowded() -> Iterator[tuple[int, ...]]:
    """This thread on two cores (one where there is only one) beside two processes
    spinning on them, as on the project's 2-core machine under load; its cores."""
    before = os.sched_getaffinity(0)
    cores = tuple(sorted(before))[:2]
    os.sched_setaffinity(0, set(cores))
    try:
        with spinning(2, cores):
            yield cores
    finally:
        os.sched_setaffinity(0, before)
