"""What a training capture's tensors are: parameters, gradients, the optimizer's state and
the batch, by the address of their storage.

A storage's ``untyped_storage().data_ptr()`` and ``nbytes()`` are the ``Addr`` and
``Bytes`` of its allocation in the trace's ``[memory]`` events, so the analysis names what
holds a memory peak by address (``analysis.memory``), exactly, where the profiler's own
categories change from step to step. ``InventoryRecorder``, called at the end of each
active step of a window that records memory, lists the gradients and the batch (about
1 µs a tensor, inside the step); the parameters and the optimizer's state, whose storages
stay put, are listed once after the window. A storage two tensors share counts once, under
the first category: parameters, optimizer state, gradients, batch.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

import torch

from steptrace import devices
from steptrace.capturing.session import Capture
from steptrace.scenario import Inventory, InventoryBlock, InventoryCategory, StepInventory

Tensors = Iterable[tuple[InventoryCategory, torch.Tensor]]


def blocks(tensors: Tensors) -> tuple[InventoryBlock, ...]:
    """Each strided tensor's storage once, under the first category that names it."""
    found: dict[int, tuple[InventoryCategory, torch.device, int]] = {}  # by unified address
    for category, tensor in tensors:
        if tensor.layout == torch.strided and not tensor.is_meta:
            storage = tensor.untyped_storage()
            addr = storage.data_ptr()
            if addr and addr not in found:
                found[addr] = (category, tensor.device, storage.nbytes())
    names: dict[torch.device, str] = {}
    return tuple(
        InventoryBlock(category, names.setdefault(device, _device(device)), addr, size)
        for addr, (category, device, size) in found.items()
        if size
    )


def persistent(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer
) -> Iterator[tuple[InventoryCategory, torch.Tensor]]:
    """The parameters, then the optimizer's state."""
    for parameter in model.parameters():
        yield "parameter", parameter
    for state in optimizer.state.values():
        for value in state.values():
            if isinstance(value, torch.Tensor):
                yield "optimizer state", value


def per_step(
    model: torch.nn.Module, batch: Any
) -> Iterator[tuple[InventoryCategory, torch.Tensor]]:
    """The gradients, then the batch's tensors (in tuples, lists and mappings)."""
    for parameter in model.parameters():
        if parameter.grad is not None:
            yield "gradient", parameter.grad
    found: list[torch.Tensor] = []

    def keep(tensor: torch.Tensor) -> torch.Tensor:
        found.append(tensor)
        return tensor

    devices.each_tensor(batch, keep)
    for tensor in found:
        yield "batch", tensor


def _device(device: torch.device) -> str:
    return "cpu" if device.type == "cpu" else f"{device.type}:{device.index or 0}"


class InventoryRecorder:
    """Called with the batch as the step used it, after its optimizer step: the gradients
    and the batch of each active step of a capture that records memory (nothing else)."""

    def __init__(
        self, capture: Capture, model: torch.nn.Module, optimizer: torch.optim.Optimizer
    ) -> None:
        self.capture, self.model, self.optimizer = capture, model, optimizer
        self.steps: list[StepInventory] = []
        self.seconds = 0.0  # the time the lists took, inside the steps

    def __call__(self, batch: Any) -> None:
        if not (self.capture.window.profile_memory and self.capture.recording):
            return
        began = time.perf_counter()
        listed = blocks(per_step(self.model, batch))
        self.steps.append(StepInventory(self.capture.profiler_step, listed))
        self.seconds += time.perf_counter() - began

    def inventory(self) -> Inventory | None:
        """The steps' lists with the parameters and optimizer state as they are now (after
        the window, before anything is restored); None when no step was listed."""
        if not self.steps:
            return None
        kept = blocks(persistent(self.model, self.optimizer))
        return Inventory(kept, tuple(self.steps))
