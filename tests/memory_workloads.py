"""Training workloads whose memory is known by construction (CPU), for the memory tests.

- ``leaky(k)``: each forward keeps ``k`` bytes in a list on the model (a leak of ``k``
  bytes per step); ``leaky(0)`` is the same model without the leak.
- ``big_temporary``: each forward makes a 32 MiB temporary inside the label
  ``big_temporary``, then lets it go: the step's peak is there.
- ``deep_blocks``: four blocks of six linear layers on a wide batch: activations make most
  of the peak, and checkpointing the first block gives some back.
- ``wide_layers``: two large linear layers on a batch of two: parameters, gradients and
  momentum make the peak; no block to checkpoint.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.profiler import record_function
from torch.utils.data import DataLoader, TensorDataset

import steptrace
from steptrace.capturing import Workload
from steptrace.validate.inputs import State

FEATURES, CLASSES = 64, 4
BIG_TEMPORARY_BYTES = 32 * 2**20


class Leaky(nn.Module):
    def __init__(self, leak_bytes: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, CLASSES))
        self.leak_bytes = leak_bytes
        self.kept: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.leak_bytes:
            self.kept.append(torch.ones(self.leak_bytes, dtype=torch.uint8))
        out: torch.Tensor = self.net(x)
        return out


class BigTemporary(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, CLASSES))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with record_function("big_temporary"):
            scratch = torch.ones(BIG_TEMPORARY_BYTES // 4)
            scale = scratch.sum() / scratch.numel()
            del scratch
        out: torch.Tensor = self.net(x) * scale
        return out


def deep_blocks() -> nn.Module:
    torch.manual_seed(0)
    width = 512

    def block() -> nn.Module:
        layers: list[nn.Module] = []
        for _ in range(6):
            layers += [nn.Linear(width, width), nn.ReLU()]
        return nn.Sequential(*layers)

    return nn.Sequential(
        nn.Linear(FEATURES, width), *(block() for _ in range(4)), nn.Linear(width, CLASSES)
    )


def wide_layers() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, 2048), nn.Linear(2048, 2048), nn.Linear(2048, CLASSES))


def loader(batch: int, batches: int = 16) -> DataLoader[Any]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(batch * batches, FEATURES, generator=generator)
    y = torch.randint(0, CLASSES, (batch * batches,), generator=generator)
    return DataLoader(TensorDataset(x, y), batch_size=batch)


def workload(model: nn.Module, batch: int = 16, question: str = "Where is the memory?") -> Workload:
    torch.manual_seed(0)
    return Workload(
        scenario=steptrace.Scenario(question=question, batch_size=batch),
        model=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9),
        loss_fn=nn.functional.cross_entropy,
        loader=loader(batch),
    )


def leaky_workload() -> Workload:
    """For ``steptrace investigate``: a leak of 1 MiB per step."""
    torch.manual_seed(0)
    return workload(Leaky(2**20), question="Does memory grow from step to step?")


def train_step(state: State, batch: Any) -> torch.Tensor:
    """One SGD step, as ``compare`` and the checks take it."""
    x, y = batch
    loss = nn.functional.cross_entropy(state["model"](x), y)
    loss.backward()
    state["optimizer"].step()
    state["optimizer"].zero_grad(set_to_none=True)
    return loss.detach()


def state_of(model: nn.Module) -> State:
    return {"model": model, "optimizer": torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)}


class ScratchSGD(torch.optim.SGD):
    """SGD whose step makes a 16 MiB scratch tensor first: the step's memory peak is in the
    optimizer step, with every gradient and the batch alive."""

    SCRATCH_BYTES = 16 * 2**20

    def step(self, closure: Any = None) -> Any:  # type: ignore[override]
        scratch = torch.zeros(self.SCRATCH_BYTES // 4)
        found = super().step(closure)
        del scratch
        return found


def scratch_workload(batch: int = 16) -> Workload:
    """The peak in the optimizer step (``ScratchSGD``): what holds it is known by type."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(FEATURES, 256), nn.ReLU(), nn.Linear(256, CLASSES))
    return Workload(
        scenario=steptrace.Scenario(question="What holds the memory peak?", batch_size=batch),
        model=model,
        optimizer=ScratchSGD(model.parameters(), lr=0.01, momentum=0.9),
        loss_fn=nn.functional.cross_entropy,
        loader=loader(batch),
    )
