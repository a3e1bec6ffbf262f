"""The Italian seed's four-step training example, done with ``profile_training``.

The question comes first; the step's boundaries (read, transfer, forward, backward,
optimizer step) are labelled; the schedule waits one step, warms up one and records
two; the trace file is new; the user's weights are put back afterwards.

    python examples/02_training_step.py [OUTPUT_FOLDER]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import steptrace


def main(folder: Path) -> None:
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)).to(device)
    optimizer = torch.optim.Adam(model.parameters())
    data = TensorDataset(torch.randn(64 * 6, 256), torch.randint(0, 10, (64 * 6,)))
    scenario = steptrace.Scenario(
        question="Does the step wait for data?",
        batch_size=64,
        input_shapes=((64, 256),),
        device=str(device),
        data_origin="synthetic tensors in memory",
        simplifications="a two-layer MLP on random data",
    )
    result = steptrace.profile_training(
        model,
        optimizer,
        nn.functional.cross_entropy,
        DataLoader(data, batch_size=64),
        scenario=scenario,
        out=folder / f"train-{time.strftime('%Y%m%d-%H%M%S')}.json",
        window=steptrace.Window(wait=1, warmup=1, active=2),
    )
    cold = result.facts.cold_start_ms[0]
    print(f"trace: {result.trace}; cold start {cold:.2f} ms (kept apart)")
    report = steptrace.analyze(result.trace)
    print(f"question: {report.scenario.question if report.scenario else None}")
    for step in report.analysis.steps:
        labels = ", ".join(f"{p.name} {p.exclusive_ms:.2f}" for p in step.phases[:6])
        print(f"{step.name}: {step.wall_ms:.2f} ms — {labels}")
    for finding in report.findings:
        print(f"[{finding.rule}] {finding.observation}\n  next: {finding.next_check}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-out"))
