"""CPU training workloads with one problem planted each, and a healthy one, for the closed
loop (``steptrace investigate``): the planted finding must rank first, its check supported.

- ``per_tensor_optimizer``: 128 small layers (256 parameters) under Adam with its CPU
  default, one tensor at a time (``foreach=None`` picks the loop on the CPU).
- ``tiny_op_loop``: a model whose forward is a Python loop of 600 elementwise operators
  on a 16-number tensor (three calls of a 200-operator block, compiled once).
- ``slow_collate``: a ``collate_fn`` that decodes each sample in Python (about 3 ms of CPU
  a batch) in front of an MLP of about 1 ms a step. CPU work, not a sleep: a sleep's share
  of the step moves with the machine's load on the compute alone, so no measurement taken
  at another moment could agree with the check's CI; CPU work slows with it.
- ``oversubscribed``: a small MLP run with four intra-op threads per usable core.
- ``keeps_ctrl_c``: ``per_tensor_optimizer`` with a step of its own that catches Ctrl-C
  (as a loop that saves a checkpoint on it does): steptrace must stop all the same.
- ``healthy``: three 512-wide layers on 256-row batches, SGD: matrix products are the step.

Each factory sets torch's threads (one, except ``oversubscribed``): on shared cores the
others' timings would measure the scheduler (``steptrace.process.machine``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch.utils.data import DataLoader

import steptrace
from steptrace.capturing import Workload
from steptrace.process.machine import usable_cores

FEATURES, BATCH, BATCHES = 64, 32, 16
DECODE_ROUNDS = 2000  # per sample: about 3 ms of Python a 32-sample batch


def _batches(
    features: int = FEATURES, rows: int = BATCH
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(0)
    return [
        (
            torch.randn(rows, features, generator=generator),
            torch.randint(0, 4, (rows,), generator=generator),
        )
        for _ in range(BATCHES)
    ]


def _mlp(features: int = FEATURES, hidden: int = 128, depth: int = 2) -> torch.nn.Module:
    torch.manual_seed(0)
    layers: list[torch.nn.Module] = [torch.nn.Linear(features, hidden), torch.nn.ReLU()]
    for _ in range(depth - 2):
        layers += [torch.nn.Linear(hidden, hidden), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(hidden, 4))


def _training(
    question: str, model: torch.nn.Module, optimizer: Any, loader: Any, **said: Any
) -> Workload:
    return Workload(
        scenario=steptrace.Scenario(question=question, batch_size=BATCH, **said),
        model=model,
        optimizer=optimizer,
        loss_fn=torch.nn.functional.cross_entropy,
        loader=loader,
    )


def per_tensor_optimizer() -> Workload:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    layers = [torch.nn.Linear(8, 8) for _ in range(127)]
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 8), *layers, torch.nn.Linear(8, 4))
    return _training(
        "Why is the training step slow?",
        model,
        torch.optim.Adam(model.parameters(), lr=1e-3),  # per tensor: the CPU default
        _batches(),
    )


def keeps_ctrl_c() -> Workload:
    workload = per_tensor_optimizer()

    def step(model: torch.nn.Module, batch: Any, state: dict[str, Any]) -> torch.Tensor:
        x, y = batch
        loss = torch.zeros(())
        try:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            state["optimizer"].step()
            state["optimizer"].zero_grad(set_to_none=True)
        except KeyboardInterrupt:
            pass  # the user's loop keeps Ctrl-C to itself
        return loss

    return dataclasses.replace(workload, loss_fn=None, step=step)


TINY_BLOCKS = 3  # of 200 operators: a profiled step of 7-13 ms, past a 4 ms time slice


@torch.compiler.nested_compile_region
def _tiny_block(y: torch.Tensor) -> torch.Tensor:
    """200 elementwise operators on a 16-number tensor, one Python call each; compiled once
    however often it is called (so the check's compile stays short)."""
    for _ in range(100):
        y = torch.tanh(y) * 0.9
    return y


class TinyOps(torch.nn.Module):
    """``TINY_BLOCKS`` blocks of 200 elementwise operators on a 16-number tensor: a step long
    enough that a time slice the scheduler gives another process (about 4 ms on a loaded
    2-core machine) cannot make one operator most of it, as it could of a 3 ms step."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(16))
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x[:, :16] * self.scale
        for _ in range(TINY_BLOCKS):
            y = _tiny_block(y)
        return self.head(y)


def tiny_op_loop() -> Workload:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = TinyOps()
    return _training(
        "Why is the step slow for such a small model?",
        model,
        torch.optim.SGD(model.parameters(), lr=0.01),
        _batches(),
    )


def _decode(rounds: int = DECODE_ROUNDS) -> int:
    """A fixed amount of Python work, as decoding or augmenting a sample costs."""
    acc = 0
    for i in range(rounds):
        acc = (acc * 31 + i) % 1_000_003
    return acc


def _decoding_collate(samples: list[tuple[torch.Tensor, torch.Tensor]]) -> Any:
    for _ in samples:
        _decode()
    return torch.utils.data.default_collate(samples)


def slow_collate() -> Workload:
    torch.set_num_threads(1)
    pairs = [(x[i], y[i]) for x, y in _batches() for i in range(BATCH)]
    model = _mlp(hidden=512, depth=3)
    return _training(
        "Does the step wait for data?",
        model,
        torch.optim.SGD(model.parameters(), lr=0.01),
        DataLoader(pairs, batch_size=BATCH, collate_fn=_decoding_collate),
        data_origin="a collate_fn that decodes each sample in Python (about 3 ms a batch)",
    )


def oversubscribed() -> Workload:
    torch.set_num_threads(4 * usable_cores())
    model = _mlp(256, 256, depth=6)
    return _training(
        "Why is the step slower than expected?",
        model,
        torch.optim.SGD(model.parameters(), lr=0.01),
        _batches(256, 64),
    )


def healthy() -> Workload:
    torch.set_num_threads(1)
    model = _mlp(512, 512, depth=3)
    return _training(
        "How long does a step take?",
        model,
        torch.optim.SGD(model.parameters(), lr=0.01),
        _batches(512, 256),
    )
