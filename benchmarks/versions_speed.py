"""Is a change as fast as the version before it? ``steptrace analyze`` of two versions, A/B.

    .venv/bin/python benchmarks/versions_speed.py --before 41b0744 [TRACE ...]

What is measured
----------------
The version at ``--before`` (a git ref, checked out in a temporary worktree) and this
checkout, each as a whole ``steptrace analyze TRACE --format json`` process (stdout to
/dev/null), interleaved A B A B ... for ``--repeats`` rounds on each trace, the order of the
pair alternating from round to round. Both run with this interpreter and its packages,
their own source first on ``PYTHONPATH``, their modules compiled to bytecode first (as an
install does). Per run: wall time, and the peak of the whole process tree's summed RSS
(``process_tree``: decoding workers included). Reported: medians, min-max, and the ratios
after / before of the medians. Default traces: the shared 216k-event trace (54 MB of JSON),
and the 8x and 32x replicas of it when ``analyze_speed.py`` and ``scale_one_trace.py`` have
built them (377 MB, 1.7 GB).
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import results
from analyze_speed import DEFAULT_TRACE
from process_tree import TreeRun, run_tree

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "benchmarks" / ".work"
RUN = "import sys; from steptrace.cli import main; main()"
MB = 1_000_000


@dataclass
class Side:
    name: str
    src: Path
    runs: dict[Path, list[TreeRun]] = field(default_factory=dict)

    def argv(self, trace: Path) -> list[str]:
        return [sys.executable, "-c", RUN, "analyze", str(trace), "--format", "json"]

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(self.src)}


def default_traces() -> list[Path]:
    found = [DEFAULT_TRACE]
    for replica in (
        WORK / f"{DEFAULT_TRACE.name.removesuffix('.json.gz')}__x8.json.gz",
        WORK / "scale" / "x32.json.gz",
    ):
        if replica.exists():
            found.append(replica)
    return found


def measure(sides: tuple[Side, Side], traces: list[Path], repeats: int) -> None:
    """Every trace, ``repeats`` rounds of both sides, the pair's order alternating."""
    for trace in traces:
        print(f"\n{trace.name}", flush=True)
        for round_no in range(repeats):
            pair = sides if round_no % 2 == 0 else sides[::-1]
            for side in pair:
                run = run_tree(side.argv(trace), env=side.env())
                if run.returncode != 0:
                    raise SystemExit(f"{side.name} failed on {trace}: {run.stderr[-300:]}")
                side.runs.setdefault(trace, []).append(run)
                print(
                    f"  round {round_no + 1} {side.name:<7} {run.wall_s:7.2f} s "
                    f"{run.peak_rss_bytes / MB:7.0f} MB",
                    flush=True,
                )


def summary(sides: tuple[Side, Side], traces: list[Path]) -> list[list[object]]:
    before, after = sides
    rows: list[list[object]] = []
    print(
        f"\n{'trace':<46} {'before s':>9} {'after s':>9} {'ratio':>6} "
        f"{'before MB':>10} {'after MB':>9} {'ratio':>6}"
    )
    for trace in traces:
        walls = [statistics.median(r.wall_s for r in s.runs[trace]) for s in sides]
        peaks = [statistics.median(r.peak_rss_bytes for r in s.runs[trace]) for s in sides]
        spread = [
            f"{min(r.wall_s for r in s.runs[trace]):.2f}-{max(r.wall_s for r in s.runs[trace]):.2f}"
            for s in sides
        ]
        print(
            f"{trace.name[:46]:<46} {walls[0]:9.2f} {walls[1]:9.2f} {walls[1] / walls[0]:6.2f} "
            f"{peaks[0] / MB:10.0f} {peaks[1] / MB:9.0f} {peaks[1] / peaks[0]:6.2f}"
        )
        rows.append(
            [
                trace.name,
                f"{trace.stat().st_size / MB:.0f}",
                f"{walls[0]:.2f} [{spread[0]}]",
                f"{walls[1]:.2f} [{spread[1]}]",
                f"{walls[1] / walls[0]:.2f}",
                f"{peaks[0] / MB:.0f}",
                f"{peaks[1] / MB:.0f}",
                f"{peaks[1] / peaks[0]:.2f}",
                len(after.runs[trace]),
            ]
        )
    del before
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--before", required=True, help="git ref of the version to compare with")
    parser.add_argument("--repeats", type=int, default=4, help="rounds per trace (default 4)")
    args = parser.parse_args()
    run = results.Run.start()
    traces = args.traces or default_traces()
    with tempfile.TemporaryDirectory() as folder:
        old = Path(folder) / "before"
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(old), args.before],
            check=True,
        )
        try:
            sides = (Side("before", old / "src"), Side("after", REPO / "src"))
            for side in sides:
                compileall.compile_dir(side.src, quiet=1)
            measure(sides, traces, args.repeats)
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(old)], check=False
            )
    rows = summary(sides, traces)
    columns = [
        "trace",
        "file MB",
        f"before ({args.before}) s [min-max]",
        "after s [min-max]",
        "time after/before",
        "before peak MB",
        "after peak MB",
        "peak after/before",
        "rounds",
    ]
    results.write("versions_speed", run, columns, rows)


if __name__ == "__main__":
    main()
