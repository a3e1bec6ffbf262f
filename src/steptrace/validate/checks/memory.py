"""Memory measured outside the trace: what a step allocates, for the memory findings' checks.

- ``allocated_bytes(device)``: what the allocator holds now: ``torch.cuda.memory_allocated``
  on a GPU; on the CPU, what glibc's malloc has in use (``mallinfo2``: its arenas' chunks
  and its mmapped ones), where torch's CPU tensors live; ``NotTestable`` elsewhere.
- ``growth(step, make_state, batches, device, steps)``: a fresh copy of the state run for
  ``steps`` steps after two to warm up, the memory allocated after each: a leak grows by
  about the same bytes every step.
- ``peak_bytes(step, state, batch, device)``: the most one step allocates above what was
  allocated before it: ``torch.cuda.max_memory_allocated`` on a GPU; on the CPU, the step
  recorded with ``profile_memory`` alone (the profiler slows the step; it changes no byte
  allocated) and its ``[memory]`` events read back.
- ``checkpoint_peaks(step, make_state, batches, device)``: the largest block of the model
  (by the bytes its inner layers output in a forward pass) run under
  ``torch.utils.checkpoint``: the correctness of the change, then one step's peak with and
  without it, each from a fresh copy of the state.
"""

from __future__ import annotations

import copy
import ctypes
import sys
import tempfile
from collections.abc import Sequence
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

import msgspec
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from steptrace.devices import activities
from steptrace.errors import NotTestable
from steptrace.process.quiet import without_usdt_lines
from steptrace.validate.agreement import check_both
from steptrace.validate.inputs import Batch, MakeState, State, Step
from steptrace.validate.results import Correctness
from steptrace.validate.timing import CheckPlan

WARM_STEPS = 2  # run before measuring: the optimizer's state, the allocator's caches


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


@cache
def _mallinfo2() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL("libc.so.6").mallinfo2  # glibc 2.33 and later
    except (OSError, AttributeError):
        return None
    function.restype = _MallInfo2
    return function


def allocated_bytes(device: torch.device) -> int:
    """What the device's allocator holds now (see module)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        return int(torch.cuda.memory_allocated(device))
    info = _mallinfo2()
    if device.type != "cpu" or info is None:
        raise NotTestable(
            f"no allocator statistics on {device.type} here (glibc's mallinfo2 on Linux CPUs, "
            "torch.cuda's on GPUs)",
            "watch the process's memory over many steps (RSS) by hand",
        )
    found = info()
    return int(found.uordblks + found.hblkhd)


class Growth(msgspec.Struct, frozen=True):
    """The memory allocated after each measured step, and what it says."""

    after_bytes: tuple[int, ...]  # after each measured step
    per_step_bytes: tuple[int, ...]  # differences of consecutive ones

    @property
    def median_bytes(self) -> float:
        ordered = sorted(self.per_step_bytes)
        mid = len(ordered) // 2
        return float(ordered[mid]) if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2

    @property
    def growing_steps(self) -> int:
        return sum(1 for d in self.per_step_bytes if d > 0)


def growth(
    step: Step, make_state: MakeState, batches: Sequence[Batch], device: torch.device, steps: int
) -> Growth:
    """Run a fresh copy of the state ``WARM_STEPS`` + ``steps`` steps; measure after each."""
    state = copy.deepcopy(dict(make_state()))
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        for k in range(WARM_STEPS):
            _discard(step(state, batches[k % len(batches)]))
        after = [allocated_bytes(device)]
        for k in range(steps):
            _discard(step(state, batches[(WARM_STEPS + k) % len(batches)]))
            after.append(allocated_bytes(device))
    return Growth(tuple(after), tuple(b - a for a, b in pairwise(after)))


def _discard(outputs: object) -> None:
    """Let a step's outputs go: a check must not hold what the step returns."""
    del outputs


