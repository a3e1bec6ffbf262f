"""A Lightning training run profiled with ``StepTraceProfiler``: the question travels along.

The profiler runs one cold batch unprofiled (timed), waits one, warms up one and records
two batches; each step is one whole Lightning batch (read, transfer, training_step,
backward, optimizer step), labelled with Lightning's own action names.

    python examples/05_lightning.py [OUTPUT_FOLDER]
"""

from __future__ import annotations

import sys
from pathlib import Path

import lightning.pytorch as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import steptrace
from steptrace.integrations.lightning import StepTraceProfiler


class Classifier(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10))

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], index: int) -> torch.Tensor:
        x, y = batch
        return nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters())


def main(folder: Path) -> None:
    torch.manual_seed(0)
    scenario = steptrace.Scenario(
        question="Which part of the Lightning step takes the time?",
        batch_size=32,
        input_shapes=((32, 128),),
        data_origin="synthetic tensors in memory",
        simplifications="a two-layer MLP on random data, one CPU process",
    )
    profiler = StepTraceProfiler(scenario=scenario, dirpath=folder)
    data = TensorDataset(torch.randn(32 * 8, 128), torch.randint(0, 10, (32 * 8,)))
    trainer = pl.Trainer(
        max_steps=6,
        profiler=profiler,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=str(folder),
    )
    trainer.fit(Classifier(), DataLoader(data, batch_size=32))
    if profiler.result is None:
        raise SystemExit("no trace was written (see the warning above)")
    report = steptrace.analyze(profiler.result.trace)
    print(f"trace: {profiler.result.trace}")
    print(f"question: {report.scenario.question if report.scenario else None}")
    for step in report.analysis.steps:
        parts: dict[str, float] = {}
        for phase in step.phases:
            if phase.part is not None:
                parts[phase.part] = parts.get(phase.part, 0.0) + phase.exclusive_ms
        said = ", ".join(f"{part} {ms:.2f}" for part, ms in parts.items())
        print(f"{step.name}: {step.wall_ms:.2f} ms — {said}")
    for finding in report.findings:
        print(f"[{finding.rule}] {finding.observation}\n  next: {finding.next_check}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-out"))
