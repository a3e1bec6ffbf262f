"""``profile_inference``: model loading timed apart, each request a labelled step.

Each step is labelled ``request``, with ``transfer`` (the inputs moved to the device) and
``forward`` (the user's ``request(model, x)``) inside: the scenario's step parts, so that
the harness's own work is not taken for the user's. Loading happens before the profiler
starts and is reported as ``model_load_ms``; the first request(s) are timed before the
window too (cold start). A model left in training mode, or autograd recording during
requests, is reported: both change what is measured.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from steptrace import devices
from steptrace.capturing.result import CaptureResult
from steptrace.capturing.session import Capture
from steptrace.errors import CaptureError
from steptrace.scenario import Scenario
from steptrace.window import Window

Request = Callable[[Any, Any], Any]


def profile_inference(
    load_model: Callable[[], torch.nn.Module],
    request: Request,
    inputs: Sequence[Any],
    *,
    scenario: Scenario,
    out: str | Path,
    window: Window | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> CaptureResult:
    """Load the model (timed, outside the window), then capture ``request(model, x)`` steps.

    ``window`` sets the schedule and profiler options (``Window()`` by default; its
    ``measure_overhead`` and ``count_flops`` are for training and are not used here).
    """
    if scenario.kind != "inference":
        raise CaptureError(f"profile_inference needs an inference scenario, not {scenario.kind!r}")
    plan = window or Window()
    if len(inputs) < plan.needed_steps:
        raise CaptureError(f"{len(inputs)} inputs given; {plan.describe()}")
    capture = Capture(scenario, out=out, window=plan, clock=clock)
    device = capture.device
    devices.synchronize(device)
    start = clock()
    model = load_model()
    devices.synchronize(device)
    model_load_ms = (clock() - start) * 1000
    warned = [
        f"{name} is for training: profile_inference does not measure it"
        for name in ("measure_overhead", "count_flops")
        if getattr(plan, name)
    ]
    if model.training:
        warned.append("the model is in training mode during requests (call model.eval())")
    cold = []
    for x in inputs[: plan.cold_steps]:
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
    with capture:
        for x in inputs[plan.cold_steps : plan.needed_steps]:
            with capture.phase("request"):
                with capture.phase("transfer"):  # the harness's, not the user's request
                    batch = devices.to_device(x, device)
                with capture.phase("forward"):
                    request(model, batch)
            capture.step()
    return capture.amend(
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
