"""``profile_training``: the seeds' four-step training example, done right.

The iterator is created before the window; each step is labelled ``read_batch``,
``transfer`` and ``train`` (with ``forward``, ``backward`` and ``optimizer_step`` inside);
``prof.step()`` follows each step. The first step(s) run and are timed before the
profiler starts (cold start, kept apart). The user's weights, optimizer state and RNG
states are put back afterwards unless ``restore_state=False``.
"""

from __future__ import annotations

import copy
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from steptrace import devices
from steptrace.capturing import batches
from steptrace.capturing.batches import SplitBatch, call_model, split_batch
from steptrace.capturing.loader_spans import LoaderSpans, folder_for
from steptrace.capturing.measured import flops
from steptrace.capturing.measured.inventory import InventoryRecorder
from steptrace.capturing.measured.overhead import profiler_cost
from steptrace.capturing.result import CaptureResult
from steptrace.capturing.session import Capture
from steptrace.capturing.state import SavedState
from steptrace.errors import CaptureError
from steptrace.scenario import ObservedRun, Scenario
from steptrace.window import Window

Phase = Callable[[str], AbstractContextManager[Any]]
LossFn = Callable[[Any, Any], torch.Tensor]
# the user's own step: ``step(model, batch, state) -> loss`` (``user_training_step``)
UserStep = Callable[[torch.nn.Module, Any, dict[str, Any]], Any]


@dataclass(frozen=True)
class OwnStep:
    """The user's step and the objects it carries from step to step (copied for a run)."""

    step: UserStep
    state: Mapping[str, Any] | None = None


def _no_label(_: str) -> AbstractContextManager[Any]:
    return nullcontext()


def training_step(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: LossFn,
    batch: Any,
    device: torch.device,
    phase: Phase = _no_label,
    split: SplitBatch = split_batch,
    after: Callable[[Any], None] | None = None,
) -> torch.Tensor:
    """One labelled step on a batch already read, split into ``(inputs, target)``;
    ``after`` sees that pair, on its device, once the optimizer has stepped."""
    with phase("transfer"):
        inputs, target = split(devices.to_device(batch, device))
    with phase("train"):
        optimizer.zero_grad(set_to_none=True)
        with phase("forward"):
            loss = loss_fn(call_model(model, inputs), target)
        with phase("backward"):
            loss.backward()
        with phase("optimizer_step"):
            optimizer.step()
    if after is not None:
        after((inputs, target))
    return loss


def user_training_step(
    user_step: UserStep,
    model: torch.nn.Module,
    batch: Any,
    state: dict[str, Any],
    device: torch.device,
    phase: Phase = _no_label,
    after: Callable[[Any], None] | None = None,
) -> Any:
    """The user's step on a batch moved to the device: ``user_step(model, batch, state)``
    does the forward, the backward and the optimizer step itself (``state["optimizer"]``),
    with whatever the loop needs (AMP, clipping, accumulation, a hidden state carried in
    ``state``), and returns the loss. Labelled ``transfer`` and ``train``; torch's own
    labels (``Optimizer.step#...``) name the optimizer step inside."""
    with phase("transfer"):
        moved = devices.to_device(batch, device)
    with phase("train"):
        loss = user_step(model, moved, state)
    if after is not None:
        after(moved)
    return loss


def carried_state(
    optimizer: torch.optim.Optimizer, state: Mapping[str, Any] | None
) -> dict[str, Any]:
    """What a user step gets as ``state``: the optimizer and a deep copy of the user's own
    objects (a scaler, a hidden state...): the run changes the copy, never the user's."""
    return {"optimizer": optimizer, **copy.deepcopy(dict(state or {}))}


