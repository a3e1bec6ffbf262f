"""A/B outside the profiler: does a foreach optimizer make this step faster?

A's state has Adam with ``foreach=False``, B's its own state (``CandidateInputs``) with
``foreach=True``, both built from the same seed: the two start from the same weights,
which compare checks bit for bit, and their outputs and parameters after three steps are
compared before any timing. Then the steps are timed interleaved, and the verdict comes
with its confidence interval and what differed by design.

    python examples/04_compare.py [OUTPUT_FOLDER]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn

import steptrace
from steptrace.validate import CandidateInputs, CheckPlan, Timed, TimingPlan


def make_state(foreach: bool) -> dict[str, Any]:
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(64, 64) for _ in range(8)])
    return {"model": model, "optimizer": torch.optim.Adam(model.parameters(), foreach=foreach)}


def step(state: dict[str, Any], batch: Any) -> torch.Tensor:
    x, y = batch
    state["optimizer"].zero_grad(set_to_none=True)
    loss = nn.functional.mse_loss(state["model"](x), y)
    loss.backward()
    state["optimizer"].step()
    return loss.detach()


def main(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    batches = [(torch.randn(32, 64), torch.randn(32, 64)) for _ in range(4)]
    result = steptrace.compare(
        step,
        step,
        make_state=lambda: make_state(foreach=False),
        batches=batches,
        # three Adam steps in another order of operations drift a little (float32)
        check=CheckPlan(rtol=1e-4, atol=1e-6),
        plan=TimingPlan(budget_s=4),
        candidate_inputs=CandidateInputs(make_state=lambda: make_state(foreach=True)),
    )
    print(f"by design: {'; '.join(result.by_design)}")
    print(f"correctness: {'agree' if result.correctness.ok else 'differ'}; {result.sentence}")
    if isinstance(result, Timed):  # a verdict from the timing: every figure is there
        print(
            f"A median {result.baseline.median:.3f} ms, B median {result.candidate.median:.3f} ms"
        )
    saved = result.write_json(folder / f"compare-{time.strftime('%Y%m%d-%H%M%S')}.json")
    print(f"raw values: {saved}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("example-out"))
