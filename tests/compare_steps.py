"""Tiny step functions for compare tests and ``steptrace compare`` (CPU, milliseconds)."""

from __future__ import annotations

from typing import Any

import torch

FEATURES, CLASSES, BATCH = 32, 4, 16
EXTRA = torch.ones(FEATURES, 64)


def make_state() -> dict[str, Any]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 64), torch.nn.ReLU(), torch.nn.Linear(64, CLASSES)
    )
    return {"model": model, "optimizer": torch.optim.SGD(model.parameters(), lr=0.1)}


def make_batches() -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(1)
    return [
        (
            torch.randn(BATCH, FEATURES, generator=generator),
            torch.randint(0, CLASSES, (BATCH,), generator=generator),
        )
        for _ in range(4)
    ]


def step(state: dict[str, Any], batch: Any) -> torch.Tensor:
    x, y = batch
    state["optimizer"].zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(state["model"](x), y)
    loss.backward()
    state["optimizer"].step()
    return loss.detach()


def same_step(state: dict[str, Any], batch: Any) -> torch.Tensor:
    return step(state, batch)


def step_with_extra_work(state: dict[str, Any], batch: Any) -> torch.Tensor:
    loss = step(state, batch)
    torch.mm(batch[0], EXTRA)  # known extra work, results unchanged
    return loss


def step_that_changes_results(state: dict[str, Any], batch: Any) -> torch.Tensor:
    x, y = batch
    return step(state, (x * 1.01, y))
