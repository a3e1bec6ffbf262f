"""Does the harness itself cost anything? ``profile_training`` vs a bare torch.profiler loop.

Both run the same MLP training window (about 3 ms a step on 2 CPU cores): the same
schedule, the same (default, minimal) profiler options and labels, one cold step before
it; the bare loop is the seeds' example written by hand. It is decided the way every A/B
we ship decides: ``steptrace.compare`` with A = the bare loop and B = the harness, one
"step" being one whole captured window (trace written), both trained from the same model
and data - their parameters after it compared first: the harness must not change what
training does. That verdict is the cost of a whole window (set-up and files included).

What the harness adds *inside* the profiled steps - the distortion a user would read in
the trace - is read from the traces that the same comparison wrote: each window's median
``ProfilerStep#N`` wall time, the i-th bare window paired with the i-th harness window
(they ran next to each other), decided by compare's own estimators and noise band.
Target: the harness adds under 2% inside a step (the CI's upper end below 1.02).

    .venv/bin/python benchmarks/capture_overhead.py --budget 30 --active 20
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import tempfile
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from torch.utils.data import DataLoader, TensorDataset

import results
import steptrace
from steptrace.validate import CheckPlan, Timed, TimingPlan
from steptrace.validate.estimators import decide
from steptrace.validate.stats import sentence, verdict

BATCH, FEATURES, HIDDEN, CLASSES = 64, 256, 512, 10
RESULT_COLUMNS = (
    "active steps",
    "bare ms per window",
    "harness ms per window",
    "whole window (compare)",
    "windows paired",
    "bare ms per step",
    "harness ms per step",
    "inside a step: harness / bare [CI]",
    "harness adds at most %",
    "target < 2%",
)
RESULT_NOTES = (
    "A = a bare torch.profiler loop, B = profile_training, one step of compare being one whole"
    " captured window; inside a step: each window's median ProfilerStep wall time, paired."
)


def make_state() -> dict[str, Any]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, HIDDEN),
        torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, HIDDEN),
        torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, CLASSES),
    )
    return {"model": model, "optimizer": torch.optim.Adam(model.parameters())}


def make_data(steps: int) -> TensorDataset:
    generator = torch.Generator().manual_seed(1)
    return TensorDataset(
        torch.randn(BATCH * steps, FEATURES, generator=generator),
        torch.randint(0, CLASSES, (BATCH * steps,), generator=generator),
    )


class Windows:
    """Both ways of capturing a window, each writing new traces into ``folder``."""

    def __init__(self, folder: Path, active: int) -> None:
        self.folder, self.active = folder, active
        self.names = itertools.count()

    def trace(self, kind: str) -> Path:
        return self.folder / f"{kind}-{next(self.names)}.json"

    def harness(self, state: dict[str, Any], data: TensorDataset) -> torch.Tensor:
        steptrace.profile_training(
            state["model"],
            state["optimizer"],
            torch.nn.functional.cross_entropy,
            DataLoader(data, batch_size=BATCH),
            scenario=steptrace.Scenario(question="What does the harness cost?", batch_size=BATCH),
            out=self.trace("harness"),
            window=steptrace.Window(active=self.active, cold_steps=1),
            restore_state=False,
        )
        return next(state["model"].parameters()).detach().sum()

    def bare(self, state: dict[str, Any], data: TensorDataset) -> torch.Tensor:
        """The seeds' loop by hand: same labels, schedule, options; one cold step first."""
        model, optimizer = state["model"], state["optimizer"]
        iterator = iter(DataLoader(data, batch_size=BATCH))
        trace = self.trace("bare")
        model.train()
        x, y = next(iterator)  # the cold step the harness also runs outside the window
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        with profile(
            activities=[ProfilerActivity.CPU],
            schedule=schedule(wait=1, warmup=1, active=self.active, repeat=1),
            on_trace_ready=lambda p: p.export_chrome_trace(str(trace)),
        ) as prof:
            for _ in range(2 + self.active):
                with record_function("read_batch"):
                    x, y = next(iterator)
                with record_function("transfer"):
                    x, y = x.to("cpu"), y.to("cpu")
                with record_function("train"):
                    optimizer.zero_grad(set_to_none=True)
                    with record_function("forward"):
                        loss = torch.nn.functional.cross_entropy(model(x), y)
                    with record_function("backward"):
                        loss.backward()
                    with record_function("optimizer_step"):
                        optimizer.step()
                prof.step()
        return next(model.parameters()).detach().sum()