def profile_training(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: LossFn | None,
    loader: Iterable[Any],
    *,
    scenario: Scenario,
    out: str | Path,
    window: Window | None = None,
    restore_state: bool = True,
    split_batch: SplitBatch | None = None,
    own_step: OwnStep | None = None,
) -> CaptureResult:
    """Capture a labelled training window and return where it is and what was measured.

    Each batch is split into ``(inputs, target)`` by ``split_batch`` (default: a pair, or a
    mapping whose ``labels`` is the target; see ``steptrace.capturing.batches``). Or
    ``own_step``'s ``step(model, batch, state) -> loss`` runs each step
    (``user_training_step``; ``loss_fn`` unused), ``state`` holding the optimizer and a copy
    of ``own_step.state``.

    ``window`` sets the schedule, the profiler options, ``measure_overhead`` and
    ``count_flops`` (``Window()`` by default).
    """
    if scenario.kind != "training":
        raise CaptureError(f"profile_training needs a training scenario, not {scenario.kind!r}")
    plan = window or Window()
    _check_length(loader, plan)
    clock = time.perf_counter
    capture = Capture(scenario, out=out, window=plan, sync_steps=plan.measure_overhead, clock=clock)
    device = capture.device
    saved = SavedState(model, optimizer)
    listing = InventoryRecorder(capture, model, optimizer)
    split = split_batch or batches.split_batch
    carried = carried_state(optimizer, own_step.state if own_step else None)
    user_step = own_step.step if own_step else None

    def one_step(batch: Any, phase: Phase = _no_label) -> Any:
        if user_step is not None:
            return user_training_step(user_step, model, batch, carried, device, phase, listing)
        if loss_fn is None:
            raise CaptureError("a training capture needs loss_fn, or the workload's own step")
        return training_step(model, optimizer, loss_fn, batch, device, phase, split, listing)

    if user_step is not None:
        split = _whole_batch
    try:
        extra = _run(capture, saved, model, loader, one_step, clock, split, listing)
    finally:
        if restore_state:  # also when the loop fails: the user's weights come back
            saved.restore()
    if listing.steps:
        each = listing.seconds * 1000 / len(listing.steps)
        extra["warnings"] = (
            f"profile_memory: listing the gradients and the batch (what holds the memory "
            f"peak, by address) took {each:.2f} ms a step, inside the profiled steps",
        )
    steady = extra.get("unprofiled_step_ms") or tuple(capture.step_ms)
    extra |= _throughput(extra.get("flops_per_step"), steady, capture)
    return capture.amend(**extra)


def _run(
    capture: Capture,
    saved: SavedState,
    model: torch.nn.Module,
    loader: Iterable[Any],
    step: Callable[..., Any],
    clock: Callable[[], float],
    split: SplitBatch,
    listing: InventoryRecorder,
) -> dict[str, Any]:
    """FLOPs, cold start, the profiled window (and what its tensors were: ``listing``) and
    the unprofiled steps, in that order."""
    device, scenario, plan = capture.device, capture.scenario, capture.window
    extra: dict[str, Any] = {}
    if plan.count_flops:
        extra["flops_per_step"] = flops.count_flops(lambda: step(next(iter(loader))))
        saved.restore()
    model.train(scenario.mode == "train")
    spans = LoaderSpans(folder_for(capture.first_trace))  # the workers' files, beside the trace
    try:
        with spans.installed(loader) as recorded:
            source = _Iterated(spans.iterate, loader) if recorded else loader
            iterator = _Batches(source, plan.needed_steps)  # before the window: unmeasured
            extra["observed"] = _observe(model, split(iterator.first), scenario)
            extra["cold_start_ms"] = _timed_steps(iterator, plan.cold_steps, step, device, clock)
            with capture:
                for _ in range(capture.total_steps):
                    with capture.phase("read_batch"):
                        batch = next(iterator)
                    step(batch, capture.phase)
                    capture.step()
    except BaseException:  # no trace was kept: nor are the workers' files
        spans.discard()
        raise
    if recorded:
        extra["loader_spans"] = str(spans.folder)
    extra["inventory"] = listing.inventory()  # before anything is restored
    if plan.measure_overhead:
        saved.restore()
        model.train(scenario.mode == "train")
        again = _Cycled(loader)
        _timed_steps(again, plan.cold_steps + plan.wait + plan.warmup, step, device, clock)
        cost = profiler_cost(lambda: step(next(again)), plan, device)
        extra["unprofiled_step_ms"] = cost.bare_ms
        extra["overhead_ratio"] = cost.ratio
        extra["overhead"] = cost
    return extra


