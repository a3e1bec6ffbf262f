"""The findings' next checks as A/B comparisons, ready to run outside the profiler.

- ``prepared_batch_check`` (input-pipeline): A reads every batch from the loader inside
  the timed step; B runs the same compute on one batch prepared in advance.
- ``pinned_memory_check`` (pageable-memcpy): A copies batches from pageable memory; B
  from pinned memory with ``non_blocking=True``.
- the other findings' checks each have their module: ``inference`` (inference-autograd),
  ``optimizer`` (optimizer-kernels), ``autocast`` (precision), ``profiler``
  (profiler-distortion), ``compiled`` (small-launches, cpu-bound), ``constants``
  (repeated-copy), ``operator_timing`` and ``script`` (dominant-op).

A check that cannot run here raises ``steptrace.errors.NotTestable`` before any timing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec
import torch

from steptrace.devices import pin, to_device
from steptrace.errors import NotTestable
from steptrace.validate.ab import compare
from steptrace.validate.inputs import Batch, MakeState, Output, State, Step
from steptrace.validate.results import Comparison
from steptrace.validate.timing import CheckPlan, Instruments, TimingPlan


def prepared_batch_check(
    step: Step,
    *,
    make_state: MakeState,
    loader: Iterable[Batch],
    device: str | torch.device = "cpu",
    check: CheckPlan | None = None,
    plan: TimingPlan | None = None,
    instruments: Instruments | None = None,
) -> Comparison:
    """Does the step wait for data? The same compute with and without reading the batch.

    The two sides see different data by design, so their outputs are not expected to
    agree: the difference is accepted and shown, not hidden.
    """
    target = torch.device(device)
    prepared = to_device(next(iter(loader)), target)
    source = {"batches": iter(loader)}

    def from_loader(state: State, _: Batch) -> Output:
        try:
            batch = next(source["batches"])
        except StopIteration:
            source["batches"] = iter(loader)
            batch = next(source["batches"])
        return step(state, to_device(batch, target))

    def from_memory(state: State, _: Batch) -> Output:
        return step(state, prepared)

    # different batches by design: say it, don't hide it
    accepted = msgspec.structs.replace(check or CheckPlan(), accept_difference=True)
    return compare(
        from_loader,
        from_memory,
        make_state=make_state,
        batches=[None],
        device=target,
        check=accepted,
        plan=plan,
        instruments=instruments,
    )


def pinned_memory_check(
    step: Step,
    *,
    make_state: MakeState,
    batches: Sequence[Batch],
    device: str | torch.device = "cuda",
    check: CheckPlan | None = None,
    plan: TimingPlan | None = None,
    instruments: Instruments | None = None,
) -> Comparison:
    """Pageable copies (A) against pinned memory with non_blocking copies (B)."""
    target = torch.device(device)
    if target.type != "cuda" or not torch.cuda.is_available():
        raise NotTestable(
            "pinned memory needs a CUDA device: this check cannot run here",
            "on a CUDA GPU: DataLoader(pin_memory=True) or tensor.pin_memory() with "
            ".to(device, non_blocking=True); compare ms/step (steptrace compare)",
        )
    pinned = [pin(b) for b in batches]
    pageable = list(batches)

    def from_pageable(state: State, index: int) -> Output:
        return step(state, to_device(pageable[index], target))

    def from_pinned(state: State, index: int) -> Output:
        return step(state, to_device(pinned[index], target, non_blocking=True))

    return compare(
        from_pageable,
        from_pinned,
        make_state=make_state,
        batches=list(range(len(batches))),
        device=target,
        check=check,
        plan=plan,
        instruments=instruments,
    )
