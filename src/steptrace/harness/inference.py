"""``profile_inference``: model loading timed apart, each request a labelled step.

Loading happens before the profiler starts and is reported as ``model_load_ms``; the
first request(s) are timed before the window too (cold start). A model left in training
mode, or autograd recording during requests, is reported: both change what is measured.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from steptrace.errors import CaptureError
from steptrace.harness import devices
from steptrace.harness.result import CaptureResult
from steptrace.harness.session import Capture
from steptrace.scenario import Scenario

Request = Callable[[Any, Any], Any]


def profile_inference(
    load_model: Callable[[], torch.nn.Module],
    request: Request,
    inputs: Sequence[Any],
    *,
    scenario: Scenario,
    out: str | Path,
    wait: int = 1,
    warmup: int = 1,
    active: int = 2,
    repeat: int = 1,
    cold_steps: int = 1,
    record_shapes: bool = False,
    profile_memory: bool = False,
    with_stack: bool = False,
    clock: Callable[[], float] = time.perf_counter,
) -> CaptureResult:
    """Load the model (timed, outside the window), then capture ``request(model, x)`` steps."""
    if scenario.kind != "inference":
        raise CaptureError(f"profile_inference needs an inference scenario, not {scenario.kind!r}")
    needed = cold_steps + (wait + warmup + active) * repeat
    if len(inputs) < needed:
        raise CaptureError(
            f"{len(inputs)} inputs given; cold start ({cold_steps}) + (wait {wait} + warmup "
            f"{warmup} + active {active}) x repeat {repeat} need {needed}"
        )
    window = Capture(
        scenario, out=out, wait=wait, warmup=warmup, active=active, repeat=repeat,
        record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
        clock=clock,
    )  # fmt: skip
    device = window.device
    devices.synchronize(device)
    start = clock()
    model = load_model()
    devices.synchronize(device)
    model_load_ms = (clock() - start) * 1000
    warned = []
    if model.training:
        warned.append("the model is in training mode during requests (call model.eval())")
    cold = []
    for x in inputs[:cold_steps]:
        devices.synchronize(device)
        start = clock()
        output = request(model, devices.to_device(x, device))
        devices.synchronize(device)
        cold.append((clock() - start) * 1000)
        if _records_autograd(output):
            warned.append(
                "autograd is recording during requests: the outputs require grad "
                "(use torch.inference_mode())"
            )
    with window:
        for x in inputs[cold_steps:needed]:
            with window.phase("request"):
                request(model, devices.to_device(x, device))
            window.step()
    return window.amend(
        model_load_ms=model_load_ms,
        cold_start_ms=tuple(cold),
        warnings=tuple(dict.fromkeys(warned)),
    )


def _records_autograd(output: Any) -> bool:
    if isinstance(output, torch.Tensor):
        return output.requires_grad
    if isinstance(output, tuple | list):
        return any(_records_autograd(o) for o in output)
    if isinstance(output, dict):
        return any(_records_autograd(o) for o in output.values())
    return False
