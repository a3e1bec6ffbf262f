"""Inference: the model is loaded (and timed) apart; each request is a labelled step.

python examples/03_inference.py [OUTPUT_FOLDER]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
from torch import nn

import steptrace


def load_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 8)).eval()


def request(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return model(x).softmax(-1)


def main(folder: Path) -> None:
    inputs = [torch.randn(batch, 128) for batch in (1, 8, 8, 8, 8)]
    scenario = steptrace.Scenario(
        question="How long does one request of 8 take, once the model is loaded?",
        kind="inference",
        batch_size=8,
        simplifications="a small MLP stands in for the served model",
    )
    result = steptrace.profile_inference(
        load_model,
        request,
        inputs,
        scenario=scenario,
        out=folder / f"infer-{time.strftime('%Y%m%d-%H%M%S')}.json",
    )
    facts = result.facts
    print(
        f"model load {facts.model_load_ms:.2f} ms and first request "
        f"{facts.cold_start_ms[0]:.2f} ms, both outside the profiled window"
    )
    analysis = steptrace.analyze(result.trace).analysis
    for step in analysis.steps:
        print(f"{step.name}: {step.wall_ms:.3f} ms ({', '.join(p.name for p in step.phases)})")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-out"))
