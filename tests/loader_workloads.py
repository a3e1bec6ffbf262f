"""CPU training workloads whose batches come from DataLoader workers, for the worker lanes
(``capturing.loader_spans``, ``analysis.loader``) and the input-pipeline rule's causes.

- ``slow_samples(context)``: 2 workers, 4 samples a batch; every eighth sample (index % 8
  == 5) takes ``SLOW_S`` to read, the others ``READ_S`` (sleeps: what a worker waits on,
  storage or a decoder in another process, not this machine's two cores): each slow
  sample falls in an odd batch, so worker 1 makes every slow batch.
- ``cheap(context)``: the same loader with every sample cheap: the workers keep up.
- ``in_process()``: the same data without workers (``num_workers=0``).
- ``busy_workers(context)``: every sample takes ``BUSY_S``: 2 workers cannot keep up with
  the step, and a worker more would (the reads are waits, not this machine's cores).
- ``slow_collate(context)``: cheap samples, a collate that takes ``COLLATE_S``: 2 workers
  make a batch every 30 ms, several times a step even on a loaded machine (with 20 ms, on
  two busy cores the step's receiving of each batch slowed it to the workers' pace: they
  kept up, and there was no finding).

The model is a small MLP (under a millisecond a step), one intra-op thread.
"""

from __future__ import annotations

import time
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset, default_collate

import steptrace
from steptrace.capturing import Workload

FEATURES, BATCH, SAMPLES = 32, 4, 256
READ_S, SLOW_S = 0.0002, 0.03
BUSY_S, COLLATE_S = 0.01, 0.06
SLOW_EVERY, SLOW_AT = 8, 5


class Samples(Dataset[tuple[torch.Tensor, int]]):
    """Deterministic samples; those at ``index % SLOW_EVERY == SLOW_AT`` slow when
    ``slow``."""

    def __init__(self, slow: bool, read_s: float = READ_S, length: int = SAMPLES) -> None:
        self.slow = slow
        self.read_s = read_s
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        slow = self.slow and index % SLOW_EVERY == SLOW_AT
        time.sleep(SLOW_S if slow else self.read_s)
        generator = torch.Generator().manual_seed(index)
        return torch.randn(FEATURES, generator=generator), index % 4


def _workload(loader: Any, question: str) -> Workload:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)
    )
    return Workload(
        scenario=steptrace.Scenario(question=question, batch_size=BATCH),
        model=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=0.01),
        loss_fn=torch.nn.functional.cross_entropy,
        loader=loader,
    )


def slow_samples(context: str = "fork") -> Workload:
    loader = DataLoader(
        Samples(slow=True), batch_size=BATCH, num_workers=2, multiprocessing_context=context
    )
    return _workload(loader, "Does the step wait for its batches?")


def cheap(context: str = "fork") -> Workload:
    loader = DataLoader(
        Samples(slow=False), batch_size=BATCH, num_workers=2, multiprocessing_context=context
    )
    return _workload(loader, "Does the step wait for its batches?")


def in_process() -> Workload:
    return _workload(DataLoader(Samples(slow=True), batch_size=BATCH), "A step in one process")


def busy_workers(context: str = "fork") -> Workload:
    loader = DataLoader(
        Samples(slow=False, read_s=BUSY_S, length=16 * SAMPLES),  # no epoch ends in a check
        batch_size=BATCH,
        num_workers=2,
        multiprocessing_context=context,
    )
    return _workload(loader, "Does the step wait for its batches?")


def _slow_collate(samples: list[tuple[torch.Tensor, int]]) -> Any:
    time.sleep(COLLATE_S)
    return default_collate(samples)


def slow_collate(context: str = "fork") -> Workload:
    loader = DataLoader(
        Samples(slow=False),
        batch_size=BATCH,
        num_workers=2,
        multiprocessing_context=context,
        collate_fn=_slow_collate,
    )
    return _workload(loader, "Does the step wait for its batches?")
