"""A training step of your own: mixed precision, gradient clipping, gradient accumulation
and a hidden state carried from batch to batch, captured and investigated as written.

``Workload(step=...)`` takes ``step(model, batch, state) -> loss``: it does the forward,
the backward and the optimizer step itself (``state["optimizer"]``), and keeps what the
loop carries in ``state``, set on first use (here the GRU's hidden state and the
micro-batch count).
steptrace moves the batch to the device, labels the step, and runs this same step in
the capture and in every check (each on its own copy of the state).

    python examples/07_own_step.py [OUTPUT_FOLDER]              # capture and analyze
    steptrace investigate examples/07_own_step.py:workload      # capture, analyze, check
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

import steptrace
from steptrace.capturing import Workload

ACCUMULATE = 2  # micro-batches per optimizer step
CLIP = 1.0


class Tagger(nn.Module):
    """A GRU over a sequence of 32 features, one class per position."""

    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(32, 64, batch_first=True)
        self.head = nn.Linear(64, 5)

    def forward(
        self, x: torch.Tensor, hidden: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        out, hidden = self.gru(x, hidden)
        return self.head(out), hidden


def step(model: nn.Module, batch: Any, state: dict[str, Any]) -> torch.Tensor:
    """One micro-batch: bfloat16 autocast, the hidden state carried (detached), the
    optimizer stepped every ``ACCUMULATE`` micro-batches after clipping."""
    x, y = batch
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits, hidden = model(x, state.get("hidden"))  # None at first: zeros
    state["hidden"] = hidden.detach()
    loss = nn.functional.cross_entropy(logits.float().flatten(0, 1), y.flatten())
    (loss / ACCUMULATE).backward()
    state["micro"] = state.get("micro", 0) + 1
    if state["micro"] % ACCUMULATE == 0:
        nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        state["optimizer"].step()
        state["optimizer"].zero_grad(set_to_none=True)
    return loss


def workload() -> Workload:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Tagger()
    batches = [(torch.randn(16, 20, 32), torch.randint(0, 5, (16, 20))) for _ in range(12)]
    return Workload(
        scenario=steptrace.Scenario(
            question="Where does the time of a clipped, accumulated bf16 GRU step go?",
            batch_size=16,
            data_origin="random sequences in memory",
        ),
        model=model,
        optimizer=torch.optim.Adam(model.parameters(), lr=1e-3),
        loader=batches,
        step=step,
    )


def main(folder: Path) -> None:
    made = workload()
    captured = steptrace.capturing.run_workload(
        made,
        out=folder / f"own-step-{time.strftime('%Y%m%d-%H%M%S')}.json",
        window=steptrace.Window(),
    )
    report = steptrace.analyze(captured.trace)
    print(f"question: {report.scenario.question if report.scenario else None}")
    for one in report.analysis.steps:
        print(f"{one.name}: {one.wall_ms:.2f} ms")
    for finding in report.findings:
        print(f"[{finding.rule}] {finding.observation}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-out"))
