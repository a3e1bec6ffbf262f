"""CUDA variants of the tiny workloads (tests/workloads.py) and compare steps
(tests/compare_steps.py), for tests/project/test_gpu.py. Nothing touches CUDA at import time.

``cuda_training`` and ``cuda_inference`` take no argument, so ``steptrace profile
tests.gpu_workloads:cuda_training`` runs them too.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import msgspec
import torch

from steptrace.capturing import Workload
from steptrace.devices import to_device
from tests import compare_steps, workloads

DEVICE = "cuda"
EXTRA = 4096  # side of the square matmul the slower candidate adds: a few ms of GPU work


def cuda_training() -> Workload:
    """The tiny MLP training workload with the model, and so the step, on the GPU."""
    model = workloads.tiny_model().to(DEVICE)
    return Workload(
        scenario=workloads.training_scenario(device=DEVICE),
        model=model,
        optimizer=torch.optim.Adam(model.parameters()),
        loss_fn=torch.nn.functional.cross_entropy,
        loader=workloads.tiny_loader(),  # batches on the host: the step moves them
    )


def cuda_inference() -> Workload:
    """The tiny inference workload with the model loaded onto the GPU."""
    work = workloads.tiny_inference()

    def load() -> torch.nn.Module:
        return workloads.tiny_model().to(DEVICE).eval()

    scenario = msgspec.structs.replace(work.scenario, device=DEVICE)
    return dataclasses.replace(work, scenario=scenario, load_model=load)


def make_state() -> dict[str, Any]:
    """compare_steps' model and optimizer, the model moved to the GPU."""
    state = compare_steps.make_state()
    state["model"].to(DEVICE)  # in place: the optimizer keeps the same parameters
    return state


def make_batches() -> list[Any]:
    return [to_device(batch, torch.device(DEVICE)) for batch in compare_steps.make_batches()]


@functools.cache
def extra_matrix() -> torch.Tensor:
    return torch.ones(EXTRA, EXTRA, device=DEVICE)


def step_with_extra_gpu_work(state: dict[str, Any], batch: Any) -> torch.Tensor:
    """compare_steps.step plus a large matmul whose result is dropped: outputs unchanged."""
    loss = compare_steps.step(state, batch)
    torch.mm(extra_matrix(), extra_matrix())
    return loss


def extra_work_ms(repeats: int = 10) -> float:
    """GPU time of the extra matmul alone, from CUDA events (independent of steptrace)."""
    big = extra_matrix()
    torch.mm(big, big)  # warm-up: cuBLAS handle and kernel selection
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        torch.mm(big, big)
    end.record()
    end.synchronize()
    return float(start.elapsed_time(end)) / repeats
