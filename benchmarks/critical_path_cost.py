"""What the critical path adds to the analysis of a trace, A/B interleaved.

    .venv/bin/python benchmarks/critical_path_cost.py [--repeats 5] [TRACE ...]

What is measured
----------------
Per trace, two A/B pairs, each interleaved for ``--repeats`` rounds, the order of the pair
alternating; ``with``: every figure, the critical path and the ``cuda_sync`` fields it
reads included; ``without``: every figure but the critical path (its field group is then
not decoded).

- ``analysis``: in this process, what the figures cost alone: the trace read with the
  fields the figures need, every figure computed (no report, no rendering). Wall and CPU
  time. The strictest ratio: the rest of the command is left out of both sides.
- ``command``: the whole ``steptrace analyze TRACE --format json`` as a user runs it, a new
  process each time, with ``--critical-path`` or without (the figure is on demand). Wall
  time of the process: it includes writing the path's segments into the JSON.

Reported: medians and the ratios with / without of the medians. The issue's budget: the
critical path adds at most 15% to ``analyze`` on the 54 MB trace (V100 DDP, 216,092
events), else it is computed on demand. Measured before the choice (the figure then on by
default): 1.38x the command there, 2.25x on the V100 nanosecond trace (its JSON holds
every segment of every step): so it is on demand, ``--critical-path``, and on by default
in ``investigate``. Default traces: that one, the H100 Qwen inference
(many small kernels, one step), the V100 nanosecond trace (GPU-bound steps).
"""

from __future__ import annotations

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
    SHARED / "gpu" / "v100_1rank_train_nsres__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
)
FIGURE = "critical_path"


def analyzed(path: Path, with_path: bool) -> tuple[float, float, bool]:
    """(wall s, CPU s, whether a path was found) of one analysis."""
    chosen = [f for f in figures([*_names(), FIGURE]) if with_path or f.name != FIGURE]
    return figure_cost.timed_analysis(path, chosen, FIGURE)


def _names() -> list[str]:
    return [f.name for f in figures()]


def command(path: Path, with_path: bool) -> float:
    """Wall s of one ``steptrace analyze PATH --format json`` process."""
    flags = ["--critical-path"] if with_path else []
    return figure_cost.timed_command(path, figure_cost.MAIN, flags)


def _without_is_without() -> None:
    """The ``without`` side really drops the figure (on demand: not computed unless asked)."""
    assert FIGURE not in _names()


def main() -> None:
    _without_is_without()
    sides = figure_cost.Sides(analyzed, command)
    description = __doc__.splitlines()[0]
    figure_cost.main("critical_path_cost", description, "path found", sides, DEFAULT, repeats=5)


if __name__ == "__main__":
    main()
