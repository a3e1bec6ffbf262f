"""Does the harness itself cost anything? ``profile_training`` vs a bare torch.profiler loop.

Both run the same MLP training step (about 3 ms on 2 CPU cores), the same schedule and the
same (default, minimal) profiler options and labels; the bare loop is the seeds' example
written by hand. The per-step time of each is the median ``ProfilerStep#N`` wall time of
its trace (the same instrument for both), so whatever the harness adds inside a step
(clock reads, schedule bookkeeping, batch wrapper) shows up. The two are interleaved,
alternating which goes first, for ``--rounds`` rounds, so drift and order hit both alike.
Target: the harness adds under 2% (median over rounds of harness / bare).

    .venv/bin/python benchmarks/capture_overhead.py --rounds 10 --active 20
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from torch.utils.data import DataLoader, TensorDataset

import steptrace

BATCH, FEATURES, HIDDEN, CLASSES = 64, 256, 512, 10


def workload(batches: int) -> tuple[torch.nn.Module, torch.optim.Optimizer, DataLoader]:  # type: ignore[type-arg]
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, CLASSES),
    )  # fmt: skip
    data = TensorDataset(
        torch.randn(BATCH * batches, FEATURES), torch.randint(0, CLASSES, (BATCH * batches,))
    )
    return model, torch.optim.Adam(model.parameters()), DataLoader(data, batch_size=BATCH)


def step_ms(trace: Path) -> float:
    return statistics.median(s.wall_ms for s in steptrace.analyze(trace).analysis.steps)


def harness(folder: Path, active: int, index: int) -> float:
    model, optimizer, loader = workload(2 + active + 1)
    result = steptrace.profile_training(
        model, optimizer, torch.nn.functional.cross_entropy, loader,
        scenario=steptrace.Scenario(question="What does the harness cost?", batch_size=BATCH),
        out=folder / f"harness-{index}.json", active=active, cold_steps=1,
    )  # fmt: skip
    return step_ms(Path(result.trace))


def bare(folder: Path, active: int, index: int) -> float:
    """The seeds' loop by hand: same labels, schedule, options; one cold step first."""
    model, optimizer, loader = workload(2 + active + 1)
    trace = folder / f"bare-{index}.json"
    iterator = iter(loader)
    model.train()
    x, y = next(iterator)  # the cold step the harness also runs outside the window
    optimizer.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=1, warmup=1, active=active, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(str(trace)),
    ) as prof:
        for _ in range(2 + active):
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
    return step_ms(trace)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--active", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(1)  # a 2-core machine: leave one core to the rest of the system
    started = time.perf_counter()
    ratios, harness_ms, bare_ms = [], [], []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        harness(folder, 3, -1)  # warm both paths once (imports, allocator), not counted
        bare(folder, 3, -1)
        for k in range(args.rounds):
            if k % 2 == 0:  # alternate who goes first, so order cannot bias the ratio
                h, b = harness(folder, args.active, k), bare(folder, args.active, k)
            else:
                b, h = bare(folder, args.active, k), harness(folder, args.active, k)
            harness_ms.append(h)
            bare_ms.append(b)
            ratios.append(h / b)
            print(f"round {k + 1:2d}: harness {h:.3f}  bare {b:.3f} ms/step  ratio {h / b:.4f}")
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    print(f"\nper-step time, median over {args.rounds} rounds of {args.active} active steps:")
    print(
        f"  harness {statistics.median(harness_ms):.3f}  bare {statistics.median(bare_ms):.3f} ms"
    )
    print(
        f"  harness / bare: median {statistics.median(ratios):.4f}  IQR [{q1:.4f}, {q3:.4f}]"
        f"  min {min(ratios):.4f}  max {max(ratios):.4f}"
    )
    added = (statistics.median(ratios) - 1) * 100
    verdict = "PASS" if added < 2 else "FAIL"
    print(f"  the harness adds {added:+.2f}% per step (target < 2%): {verdict}")
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
