"""Workloads whose truth is known by construction, for ``steptrace investigate`` (CPU).

- ``slow_loader``: a single-process loader that sleeps 3 ms per sample (24 ms per batch)
  in front of a model of about a millisecond: the step waits for data (even when a loaded
  machine makes the compute ten times slower).
- ``served_with_autograd``: an inference request run without ``torch.inference_mode``
  (autograd records every operator): the mode finding's check must run, outputs equal.
- ``healthy``: inference in eval mode under ``inference_mode``, batches in memory, work in
  a few large matrix products: nothing planted; no check may claim support.
"""

from __future__ import annotations

import time

import torch
from torch.utils.data import DataLoader, Dataset

import steptrace
from steptrace.capturing import Workload

SAMPLE_SLEEP_S, BATCH, FEATURES = 0.003, 8, 64


class SleepyData(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Samples that take ``SAMPLE_SLEEP_S`` each to 'read'."""

    def __len__(self) -> int:
        return BATCH * 64

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(SAMPLE_SLEEP_S)
        generator = torch.Generator().manual_seed(index)
        return torch.randn(FEATURES, generator=generator), torch.tensor(index % 4)


def _mlp(hidden: int = 128) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 4)
    )


def slow_loader() -> Workload:
    model = _mlp()
    return Workload(
        scenario=steptrace.Scenario(
            question="Does the step wait for data?",
            batch_size=BATCH,
            data_origin="a dataset that sleeps 3 ms per sample, one process",
        ),
        model=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=0.01),
        loss_fn=torch.nn.functional.cross_entropy,
        loader=DataLoader(SleepyData(), batch_size=BATCH, num_workers=0),
    )


def served_with_autograd() -> Workload:
    def load() -> torch.nn.Module:
        return _mlp(512).eval()

    def request(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
        return model(x).softmax(-1)  # planted: no inference_mode, autograd records

    return Workload(
        scenario=steptrace.Scenario(question="How long does a request take?", kind="inference"),
        load_model=load,
        request=request,
        inputs=[
            torch.randn(64, FEATURES, generator=torch.Generator().manual_seed(n)) for n in range(8)
        ],
    )


def healthy() -> Workload:
    def load() -> torch.nn.Module:
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512)
        ).eval()

    def request(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            return model(x)

    return Workload(
        scenario=steptrace.Scenario(question="How long does a request take?", kind="inference"),
        load_model=load,
        request=request,
        inputs=[
            torch.randn(256, 512, generator=torch.Generator().manual_seed(n)) for n in range(8)
        ],
    )
