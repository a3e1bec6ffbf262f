"""What one figure adds to ``analyze``, A/B interleaved: the part shared by
``memory_cost.py`` and ``critical_path_cost.py`` (a measuring helper with no figures).

Each benchmark gives its two sides: ``analysis(path, with_it)`` (the figures alone, in this
process: wall s, CPU s, whether the figure found anything) and ``command(path, with_it)``
(the whole ``steptrace analyze`` process: wall s). ``measure`` interleaves them for
``repeats`` rounds, the order of each pair alternating, and returns the table's row:
medians and the ratios with / without of the medians; ``main`` is a benchmark's command
line around it.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import results
from process_tree import run_tree
from steptrace.analysis.compose import compute
from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.registry import fields_for
from steptrace.trace.load import read_trace

Analysis = Callable[[Path, bool], tuple[float, float, bool]]
Command = Callable[[Path, bool], float]
MAIN = "from steptrace.cli import main; main()"


def columns(found: str) -> list[str]:
    """The table's columns; ``found``: the heading of whether the figure found anything."""
    return [
        "trace",
        found,
        "analysis s without / with (wall)",
        "analysis with/without (wall)",
        "analysis with/without (CPU)",
        "command s without / with",
        "command with/without",
        "rounds",
    ]


def timed_analysis(
    path: Path, chosen: Sequence[FigureSpec[Any]], name: str
) -> tuple[float, float, bool]:
    """(wall s, CPU s, whether figure ``name`` found anything) of reading the trace with
    the fields ``chosen`` needs and computing them."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    trace = read_trace(path, fields_for(tuple(chosen)), progress=False)
    found = compute(TraceContext(trace), tuple(chosen))
    return time.perf_counter() - wall, time.process_time() - cpu, found.get(name) is not None


def timed_command(path: Path, code: str, flags: Sequence[str] = ()) -> float:
    """Wall s of one ``steptrace analyze PATH --format json`` process running ``code``."""
    argv = [sys.executable, "-c", code, "analyze", str(path), "--format", "json", *flags]
    run = run_tree(argv)
    if run.returncode != 0:
        raise SystemExit(f"analyze failed on {path}: {run.stderr[-300:]}")
    return run.wall_s


def measure(path: Path, repeats: int, analysis: Analysis, command: Command) -> list[str]:
    """The row of one trace (see the module), printed as it is made."""
    runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    whole: dict[bool, list[float]] = {True: [], False: []}
    observed = False
    analysis(path, True)  # warm: imports, the file in the page cache
    for round_ in range(repeats):
        for side in (True, False) if round_ % 2 == 0 else (False, True):
            wall, cpu, found = analysis(path, side)
            runs[side].append((wall, cpu))
            observed |= found
            whole[side].append(command(path, side))
    wall = {s: statistics.median(w for w, _ in runs[s]) for s in runs}
    cpu = {s: statistics.median(c for _, c in runs[s]) for s in runs}
    process = {s: statistics.median(whole[s]) for s in whole}
    row = [
        path.name[:60],
        "yes" if observed else "no",
        f"{wall[False]:.3f} / {wall[True]:.3f}",
        f"{wall[True] / wall[False]:.3f}",
        f"{cpu[True] / cpu[False]:.3f}",
        f"{process[False]:.3f} / {process[True]:.3f}",
        f"{process[True] / process[False]:.3f}",
        str(repeats),
    ]
    print(" | ".join(row), flush=True)
    return row


class Sides(NamedTuple):
    """A benchmark's two sides (see the module)."""

    analysis: Analysis
    command: Command


def main(
    name: str, description: str, found: str, sides: Sides, default: Sequence[Path], repeats: int
) -> None:
    """``python benchmarks/NAME.py [TRACES] [--repeats N]``: the rows of ``default`` traces
    (or those given), written as ``NAME`` in RESULTS.md; ``found``: that column's heading."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--repeats", type=int, default=repeats, help="rounds per trace")
    args = parser.parse_args()
    run = results.Run.start()
    rows = [measure(path, args.repeats, *sides) for path in args.traces or default]
    results.write(name, run, columns(found), rows)
