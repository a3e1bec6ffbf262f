"""A workload for ``steptrace profile``: the pieces a user function returns, and their run.

    def my_workload() -> steptrace.capturing.Workload:
        model = ...
        return steptrace.capturing.Workload(
            scenario=steptrace.Scenario(question="Does the step wait for data?"),
            model=model, optimizer=..., loss_fn=..., loader=...,
        )

A training step the default cannot express (AMP, gradient clipping, accumulation, a
hidden state carried from batch to batch) is the user's own ``step(model, batch, state)
-> loss``: it does the forward, the backward and the optimizer step itself, with
``state["optimizer"]``, and keeps in ``state`` what it carries to the next step (set on
first use: ``state.get("hidden")``); ``loss_fn`` is then not needed. Capture and every
check run that step, each with its own ``state``:

    def step(model, batch, state):
        inputs, target = batch
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(inputs), target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        state["optimizer"].step()
        state["optimizer"].zero_grad(set_to_none=True)
        return loss

    Workload(scenario=..., model=model, optimizer=optimizer, loader=loader, step=step)

An inference workload gives ``load_model``, ``request`` and ``inputs`` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from steptrace.capturing.batches import SplitBatch
from steptrace.capturing.inference import profile_inference
from steptrace.capturing.result import CaptureResult
from steptrace.capturing.training import LossFn, OwnStep, UserStep, profile_training
from steptrace.errors import CaptureError, TraceError, ended_by, raised_at
from steptrace.scenario import Scenario
from steptrace.window import Window


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
    split_batch: SplitBatch | None = None  # training: batch -> (inputs, target); see batches
    step: UserStep | None = None  # training: the user's step(model, batch, state) -> loss


TRAINING_NEEDS = "a training workload needs model, optimizer, loader and loss_fn (or its own step)"


def training_parts(
    workload: Workload,
) -> tuple[torch.nn.Module, torch.optim.Optimizer, Iterable[Any]]:
    """The model, optimizer and loader of a training workload, or a one-line error."""
    model, optimizer, loader = workload.model, workload.optimizer, workload.loader
    if model is None or optimizer is None or loader is None:
        raise CaptureError(TRAINING_NEEDS)
    if workload.loss_fn is None and workload.step is None:
        raise CaptureError(TRAINING_NEEDS)
    return model, optimizer, loader


def run_workload(workload: Workload, *, out: str | Path, window: Window) -> CaptureResult:
    """Capture a workload with ``profile_training`` or ``profile_inference``; how the
    workload's code ended it (an exception, ``sys.exit``) is a one-line ``CaptureError``
    naming where, and nothing is left on disk."""
    try:
        return _captured(workload, out, window)
    except (CaptureError, TraceError, KeyboardInterrupt):
        raise
    except Exception as error:
        if _after_ctrl_c(error):  # the profiler's clean-up failed as Ctrl-C went up
            raise KeyboardInterrupt from None
        raise CaptureError(f"the capture stopped: the workload raised {raised_at(error)}") from None
    except BaseException as error:  # sys.exit, os._exit (``user_code``), GeneratorExit
        raise CaptureError(f"the capture stopped: the workload {ended_by(error)}") from None


def _after_ctrl_c(error: BaseException | None) -> bool:
    """Whether ``error`` was raised while a Ctrl-C went up."""
    while error is not None:
        if isinstance(error, KeyboardInterrupt):
            return True
        error = error.__context__
    return False


def _captured(workload: Workload, out: str | Path, window: Window) -> CaptureResult:
    scenario = workload.scenario
    if scenario.kind == "training":
        model, optimizer, loader = training_parts(workload)
        return profile_training(
            model,
            optimizer,
            workload.loss_fn,
            loader,
            scenario=scenario,
            out=out,
            window=window,
            split_batch=workload.split_batch,
            own_step=OwnStep(workload.step) if workload.step else None,
        )
    load_model, request, inputs = workload.load_model, workload.request, workload.inputs
    if load_model is None or request is None or inputs is None:
        raise CaptureError("an inference workload needs load_model, request and inputs")
    return profile_inference(load_model, request, inputs, scenario=scenario, out=out, window=window)
