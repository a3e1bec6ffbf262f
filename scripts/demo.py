"""Record a short, labelled training window with torch.profiler on the CPU, then analyze it.

The seeds' four-step example done right: the iterator is created before the window, the
step's phases are labelled, the schedule waits one step, warms up one and records three,
and the trace goes to a new folder (nothing is overwritten). Run by ``make demo``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from torch.utils.data import DataLoader, TensorDataset

from steptrace.cli import app

WAIT, WARMUP, ACTIVE = 1, 1, 3


def new_folder(root: Path) -> Path:
    folder = root / time.strftime("%Y%m%d-%H%M%S")
    suffix = 0
    while True:
        candidate = folder if suffix == 0 else folder.with_name(f"{folder.name}-{suffix}")
        try:
            candidate.mkdir(parents=True)
            return candidate
        except FileExistsError:
            suffix += 1


def record(trace: Path) -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))  # fmt: skip
    optimizer = torch.optim.Adam(model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    data = TensorDataset(torch.randn(64 * 8, 256), torch.randint(0, 10, (64 * 8,)))
    loader = DataLoader(data, batch_size=64, num_workers=0)
    device = torch.device("cpu")
    iterator = iter(loader)  # created before the window: its start-up is not measured
    model.train()
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
        on_trace_ready=lambda p: p.export_chrome_trace(str(trace)),
    ) as prof:
        for _ in range(WAIT + WARMUP + ACTIVE):
            with record_function("read_batch"):
                x, y = next(iterator)
            with record_function("transfer"):
                x, y = x.to(device), y.to(device)
            with record_function("train"):
                optimizer.zero_grad(set_to_none=True)
                with record_function("forward"):
                    loss = loss_fn(model(x), y)
                with record_function("backward"):
                    loss.backward()
                with record_function("optimizer_step"):
                    optimizer.step()
            prof.step()


def main() -> None:
    folder = new_folder(Path("steptrace-demo"))
    trace = folder / "trace.json"
    print(f"Recording {ACTIVE} training steps on the CPU with torch.profiler into {trace} ...")
    record(trace)
    print(f"Analyzing {trace}:\n", flush=True)
    sys.argv = ["steptrace", "analyze", str(trace), "--top", "8"]
    app()


if __name__ == "__main__":
    main()