def _whole_batch(batch: Any) -> tuple[Any, Any]:
    """A user step's batch, whole: its first tensor is the inputs' (what ``_observe`` reads)."""
    return batch, None


def _check_length(loader: Iterable[Any], plan: Window) -> None:
    try:
        available = len(loader)  # type: ignore[arg-type]
    except TypeError:
        return  # an iterable without a length is checked as it runs
    if available < plan.needed_steps:
        raise CaptureError(f"the loader yields {available} batches; {plan.describe()}")


class _Batches(Iterator[Any]):
    """A fresh iterator over the loader whose first batch is known; running out is clear."""

    def __init__(self, loader: Iterable[Any], needed: int) -> None:
        self._source = iter(loader)
        self._needed = needed
        self._taken = 0
        try:
            self.first = next(self._source)
        except StopIteration:
            raise CaptureError("the loader yields no batch") from None

    def __next__(self) -> Any:
        self._taken += 1
        if self._taken == 1:
            return self.first
        try:
            return next(self._source)
        except StopIteration:
            raise CaptureError(
                f"the loader ran out after {self._taken - 1} batches; {self._needed} are needed"
            ) from None


class _Iterated(Iterable[Any]):
    """``loader`` iterated through ``iterate`` (``LoaderSpans.iterate``: each batch timed)."""

    def __init__(self, iterate: Callable[[Iterable[Any]], Iterator[Any]], loader: Any) -> None:
        self._iterate = iterate
        self._loader = loader

    def __iter__(self) -> Iterator[Any]:
        return self._iterate(self._loader)


class _Cycled(Iterator[Any]):
    """The loader's batches without end: a fresh iterator whenever one runs out."""

    def __init__(self, loader: Iterable[Any]) -> None:
        self._loader = loader
        self._source = iter(loader)

    def __next__(self) -> Any:
        try:
            return next(self._source)
        except StopIteration:
            self._source = iter(self._loader)
        try:
            return next(self._source)
        except StopIteration:
            raise CaptureError("the loader yields no batch when iterated again") from None


def _observe(model: torch.nn.Module, split: tuple[Any, Any], scenario: Scenario) -> ObservedRun:
    """What the run really is, to set beside what the scenario declares."""
    inputs = batches.first_tensor(split[0])
    shape = tuple(inputs.shape) if inputs is not None else None
    parameter = next(model.parameters(), None)
    return ObservedRun(
        batch_size=shape[0] if shape else None,
        input_shape=shape,
        parameter_dtype=None if parameter is None else str(parameter.dtype)[len("torch.") :],
        model_mode=scenario.mode,
        device=scenario.device,
    )


def _timed_steps(
    iterator: Iterator[Any],
    count: int,
    step: Callable[[Any], object],
    device: torch.device,
    clock: Callable[[], float],
) -> tuple[float, ...]:
    """Run ``count`` steps outside any profiler, each timed to its end on the device."""
    times = []
    for _ in range(count):
        devices.synchronize(device)
        start = clock()
        step(next(iterator))
        devices.synchronize(device)
        times.append((clock() - start) * 1000)
    return tuple(times)


def _throughput(
    flops_per_step: int | None, steady_ms: tuple[float, ...], capture: Capture
) -> dict[str, Any]:
    """Achieved TFLOP/s from the steady step time (unprofiled when measured) and MFU."""
    if not flops_per_step or not steady_ms:
        return {}
    achieved = flops_per_step / (statistics.median(steady_ms) / 1000) / 1e12
    name, memory = devices.device_name(capture.device), flops.device_memory(capture.device)
    peak = flops.peak_tflops(name, capture.scenario.dtype, memory)
    return {
        "achieved_tflops": achieved,
        "peak_tflops": peak,
        "mfu": achieved / peak if peak else None,
    }
