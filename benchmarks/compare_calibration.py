"""Is ``steptrace.compare`` calibrated, on a quiet machine and on a busy one?

Trials of three kinds, alternated: A against itself (the verdict should be "no detectable
difference"), and A against candidates made 5% and 15% slower by design (known extra
work: a small matrix product repeated k times, k measured at start-up on the quiet
machine to cost 5% or 15% of a step; the results are unchanged, so correctness passes).
Each kind runs quiet, then busy: N processes spinning on the CPU (default: a load of
2.5x the cores, counting the benchmark), started and stopped by this script.

Targets: quiet - 5% caught >= 95%, A/A false alarm <= 5%; busy - 15% caught >= 90%,
5% caught >= 50%, A/A false alarm <= 5%. The same workload, in the same run and mode, is
measured with torch.utils.benchmark (blocked_autorange): it gives medians and IQRs but
no verdict, so the table shows its median ratio and how often a user reading two medians
("different beyond +-1%") would call a difference.

    .venv/bin/python benchmarks/compare_calibration.py --trials 20 --budget 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils import benchmark

import results
import steptrace
from steptrace.validate import Timed, TimingPlan

FEATURES, HIDDEN, CLASSES, BATCH = 256, 512, 10, 64
SMALL = torch.randn(32, 32)
KINDS = {"A/A": 1.0, "+5%": 1.05, "+15%": 1.15}
TARGETS = {
    ("quiet", "A/A"): 0.05,
    ("quiet", "+5%"): 0.95,
    ("busy", "A/A"): 0.05,
    ("busy", "+5%"): 0.50,
    ("busy", "+15%"): 0.90,
}
Step = Callable[[dict[str, Any], Any], torch.Tensor]
RESULT_COLUMNS = (
    "mode",
    "kind",
    "designed B/A (measured quiet)",
    "trials",
    "compare: called (A/A) or caught",
    "target",
    "compare B/A median [min, max]",
    "torch.utils.benchmark B/A median [min, max]",
    "torch medians read as a difference (beyond ±1%)",
)


def make_state() -> dict[str, Any]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, CLASSES)
    )
    return {"model": model, "optimizer": torch.optim.SGD(model.parameters(), lr=0.01)}


BATCHES = [(torch.randn(BATCH, FEATURES), torch.randint(0, CLASSES, (BATCH,))) for _ in range(8)]


def step(state: dict[str, Any], batch: Any) -> torch.Tensor:
    x, y = batch
    state["optimizer"].zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(state["model"](x), y)
    loss.backward()
    state["optimizer"].step()
    return loss.detach()


def extra_work(repeats: int) -> None:
    for _ in range(repeats):
        torch.mm(SMALL, SMALL)


def low_ms(fn: Callable[[], Any], runs: int = 400) -> float:
    """The 10th percentile of ``runs`` timings: what interference left alone."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.quantiles(times, n=10)[0]


def calibrate(share: float) -> tuple[int, float]:
    """How many small products make a step ``share`` slower, and the ratio they make.

    Measured in the step itself, interleaved with the plain step, by low quantiles (what
    interference left alone); refined three times (their cost is linear in their number).
    """
    state = make_state()
    base = low_ms(lambda: step(state, BATCHES[0]), runs=1000)
    repeats = max(1, round(share * base / (low_ms(lambda: extra_work(50), runs=400) / 50)))

    def ratio(k: int) -> float:
        plain, more = [], []
        for _ in range(400):
            start = time.perf_counter()
            step(state, BATCHES[0])
            middle = time.perf_counter()
            step(state, BATCHES[0])
            extra_work(k)
            plain.append(middle - start)
            more.append(time.perf_counter() - middle)
        return statistics.quantiles(more, n=10)[0] / statistics.quantiles(plain, n=10)[0]

    for _ in range(3):
        repeats = max(1, round(repeats * share / max(ratio(repeats) - 1, share / 10)))
    return repeats, ratio(repeats)


