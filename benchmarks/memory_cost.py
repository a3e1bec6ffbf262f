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

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import figure_cost
from steptrace.analysis.registry import figures

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
    chosen = [f for f in figures() if with_memory or f.name != "memory"]
    return figure_cost.timed_analysis(path, chosen, "memory")


WITHOUT_MEMORY = (
    "import dataclasses, sys; import steptrace.analysis.registry as r; "
    "r.FIGURES = tuple(dataclasses.replace(f, compute=lambda c: None, groups=frozenset()) "
    "if f.name == 'memory' else f for f in r.FIGURES); " + figure_cost.MAIN
)


def command(path: Path, with_memory: bool) -> float:
    """Wall s of one ``steptrace analyze PATH --format json`` process."""
    return figure_cost.timed_command(path, figure_cost.MAIN if with_memory else WITHOUT_MEMORY)


def _without_is_without() -> None:
    """The ``without`` side really drops the figure and its fields (checked once)."""
    spec = next(f for f in figures() if f.name == "memory")
    assert dataclasses.replace(spec, groups=frozenset()).groups == frozenset()


def main() -> None:
    _without_is_without()
    sides = figure_cost.Sides(analyzed, command)
    description = __doc__.splitlines()[0]
    figure_cost.main("memory_cost", description, "memory observed", sides, DEFAULT, repeats=10)


if __name__ == "__main__":
    main()
