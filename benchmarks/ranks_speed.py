"""Cost of the cross-rank stage: ``analyze_ranks`` on a 64-rank job against 64 single analyses.

What is measured
----------------
A synthetic 64-rank NCCL job (``tests/across/ranks/synthetic.py``: 10 steps, 8 all-reduces per
step, a planted straggler and clock offsets up to 50 ms) is written to a temporary folder.
In the same process, interleaved for ``--repeats`` rounds:

1. ``steptrace.analyze(path)`` on each of the 64 files (load, measure, find), summed;
2. ``steptrace.analyze_ranks(paths)`` on the 64 files (load and measure each once, then
   match, align, split wait from transfer, find stragglers and the rank findings).

Medians are printed with the ratio 2 / 1: the cross-rank stage should cost little on top
of reading and measuring the ranks (target: ratio <= 1.25).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the synthetic job lives with the tests

from tests.across.ranks.synthetic import Plan, write_job  # noqa: E402

import results  # noqa: E402
import steptrace  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--collectives", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    run = results.Run.start()
    plan = Plan(
        ranks=args.ranks,
        steps=args.steps,
        collectives=args.collectives,
        slow_rank=args.ranks // 3,
        delay_ns=3_000_000,
        max_offset_ns=50_000_000,
    )
    with tempfile.TemporaryDirectory() as folder:
        paths, _ = write_job(plan, Path(folder))
        size = sum(p.stat().st_size for p in paths)
        single, together = [], []
        for _ in range(args.repeats):
            t = time.perf_counter()
            for path in paths:
                steptrace.analyze(path)
            single.append(time.perf_counter() - t)
            t = time.perf_counter()
            report = steptrace.analyze_ranks(paths, progress=False)
            together.append(time.perf_counter() - t)
    a, b = statistics.median(single), statistics.median(together)
    print(
        f"{args.ranks} ranks, {args.steps} steps, {args.collectives} collectives per step, "
        f"{size / 1e6:.1f} MB of JSON; medians of {args.repeats}"
    )
    print(f"  {args.ranks} single analyses: {a:.3f} s")
    print(f"  analyze_ranks:        {b:.3f} s")
    print(
        f"  ratio analyze_ranks / single analyses: {b / a:.2f} "
        f"({'PASS' if b / a <= 1.25 else 'FAIL'} <= 1.25)"
    )
    print(f"  stragglers found: {[(s.rank, s.phase) for s in report.stragglers]}")
    row = [
        args.ranks,
        args.steps,
        args.collectives,
        f"{size / 1e6:.1f}",
        args.repeats,
        f"{a:.3f}",
        f"{b:.3f}",
        f"{b / a:.2f}",
        "PASS" if b / a <= 1.25 else "FAIL",
        ", ".join(f"rank {s.rank} in {s.phase}" for s in report.stragglers) or "none",
    ]
    results.write("ranks_speed", run, RESULT_COLUMNS, [row])


RESULT_COLUMNS = (
    "ranks",
    "steps",
    "collectives per step",
    "JSON MB",
    "rounds",
    "single analyses s",
    "analyze_ranks s",
    "analyze_ranks / single analyses",
    "target <= 1.25",
    "stragglers found",
)


if __name__ == "__main__":
    main()
