"""Tiny workloads for capture tests and ``steptrace profile`` (CPU, seconds)."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

import steptrace
from steptrace.capturing import Workload

BATCH, FEATURES, HIDDEN, CLASSES = 16, 32, 64, 4


def tiny_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, CLASSES)
    )


def tiny_loader(batches: int = 8, num_workers: int = 0) -> DataLoader:  # type: ignore[type-arg]
    generator = torch.Generator().manual_seed(1)
    data = TensorDataset(
        torch.randn(BATCH * batches, FEATURES, generator=generator),
        torch.randint(0, CLASSES, (BATCH * batches,), generator=generator),
    )
    return DataLoader(data, batch_size=BATCH, num_workers=num_workers)


def training_scenario(**fields: object) -> steptrace.Scenario:
    return steptrace.Scenario(
        question="Does the step wait for data?",
        batch_size=BATCH,
        input_shapes=((BATCH, FEATURES),),
        simplifications="a two-layer MLP on random data stands in for the real model",
        **fields,  # type: ignore[arg-type]
    )


def tiny_training() -> Workload:
    model = tiny_model()
    return Workload(
        scenario=training_scenario(),
        model=model,
        optimizer=torch.optim.Adam(model.parameters()),
        loss_fn=torch.nn.functional.cross_entropy,
        loader=tiny_loader(),
    )


def tiny_inference() -> Workload:
    def load() -> torch.nn.Module:
        return tiny_model().eval()

    def request(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            return model(x).softmax(-1)

    return Workload(
        scenario=steptrace.Scenario(question="How long does one request take?", kind="inference"),
        load_model=load,
        request=request,
        inputs=[torch.randn(n, FEATURES) for n in (1, 8, 8, 8, 8, 8)],
    )


def not_a_workload() -> int:
    return 42