def candidate(repeats: int) -> Step:
    def run(state: dict[str, Any], batch: Any) -> torch.Tensor:
        loss = step(state, batch)
        extra_work(repeats)
        return loss

    return run


@contextmanager
def spinning(count: int) -> Iterator[None]:
    """``count`` processes that spin on the CPU until the block ends."""
    spin = [sys.executable, "-c", "while True: pass"]
    processes = [subprocess.Popen(spin) for _ in range(count)]
    try:
        time.sleep(0.5)
        yield
    finally:
        for process in processes:
            process.kill()
        for process in processes:
            process.wait()


def steptrace_trials(steps: dict[str, Step], trials: int, budget: float) -> dict[str, Any]:
    rows: dict[str, dict[str, list[Any]]] = {
        kind: {"verdict": [], "ratio": [], "estimator": [], "seconds": []} for kind in steps
    }
    for trial in range(trials):
        for kind, side_b in steps.items():
            started = time.perf_counter()
            result = steptrace.compare(
                step,
                side_b,
                make_state=make_state,
                batches=BATCHES,
                plan=TimingPlan(budget_s=budget, seed=trial),
            )
            row = rows[kind]
            row["seconds"].append(time.perf_counter() - started)
            row["verdict"].append(result.verdict)
            timed = isinstance(result, Timed)
            row["ratio"].append(result.ratio if timed else float("nan"))
            row["estimator"].append(result.estimate.estimator if timed else "none")
        print(
            f"  trial {trial + 1:2d}: "
            + "  ".join(
                f"{kind} {rows[kind]['verdict'][-1]} ({rows[kind]['ratio'][-1]:.3f})"
                for kind in steps
            ),
            flush=True,
        )
    return rows


def torch_trials(steps: dict[str, Step], trials: int) -> dict[str, list[float]]:
    """torch.utils.benchmark's median ratio B/A per trial, same workload."""
    ratios: dict[str, list[float]] = {kind: [] for kind in steps}
    for _ in range(trials):
        for kind, side_b in steps.items():
            medians = []
            for fn in (step, side_b):
                timer = benchmark.Timer(
                    stmt="fn(state, batch)",
                    globals={"fn": fn, "state": make_state(), "batch": BATCHES[0]},
                )
                medians.append(timer.blocked_autorange(min_run_time=1.0).median)
            ratios[kind].append(medians[1] / medians[0])
    return ratios


def rate(kind: str, verdicts: list[str]) -> float:
    """False alarms for A/A (any call), detections for the slower candidates."""
    if kind == "A/A":
        return sum(v in ("faster", "slower") for v in verdicts) / len(verdicts)
    return verdicts.count("slower") / len(verdicts)


