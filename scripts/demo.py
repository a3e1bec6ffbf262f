"""The method on a real PyTorch step, on the CPU: question, capture, analysis.

A small MLP is trained on synthetic data. The question is stated first; profile_training
captures a labelled window (wait 1, warm-up 1, active 3) into a new folder, times the
cold start and the same steps without the profiler, counts FLOPs, puts the user's
weights back, and the trace is analyzed. Run by ``make demo``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import steptrace
from steptrace.cli import app

BATCH, FEATURES = 64, 256


def new_folder(root: Path) -> Path:
    """A fresh, dated folder: nothing earlier is ever overwritten."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for suffix in range(1000):
        folder = root / (stamp if suffix == 0 else f"{stamp}-{suffix}")
        try:
            folder.mkdir(parents=True)
            return folder
        except FileExistsError:
            continue
    raise SystemExit(f"steptrace demo: no free folder name under {root}")


def main() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(FEATURES, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
    )
    data = TensorDataset(torch.randn(BATCH * 12, FEATURES), torch.randint(0, 10, (BATCH * 12,)))
    scenario = steptrace.Scenario(
        question="Where does a training step of this MLP spend its time on the CPU?",
        batch_size=BATCH,
        input_shapes=((BATCH, FEATURES),),
        data_origin="synthetic tensors in memory",
        simplifications="random data and a 3-layer MLP stand in for a real model and dataset",
    )
    trace = new_folder(Path("steptrace-demo")) / "trace.json"
    print(f"Capturing 3 labelled training steps on the CPU into {trace} ...", flush=True)
    steptrace.profile_training(
        model, torch.optim.Adam(model.parameters()), nn.functional.cross_entropy,
        DataLoader(data, batch_size=BATCH), scenario=scenario, out=trace, active=3,
        measure_overhead=True, count_flops=True,
    )  # fmt: skip
    print(f"Analyzing {trace}:\n", flush=True)
    sys.argv = ["steptrace", "analyze", str(trace), "--top", "8"]
    app()


if __name__ == "__main__":
    main()