def step_ms(trace: Path) -> float:
    return statistics.median(s.wall_ms for s in steptrace.analyze(trace).analysis.steps)


def in_window(folder: Path, band: float) -> list[object]:
    """The harness inside the steps: per-window step medians of both sides, paired; its
    figures for RESULTS.md."""
    medians = {
        kind: [step_ms(p) for p in sorted(folder.glob(f"{kind}-*[0-9].json"), key=_index)]
        for kind in ("bare", "harness")
    }
    pairs = min(len(medians["bare"]), len(medians["harness"]))
    bare, harness = medians["bare"][:pairs], medians["harness"][:pairs]
    deciding, other, _ = decide(bare, harness, 1)
    outcome = verdict(deciding, band)
    print(f"inside the steps ({pairs} windows each, median ProfilerStep wall per window):")
    print(f"  bare {statistics.median(bare):.3f}  harness {statistics.median(harness):.3f} ms/step")
    print(
        f"  {sentence(outcome, deciding, band)} ({deciding.estimator}; "
        f"{other.estimator}: {other.ratio:.4f})"
    )
    upper = (deciding.ci[1] - 1) * 100
    print(
        f"  the harness adds at most {upper:+.2f}% inside a step (CI upper end; target < 2%): "
        f"{'PASS' if upper < 2 else 'FAIL'}"
    )
    low, high = deciding.ci
    return [
        pairs,
        f"{statistics.median(bare):.3f}",
        f"{statistics.median(harness):.3f}",
        f"{deciding.ratio:.4f} [{low:.4f}, {high:.4f}]",
        f"{upper:+.2f}",
        "PASS" if upper < 2 else "FAIL",
    ]


def _index(path: Path) -> int:
    return int(path.stem.rpartition("-")[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=30.0, help="seconds of timing")
    parser.add_argument("--active", type=int, default=20)
    args = parser.parse_args()
    run = results.Run.start()
    torch.set_num_threads(1)  # a 2-core machine: leave one core to the rest of the system
    with tempfile.TemporaryDirectory() as scratch:
        windows = Windows(Path(scratch), args.active)
        plan = TimingPlan(budget_s=args.budget, warmup=1)
        result = steptrace.compare(
            windows.bare,
            windows.harness,
            make_state=make_state,
            batches=[make_data(3 + args.active)],
            check=CheckPlan(steps=1),
            plan=plan,
        )
        print(f"A = bare torch.profiler loop, B = profile_training; {args.active} active steps")
        print(f"correctness: {'same parameters' if result.correctness.ok else 'DIFFERENT'}")
        print("whole window (set-up, steps, trace and scenario files):")
        if isinstance(result, Timed):
            for name, side in (("bare", result.baseline), ("harness", result.candidate)):
                print(
                    f"  {name:<8} median {side.median:.1f} ms per window (n={side.n}, "
                    f"IQR {side.iqr:.1f} ms)"
                )
        print(f"  verdict: {result.verdict}; {result.sentence}")
        if isinstance(result, Timed) and result.noise_warning:
            print(f"  warning: {result.noise_warning}")
        inside = in_window(Path(scratch), plan.band)
    sides = (result.baseline, result.candidate) if isinstance(result, Timed) else (None, None)
    medians = [f"{s.median:.1f}" if s else None for s in sides]
    row = [args.active, *medians, result.sentence, *inside]
    results.write("capture_overhead", run, RESULT_COLUMNS, [row], notes=RESULT_NOTES)


if __name__ == "__main__":
    main()