def peak_bytes(step: Step, state: State, batch: Batch, device: torch.device) -> int:
    """The most one step allocates above what was allocated before it (see module)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        _discard(step(state, batch))
        torch.cuda.synchronize(device)
        return int(torch.cuda.max_memory_allocated(device) - before)
    from steptrace.trace.fields import select
    from steptrace.trace.load import read_trace

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "step.json"
        recording = torch.profiler.profile(activities=activities(device), profile_memory=True)
        with without_usdt_lines():
            recording.start()
        try:
            _discard(step(state, batch))
        finally:
            with without_usdt_lines():
                recording.stop()
        recording.export_chrome_trace(str(path))
        instants = read_trace(path, select(("instants",)), progress=False).instants
    assert instants is not None
    memory = instants.named("[memory]") & (instants.column("device_type") == 0)
    total, moved = instants.column("total_allocated")[memory], instants.column("bytes")[memory]
    if total.size == 0:
        return 0
    return int(total.max() - (total[0] - moved[0]))


class CheckpointPeaks(msgspec.Struct, frozen=True):
    """The largest block checkpointed: does the step still agree, and its peak with and
    without."""

    block: str  # the block's name in the model ("layers.2")
    correctness: Correctness
    peak_a_bytes: int | None  # None: not measured (the outputs differ)
    peak_b_bytes: int | None


def checkpoint_peaks(
    step: Step,
    make_state: MakeState,
    batches: Sequence[Batch],
    device: torch.device,
    check: CheckPlan | None = None,
) -> CheckpointPeaks:
    """The model's largest block under ``torch.utils.checkpoint`` (see module)."""
    origin = dict(make_state())
    model = origin.get("model")
    if not isinstance(model, nn.Module):
        raise NotTestable("the state has no model to checkpoint", "give the workload its model")
    block = largest_block(step, origin, batches[0])
    changed = copy.deepcopy(origin)
    _checkpointed(changed["model"].get_submodule(block))
    plan = check or CheckPlan()
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    feeds = (list(batches), list(batches))
    correctness, _ = check_both(
        (step, step), (origin, changed), feeds, plan, seed=0, clock=_clock, synchronize=sync
    )
    if not correctness.ok:
        return CheckpointPeaks(block, correctness, None, None)
    peaks = [_warm_peak(step, side, batches, device) for side in (origin, changed)]
    return CheckpointPeaks(block, correctness, peaks[0], peaks[1])


def _clock() -> float:
    import time

    return time.perf_counter()


def _warm_peak(step: Step, origin: State, batches: Sequence[Batch], device: torch.device) -> int:
    state = copy.deepcopy(origin)
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        for k in range(WARM_STEPS):
            _discard(step(state, batches[k % len(batches)]))
        return peak_bytes(step, state, batches[WARM_STEPS % len(batches)], device)


def largest_block(step: Step, origin: State, batch: Batch) -> str:
    """The child of the model (descending through single-child wrappers) whose inner layers
    output the most bytes in one step's forward pass: what checkpointing would recompute
    rather than keep; of equal ones the earliest, whose activations are kept the longest
    (the backward reaches it last). ``NotTestable`` for a model without a child."""
    model: nn.Module = origin["model"]
    prefix, body = "", model
    while len(children := list(body.named_children())) == 1:
        prefix, body = f"{prefix}{children[0][0]}.", children[0][1]
    if not children:
        raise NotTestable("the model has no block to checkpoint", "checkpoint a block by hand")
    state = copy.deepcopy(origin)
    copied = state["model"].get_submodule(prefix.rstrip(".")) if prefix else state["model"]
    outputs: dict[str, int] = {name: 0 for name, _ in children}
    hooks = []
    for name, _ in children:
        for inner in copied.get_submodule(name).modules():
            if inner is not copied.get_submodule(name):
                hooks.append(inner.register_forward_hook(_counter(outputs, name)))
    try:
        with torch.random.fork_rng():
            _discard(step(state, batch))
    finally:
        for hook in hooks:
            hook.remove()
    order = {name: k for k, (name, _) in enumerate(children)}
    name = max(outputs, key=lambda n: (outputs[n], -order[n]))  # ties: the earliest block
    return f"{prefix}{name}"


def _counter(outputs: dict[str, int], name: str) -> Any:
    def count(module: nn.Module, inputs: Any, output: Any) -> None:
        if isinstance(output, torch.Tensor):
            outputs[name] += output.numel() * output.element_size()

    return count


def _checkpointed(module: nn.Module) -> None:
    """Make ``module`` run under ``torch.utils.checkpoint`` (its activations recomputed in
    the backward): its class swapped for a subclass, so that its parameters keep their names
    and a deep copy keeps the change."""
    base = type(module)

    def forward(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
        return checkpoint(base.forward, self, *args, use_reentrant=False, **kwargs)

    module.__class__ = type(f"Checkpointed{base.__name__}", (base,), {"forward": forward})
