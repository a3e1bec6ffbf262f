"""How much longer the demo's multi-rank part makes ``steptrace demo``.

What is measured
----------------
``steptrace demo --no-ranks`` and ``steptrace demo`` (with the multi-rank part: four
gloo ranks recorded and analyzed together), each as a whole process into a temporary
folder, alternating for ``--repeats`` rounds on this machine. Printed: each run's seconds,
the medians and their ratio, beside the load average (the timings move with it).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import results


def run(flags: list[str]) -> float:
    with tempfile.TemporaryDirectory() as folder:
        code = "from steptrace.cli import main; main()"
        command = [sys.executable, "-c", code, "demo", "--out", folder, *flags]
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    run_info = results.Run.start()
    times: dict[str, list[float]] = {"without": [], "with": []}
    for _ in range(args.repeats):
        for name, flags in (("without", ["--no-ranks"]), ("with", ["--ranks"])):
            seconds = run(flags)
            times[name].append(seconds)
            print(f"{name:>8} ranks: {seconds:6.1f} s (load {os.getloadavg()[0]:.1f})")
    without, with_ranks = (statistics.median(times[k]) for k in ("without", "with"))
    print(f"median: {without:.1f} s without, {with_ranks:.1f} s with: {with_ranks / without:.2f}×")
    each = "; ".join(f"{k}: {', '.join(f'{t:.1f}' for t in runs)}" for k, runs in times.items())
    row = [args.repeats, f"{without:.1f}", f"{with_ranks:.1f}", f"{with_ranks / without:.2f}", each]
    columns = ["rounds", "--no-ranks s", "with ranks s", "with / without", "each run s"]
    results.write("demo_time", run_info, columns, [row])


if __name__ == "__main__":
    main()
