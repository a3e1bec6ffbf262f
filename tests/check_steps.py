"""Small real CPU workloads for the check factories (milliseconds a step)."""

from __future__ import annotations

import random
from typing import Any

import torch

FEATURES, BATCH = 64, 64
random.seed(3)
BIG_LIST = [random.random() for _ in range(20_000)]  # a constant rebuilt from Python data
WIDE = len(BIG_LIST)


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)
    )


def serving_state() -> dict[str, Any]:
    return {"model": mlp().eval()}


def serve(state: dict[str, Any], batch: torch.Tensor) -> torch.Tensor:
    """A request served without inference_mode: autograd records every operator."""
    return state["model"](batch).softmax(-1)


def inputs(n: int = 4, features: int = FEATURES) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    return [torch.randn(BATCH, features, generator=generator) for _ in range(n)]


def many_small_params() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(*(torch.nn.Linear(8, 8) for _ in range(24)))


def train(state: dict[str, Any], batch: torch.Tensor) -> torch.Tensor:
    state["optimizer"].zero_grad(set_to_none=True)
    loss = state["model"](batch).square().mean()
    loss.backward()
    state["optimizer"].step()
    return loss.detach()


def small_batches() -> list[torch.Tensor]:
    return inputs(4, 8)


def tiny_ops(state: dict[str, Any], batch: torch.Tensor) -> torch.Tensor:
    """Dispatch-bound: 300 operators on 8 numbers, the profiler's cost per operator shows."""
    y = batch
    for _ in range(300):
        y = y + 1
    return y


def one_matmul(state: dict[str, Any], batch: torch.Tensor) -> torch.Tensor:
    """One large operator: the profiler records one event, the step is all compute."""
    return batch @ batch


def identity_state() -> dict[str, Any]:
    return {"model": torch.nn.Identity()}


def wide_state() -> dict[str, Any]:
    torch.manual_seed(0)
    return {"model": torch.nn.Linear(WIDE, 4)}


def with_constant(state: dict[str, Any], batch: torch.Tensor) -> torch.Tensor:
    """The planted repeated-copy: a constant rebuilt from a Python list every step."""
    scale = torch.tensor(BIG_LIST)
    return state["model"](batch * scale)


def without_constant(state: dict[str, Any], batch: torch.Tensor) -> torch.Tensor:
    return state["model"](batch)
