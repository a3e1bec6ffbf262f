"""What a check runs on: the user's workload as ``compare`` takes it.

A ``Workload`` (``steptrace profile``'s) becomes a ``Subject``: a step ``step(state, batch)``,
``make_state()`` returning the user's own objects (``compare`` deep-copies them: they are
never changed), a few batches read once from the loader and kept, and the loader itself
for the checks that read it. Training: the steps ``profile_training`` runs (transfer,
forward, loss, backward, optimizer step, or the workload's own ``step``) returning the
loss, ``state`` holding the model and the optimizer (and what the user's step adds);
inference: ``request(model, input)`` on a model from ``load_model()`` (called once here).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from steptrace.capturing.batches import split_batch
from steptrace.capturing.training import carried_state, training_step, user_training_step
from steptrace.capturing.workload import Workload, training_parts
from steptrace.devices import to_device
from steptrace.errors import CaptureError
from steptrace.validate.inputs import Batch, MakeState, Output, State, Step

BATCHES = 4  # batches kept for the checks: enough for correctness steps and a cycle


@dataclass(frozen=True)
class Subject:
    """The workload as the checks see it."""

    kind: str  # "training" or "inference"
    device: torch.device
    step: Step
    make_state: MakeState
    batches: Sequence[Batch]  # read once, on the device
    loader: Iterable[Batch] | None  # training: the user's loader, re-iterated by input checks


def subject_of(workload: Workload, device: torch.device) -> Subject:
    """The workload's step, state and batches, or a one-line error saying what is missing."""
    if workload.scenario.kind == "training":
        return _training(workload, device)
    return _inference(workload, device)


def _training(workload: Workload, device: torch.device) -> Subject:
    model, optimizer, loader = training_parts(workload)
    batches = [to_device(b, device) for b in itertools.islice(iter(loader), BATCHES)]
    if not batches:
        raise CaptureError(
            "the loader gave no batch after the capture: give a loader that can be iterated "
            "again (a DataLoader or a list), not a one-shot iterator"
        )
    return Subject(
        "training",
        device,
        _training_step(workload, device),
        lambda: {"model": model, **carried_state(optimizer, None)},
        batches,
        loader,
    )


def _training_step(workload: Workload, device: torch.device) -> Step:
    """The step the capture ran: the user's own, or steptrace's on ``loss_fn``."""
    user_step, loss_fn = workload.step, workload.loss_fn
    split = workload.split_batch or split_batch
    if user_step is not None:
        return lambda state, batch: user_training_step(
            user_step, state["model"], batch, state, device
        )
    assert loss_fn is not None  # training_parts refused neither
    return lambda state, batch: training_step(
        state["model"], state["optimizer"], loss_fn, batch, device, split=split
    )


def _inference(workload: Workload, device: torch.device) -> Subject:
    load_model, request, inputs = workload.load_model, workload.request, workload.inputs
    if load_model is None or request is None or inputs is None:
        raise CaptureError("an inference workload needs load_model, request and inputs")
    try:
        model = load_model()
    except Exception as exc:  # the user's code: one line
        raise CaptureError(f"load_model() failed: {exc!r}") from None
    batches = [to_device(x, device) for x in list(inputs)[:BATCHES]]
    if not batches:
        raise CaptureError("the inference workload has no inputs")

    def step(state: State, batch: Batch) -> Output:
        return request(state["model"], batch)

    return Subject("inference", device, step, lambda: {"model": model}, batches, None)