def report(mode: str, rows: dict[str, Any], torch_ratios: dict[str, list[float]]) -> list[str]:
    print(
        f"\n{mode}: steptrace.compare ({len(rows['A/A']['verdict'])} trials each) beside "
        f"torch.utils.benchmark ({len(torch_ratios['A/A'])} trials each)"
    )
    print(
        f"  {'kind':<5} {'steptrace rate':<26} {'B/A median [min, max]':<26} "
        f"{'decided by':<26} {'s/cmp':>5} | {'torch B/A median [min, max]':<28} "
        "called"
    )
    failures = []
    for kind, row in rows.items():
        value = rate(kind, row["verdict"])
        name = "false alarm" if kind == "A/A" else "caught"
        target = TARGETS.get((mode, kind))
        if target is None:
            mark = ""
        elif (value <= target) if kind == "A/A" else (value >= target):
            mark = " PASS"
        else:
            mark = " FAIL"
            failures.append(f"{mode} {kind}")
        goal = "" if target is None else f" ({'<=' if kind == 'A/A' else '>='}{100 * target:.0f}%)"
        ratios = [r for r in row["ratio"] if r == r] or [float("nan")]
        used = ", ".join(f"{e} {row['estimator'].count(e)}" for e in sorted(set(row["estimator"])))
        t = torch_ratios[kind]
        called = sum(abs(r - 1) > 0.01 for r in t) / len(t)
        print(
            f"  {kind:<5} {f'{name} {100 * value:.0f}%{goal}{mark}':<26} "
            f"{f'{statistics.median(ratios):.3f} [{min(ratios):.3f}, {max(ratios):.3f}]':<26} "
            f"{used:<26} {statistics.median(row['seconds']):5.1f} | "
            f"{f'{statistics.median(t):.3f} [{min(t):.3f}, {max(t):.3f}]':<28} {100 * called:.0f}%"
        )
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20, help="trials of each kind and mode")
    parser.add_argument("--budget", type=float, default=3.0, help="seconds of timing per trial")
    parser.add_argument("--torch-trials", type=int, default=5)
    parser.add_argument("--modes", default="quiet,busy")
    cores = os.cpu_count() or 1
    parser.add_argument(
        "--spinners",
        type=int,
        default=max(1, round(2.5 * cores) - 1),
        help="busy: spinning processes (default: load 2.5x the cores)",
    )
    args = parser.parse_args()
    run = results.Run.start()
    torch.set_num_threads(1)  # two cores: one for the workload, one for everything else
    made = {kind: calibrate(factor - 1) for kind, factor in KINDS.items() if factor > 1}
    print(
        "extra work, calibrated quiet: "
        + "; ".join(
            f"{kind}: {k} products of 32x32, measured B/A {r:.3f}" for kind, (k, r) in made.items()
        )
    )
    steps = {"A/A": step, **{kind: candidate(k) for kind, (k, _) in made.items()}}
    failures = []
    table: list[list[object]] = []
    for mode in args.modes.split(","):
        load = spinning(args.spinners) if mode == "busy" else _nothing()
        print(
            f"\n{mode}"
            + (f": {args.spinners} spinning processes on {cores} cores" if mode == "busy" else ""),
            flush=True,
        )
        with load:
            rows = steptrace_trials(steps, args.trials, args.budget)
            torch_ratios = torch_trials(steps, args.torch_trials)
        failures += report(mode, rows, torch_ratios)
        table += result_rows(mode, rows, torch_ratios, {k: r for k, (_, r) in made.items()})
    print("\nall targets met" if not failures else f"\ntargets missed: {', '.join(failures)}")
    busy = f"{args.spinners} spinning processes when busy; " if "busy" in args.modes else ""
    notes = f"{busy}{args.budget:g} s of timing per trial."
    results.write("compare_calibration", run, RESULT_COLUMNS, table, notes=notes)


def result_rows(
    mode: str, rows: dict[str, Any], torch_ratios: dict[str, list[float]], made: dict[str, float]
) -> list[list[object]]:
    """The mode's figures for RESULTS.md, one row per kind."""
    out: list[list[object]] = []
    for kind, row in rows.items():
        target = TARGETS.get((mode, kind))
        value = rate(kind, row["verdict"])
        met = target is None or (value <= target if kind == "A/A" else value >= target)
        goal = "–" if target is None else f"{'<=' if kind == 'A/A' else '>='} {100 * target:.0f}%"
        ratios = [r for r in row["ratio"] if r == r] or [float("nan")]
        t = torch_ratios[kind]
        out.append(
            [
                mode,
                kind,
                f"{made[kind]:.3f}" if kind in made else "1",
                len(row["verdict"]),
                f"{100 * value:.0f}%",
                goal if target is None else f"{goal} {'PASS' if met else 'FAIL'}",
                f"{statistics.median(ratios):.3f} [{min(ratios):.3f}, {max(ratios):.3f}]",
                f"{statistics.median(t):.3f} [{min(t):.3f}, {max(t):.3f}]",
                f"{100 * sum(abs(r - 1) > 0.01 for r in t) / len(t):.0f}%",
            ]
        )
    return out


@contextmanager
def _nothing() -> Iterator[None]:
    yield


if __name__ == "__main__":
    main()
