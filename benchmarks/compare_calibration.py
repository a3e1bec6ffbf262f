"""Is ``steptrace.compare`` calibrated on this noisy 2-core machine?

Trials of two kinds, alternated: A against itself (the verdict should be "no detectable
difference") and A against a candidate made 5% slower by design (known extra work: a
small matrix product repeated k times, k measured at start-up to cost 5% of a step; the
results are unchanged, so correctness passes). Targets: at least 95% "no detectable
difference" for A/A, at least 95% "slower" for the 5% candidate. The same workload is
also measured with torch.utils.benchmark (blocked_autorange, Compare) for comparison:
it reports medians and IQRs but gives no verdict.

    .venv/bin/python benchmarks/compare_calibration.py --trials 40 --budget 3
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import torch
from torch.utils import benchmark

import steptrace
from steptrace.validate import TimingPlan

FEATURES, HIDDEN, CLASSES, BATCH = 256, 512, 10, 64
SMALL = torch.randn(32, 32)


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


def median_ms(fn: Any, runs: int = 400) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def calibrate() -> tuple[int, float]:
    """How many small products make a step 5% slower, measured in the step itself."""
    state = make_state()
    step_ms = median_ms(lambda: step(state, BATCHES[0]))
    guess = max(1, round(0.05 * step_ms / median_ms(lambda: extra_work(1), runs=2000)))

    def with_extra(k: int) -> float:
        def run() -> None:
            step(state, BATCHES[0])
            extra_work(k)

        return median_ms(run) / median_ms(lambda: step(state, BATCHES[0]))

    candidates = range(max(1, guess // 2), 2 * guess + 1)
    return min(candidates, key=lambda k: abs(with_extra(k) - 1.05)), step_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=40, help="trials of each kind")
    parser.add_argument("--budget", type=float, default=3.0, help="seconds of timing per trial")
    args = parser.parse_args()
    torch.set_num_threads(1)  # two cores: one for the workload, one for everything else
    repeats, step_ms = calibrate()
    print(f"step {step_ms:.3f} ms; extra work: {repeats} products of 32x32 (designed +5%)")

    def slower(state: dict[str, Any], batch: Any) -> torch.Tensor:
        loss = step(state, batch)
        extra_work(repeats)
        return loss

    def same(state: dict[str, Any], batch: Any) -> torch.Tensor:
        return step(state, batch)

    outcomes: dict[str, list[str]] = {"A/A": [], "A/A+5%": []}
    seconds: dict[str, list[float]] = {"A/A": [], "A/A+5%": []}
    ratios: list[float] = []
    for trial in range(args.trials):
        for kind, candidate in (("A/A", same), ("A/A+5%", slower)):
            started = time.perf_counter()
            result = steptrace.compare(
                step, candidate, make_state=make_state, batches=BATCHES, seed=trial,
                plan=TimingPlan(budget_s=args.budget, seed=trial),
            )  # fmt: skip
            seconds[kind].append(time.perf_counter() - started)
            outcomes[kind].append(result.verdict)
            if kind == "A/A+5%" and result.ratio:
                ratios.append(result.ratio)
        last = ratios[-1] if ratios else float("nan")
        print(
            f"trial {trial + 1:2d}: A/A {outcomes['A/A'][-1]:<25} "
            f"A/A+5% {outcomes['A/A+5%'][-1]:<26} ratio {last:.4f}",
            flush=True,
        )
    quiet = outcomes["A/A"].count("no-detectable-difference") / args.trials
    caught = outcomes["A/A+5%"].count("slower") / args.trials
    print(f"\nA/A: 'no-detectable-difference' in {100 * quiet:.1f}% of {args.trials} trials "
          f"(target >= 95%): {'PASS' if quiet >= 0.95 else 'FAIL'}")  # fmt: skip
    print(f"A/A+5% reported 'slower' in {100 * caught:.1f}% of {args.trials} trials "
          f"(target >= 95%): {'PASS' if caught >= 0.95 else 'FAIL'}")  # fmt: skip
    print(f"measured B/A for the +5% candidate: median {statistics.median(ratios):.4f} "
          f"[{min(ratios):.4f}, {max(ratios):.4f}]")  # fmt: skip
    for kind, values in seconds.items():
        print(f"time per comparison ({kind}): median {statistics.median(values):.1f} s")
    torch_benchmark(slower, same)


def torch_benchmark(slower: Any, same: Any) -> None:
    """The same workload with torch.utils.benchmark, side by side (no verdict there)."""
    results = []
    ratios = []
    for trial in range(5):
        pair = []
        for label, fn in (("A", same), ("A+5%", slower)):
            state = make_state()
            timer = benchmark.Timer(
                stmt="fn(state, batch)", globals={"fn": fn, "state": state, "batch": BATCHES[0]},
                label="training step", sub_label=f"trial {trial}", description=label,
            )  # fmt: skip
            measurement = timer.blocked_autorange(min_run_time=1.0)
            results.append(measurement)
            pair.append(measurement.median)
        ratios.append(pair[1] / pair[0])
    print("\ntorch.utils.benchmark, blocked_autorange(min_run_time=1), same workload:")
    benchmark.Compare(results).print()
    print(
        f"median(A+5%) / median(A) over 5 trials: {', '.join(f'{r:.4f}' for r in ratios)} "
        "(medians and IQRs only: torch.utils.benchmark gives no verdict or interval)"
    )


if __name__ == "__main__":
    main()
