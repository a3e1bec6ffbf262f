"""A workload for ``steptrace profile``: the pieces a user function returns, and their run.

    def my_workload() -> steptrace.Workload:
        model = ...
        return steptrace.Workload(
            scenario=steptrace.Scenario(question="Does the step wait for data?"),
            model=model, optimizer=..., loss_fn=..., loader=...,
        )

An inference workload gives ``load_model``, ``request`` and ``inputs`` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from steptrace.errors import CaptureError
from steptrace.harness.inference import profile_inference
from steptrace.harness.result import CaptureResult
from steptrace.harness.training import LossFn, profile_training
from steptrace.scenario import Scenario
from steptrace.targets import load_callable


@dataclass(frozen=True)
class Workload:
    """What ``steptrace profile`` runs: a scenario and the pieces of its step."""

    scenario: Scenario
    model: torch.nn.Module | None = None
    optimizer: torch.optim.Optimizer | None = None
    loss_fn: LossFn | None = None
    loader: Iterable[Any] | None = None
    load_model: Callable[[], torch.nn.Module] | None = None
    request: Callable[[Any, Any], Any] | None = None
    inputs: Sequence[Any] | None = None


def load_workload(target: str) -> Workload:
    """Call ``module:function`` or ``path/file.py:function`` and check what it returns."""
    function = load_callable(target)
    try:
        workload = function()
    except Exception as exc:  # the user's code: say what failed, in one line
        raise CaptureError(f"{target}: the workload function failed: {exc!r}") from None
    if not isinstance(workload, Workload):
        raise CaptureError(
            f"{target}: returned {type(workload).__name__}, not a steptrace.Workload"
        )
    return workload


def run_workload(workload: Workload, **options: Any) -> CaptureResult:
    """Capture a workload with ``profile_training`` or ``profile_inference``."""
    if workload.scenario.kind == "training":
        parts = (workload.model, workload.optimizer, workload.loss_fn, workload.loader)
        if any(p is None for p in parts):
            raise CaptureError("a training workload needs model, optimizer, loss_fn and loader")
        return profile_training(*parts, scenario=workload.scenario, **options)  # type: ignore[arg-type]
    parts_inference = (workload.load_model, workload.request, workload.inputs)
    if any(p is None for p in parts_inference):
        raise CaptureError("an inference workload needs load_model, request and inputs")
    options.pop("measure_overhead", None)
    options.pop("count_flops", None)
    return profile_inference(*parts_inference, scenario=workload.scenario, **options)  # type: ignore[arg-type]
