"""What the memory figures add to the analysis of a trace, A/B in one process.

    .venv/bin/python benchmarks/memory_cost.py [--repeats 10] [TRACE ...]

What is measured
----------------
Per trace, two A/B pairs, each interleaved for ``--repeats`` rounds, the order of the pair
alternating; ``with``: every figure, the memory figure and the instants it reads included;
``without``: every figure but memory (its field group is then not decoded).

- ``analysis``: in this process, what the figures cost alone: the trace read with the
  fields the figures need, every figure computed (no report, no rendering). Wall and CPU
  time. The strictest ratio: the rest of the command is left out of both sides.
- ``command``: the whole ``steptrace analyze TRACE --format json`` as a user runs it, a new
  process each time (the ``without`` side's memory figure replaced, before the command
  runs, by one that reads nothing and finds nothing). Wall time of the process.

Reported: medians and the ratios with / without of the medians (the issue's target: the
memory figures add at most 10% to ``analyze`` on traces with memory events; about nothing
on traces without). Default traces: the shared ones with ``[memory]`` events that have
``Total Allocated`` (V100 DDP: 28,010 of its 216,092 events; H100 Qwen; a CPU training
trace) and two without (a V100 trace, and the 2021 ResNet50 trace whose memory events carry
``Bytes`` alone: decoded for nothing).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import results
from process_tree import run_tree
from steptrace.analysis.compose import compute
from steptrace.analysis.context import TraceContext
from steptrace.analysis.registry import fields_for, figures
from steptrace.trace.load import read_trace

SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces"
DEFAULT = (
    SHARED / "gpu" / "v100_ddp2_rank1_train_profmem__df_index_resolver.json.gz",
    SHARED
    / "gpu"
    / "tracelens_h100_qwen1.5-0.5b_inference__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    SHARED / "cpu" / "cpu_train_trace_all.json.gz",
    SHARED / "gpu" / "v100_1rank_train_nsres__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    SHARED
    / "gpu"
    / "kineto_v100_resnet50_train_dataloader_nw0.worker0.1623143089861.pt.trace.json.gz",
)


def analyzed(path: Path, with_memory: bool) -> tuple[float, float, bool]:
    """(wall s, CPU s, whether memory was found) of one analysis."""
    chosen = tuple(f for f in figures() if with_memory or f.name != "memory")
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    trace = read_trace(path, fields_for(chosen), progress=False)
    found = compute(TraceContext(trace), chosen)
    return time.perf_counter() - wall, time.process_time() - cpu, found.get("memory") is not None


WITHOUT_MEMORY = (
    "import dataclasses, sys; import steptrace.analysis.registry as r; "
    "r.FIGURES = tuple(dataclasses.replace(f, compute=lambda c: None, groups=frozenset()) "
    "if f.name == 'memory' else f for f in r.FIGURES); "
    "from steptrace.cli import main; main()"
)
WITH_MEMORY = "from steptrace.cli import main; main()"


def command(path: Path, with_memory: bool) -> float:
    """Wall s of one ``steptrace analyze PATH --format json`` process."""
    code = WITH_MEMORY if with_memory else WITHOUT_MEMORY
    argv = [sys.executable, "-c", code, "analyze", str(path), "--format", "json"]
    run = run_tree(argv)
    if run.returncode != 0:
        raise SystemExit(f"analyze failed on {path}: {run.stderr[-300:]}")
    return run.wall_s


def _without_is_without() -> None:
    """The ``without`` side really drops the figure and its fields (checked once)."""
    spec = next(f for f in figures() if f.name == "memory")
    assert dataclasses.replace(spec, groups=frozenset()).groups == frozenset()


def measure(path: Path, repeats: int) -> list[str]:
    runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    whole: dict[bool, list[float]] = {True: [], False: []}
    observed = False
    analyzed(path, True)  # warm: imports, the file in the page cache
    for round_ in range(repeats):
        for side in (True, False) if round_ % 2 == 0 else (False, True):
            wall, cpu, found = analyzed(path, side)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--repeats", type=int, default=10, help="rounds per trace")
    args = parser.parse_args()
    _without_is_without()
    run = results.Run.start()
    rows = [measure(path, args.repeats) for path in args.traces or DEFAULT]
    columns = [
        "trace",
        "memory observed",
        "analysis s without / with (wall)",
        "analysis with/without (wall)",
        "analysis with/without (CPU)",
        "command s without / with",
        "command with/without",
        "rounds",
    ]
    results.write("memory_cost", run, columns, rows)


if __name__ == "__main__":
    main()
