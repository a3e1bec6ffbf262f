"""Rules over memory per step (``analysis.memory``): ``memory-growth``, ``memory-peak``,
``memory-reserved``, ``memory-churn``.

Their severity is a share of a device's memory, never of the step's time (``basis``): of
its peak for growth (what the window grew by) and the peak (what the step's own
allocations hold of it), of its reserved memory for the reserved bytes no allocation used,
of the step's allocated bytes for churn (what went beyond the peak). Each looks at the
complete steps of each device on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steptrace.analysis.memory.categories import TEMPORARY
from steptrace.analysis.time.parts import part_of
from steptrace.hypotheses.finding import Finding, Where, finding
from steptrace.hypotheses.rules.common import evidence, median, where
from steptrace.units import pct, size

if TYPE_CHECKING:
    from steptrace.analysis.memory.usage import DeviceMemory, MemoryStep
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds


def _devices(case: Case, limits: Thresholds) -> list[tuple[DeviceMemory, list[MemoryStep], Where]]:
    """Each device with its complete steps that moved memory, and where they are; a device
    whose peak stays under ``memory_floor_bytes`` is left out (a GPU trace's few CPU bytes)."""
    memory = case.analysis.memory
    if memory is None:
        return []
    counted = {s.name for s in case.analysis.steps}
    found = []
    for device in memory.devices:
        steps = [s for s in device.steps if s.step in counted and s.allocations]
        if steps and max(s.peak_allocated_bytes for s in steps) >= limits.memory_floor_bytes:
            chosen = [s for s in case.analysis.steps if s.name in {m.step for m in steps}]
            found.append((device, steps, where(case.analysis, chosen)))
    return found


def memory_growth(case: Case, limits: Thresholds) -> list[Finding]:
    """Allocated memory grows in every complete step (two at least), beyond noise."""
    found = []
    for device, steps, place in _devices(case, limits):
        grew = [s.growth_bytes for s in steps]
        peak = max(s.peak_allocated_bytes for s in steps)
        floor = max(limits.memory_growth_bytes, limits.memory_growth_share * peak)
        if len(grew) < 2 or min(grew) < floor:
            continue
        per_step = median(grew)
        found.append(
            finding(
                "memory-growth",
                sum(grew) / peak if peak > 0 else 1.0,
                observation=(
                    f"{device.device}: the memory allocated grows in every one of the "
                    f"{len(grew)} steps, by {size(per_step)} per step (median; "
                    f"{size(min(grew))} to {size(max(grew))}): {size(sum(grew))} over the "
                    f"window, against a peak of {size(peak)}."
                ),
                evidence=evidence(
                    place,
                    ("device", device.device, "text"),
                    ("growth_bytes_per_step", int(per_step), "bytes"),
                    ("steps_growing", len(grew), "count"),
                    ("peak_allocated_bytes", peak, "bytes"),
                ),
                hypothesis=(
                    "Something keeps a reference from one step to the next (a tensor appended "
                    "to a list, a loss summed with its graph, a cache that only grows): a "
                    "leak that ends in an out-of-memory error in a long run."
                ),
                next_check=(
                    "Run more steps outside the profiler from a fresh copy of the state and "
                    "measure the memory allocated after each step: a leak keeps growing by "
                    "about the same amount per step; then look for what the step keeps "
                    "(`.item()` or `.detach()` for what is logged)."
                ),
                caveats=(
                    "A cache filled on its first steps (the allocator's, an optimizer's "
                    "state) grows too, then stops: more steps tell them apart.",
                ),
                basis="memory peak",
            )
        )
    return found


def memory_peak(case: Case, limits: Thresholds) -> list[Finding]:
    """In a training step, what the step allocated and still holds makes most of the peak."""
    training = case.analysis.trace.fwdbwd_flows > 0 or (
        case.scenario is not None and case.scenario.kind == "training"
    )
    found = []
    for device, steps, place in _devices(case, limits) if training else []:
        top = max(steps, key=lambda s: s.peak_allocated_bytes)
        if top.peak_label is not None and part_of(top.peak_label) == "optimizer_step":
            continue  # activations are freed by then: the optimizer's own memory peaks
        held = top.held
        kinds = {h.name: h.bytes for h in held.by_category}  # from steptrace's capture
        part = kinds.get(TEMPORARY, 0) if kinds else held.allocated_in_step_bytes
        share = part / top.peak_allocated_bytes if top.peak_allocated_bytes > 0 else 0.0
        if share < limits.memory_peak_share:
            continue
        holders = ", ".join(f"{h.name} ({size(h.bytes)})" for h in held.by_operator[:3])
        at = f" in {top.peak_label}" if top.peak_label else ""
        found.append(
            finding(
                "memory-peak",
                share,
                observation=(
                    f"{device.device}: at its peak ({size(top.peak_allocated_bytes)}, "
                    f"{top.step}{at}), {pct(share)} of the memory "
                    + (
                        "was activations and temporaries (allocated in the step, neither "
                        "gradients nor the batch, freed before its end)"
                        if kinds
                        else "was allocated during the step and still alive"
                    )
                    + f": mostly by {holders or 'no operator'}; "
                    f"{size(held.alive_from_start_bytes)} were alive since the step began."
                ),
                evidence=evidence(
                    place,
                    ("device", device.device, "text"),
                    ("peak_allocated_bytes", top.peak_allocated_bytes, "bytes"),
                    ("allocated_in_step_alive_bytes", held.allocated_in_step_bytes, "bytes"),
                    ("alive_from_start_bytes", held.alive_from_start_bytes, "bytes"),
                    ("activations_bytes", kinds.get(TEMPORARY, 0) if kinds else None, "bytes"),
                    ("peak_label", top.peak_label, "text"),
                    ("holders", tuple(h.name for h in held.by_operator[:3]), "names"),
                ),
                hypothesis=(
                    "Activations kept for the backward pass hold most of the peak: "
                    "recomputing those of the largest block in the backward (activation "
                    "checkpointing) would lower the peak, at the cost of its forward again."
                ),
                next_check=(
                    "Wrap the largest block of the model in torch.utils.checkpoint and measure "
                    "the peak allocated with and without it, outputs and gradients compared."
                ),
                caveats=(
                    (
                        "Told apart by the capture's inventory of gradients and batch; "
                        "activations are the part that checkpointing can give back."
                    )
                    if kinds
                    else (
                        "What the step allocates also holds gradients and the optimizer's "
                        "first state; activations are the part that checkpointing can give "
                        "back (a steptrace capture tells them apart)."
                    ),
                ),
                basis="memory peak",
            )
        )
    return found


def memory_reserved(case: Case, limits: Thresholds) -> list[Finding]:
    """A GPU's caching allocator holds much more than the step ever had allocated."""
    found = []
    for device, steps, place in _devices(case, limits):
        if device.device == "cpu":
            continue  # the CPU reserves nothing
        reserved = max(s.peak_reserved_bytes for s in steps)
        peak = max(s.peak_allocated_bytes for s in steps)
        unused = reserved - peak
        if reserved < limits.memory_reserved_ratio * peak or unused < limits.memory_reserved_bytes:
            continue
        found.append(
            finding(
                "memory-reserved",
                unused / reserved if reserved > 0 else 0.0,
                observation=(
                    f"{device.device}: the caching allocator reserved {size(reserved)} while "
                    f"at most {size(peak)} was allocated: {size(unused)} ({pct(unused / reserved)}"
                    " of what it reserved) held by no tensor at the peak."
                ),
                evidence=evidence(
                    place,
                    ("device", device.device, "text"),
                    ("peak_reserved_bytes", reserved, "bytes"),
                    ("peak_allocated_bytes", peak, "bytes"),
                    ("unused_at_peak_bytes", unused, "bytes"),
                ),
                hypothesis=(
                    "Blocks cached for tensors of many sizes fragment the reserved memory: the "
                    "next larger allocation may not fit although enough is free."
                ),
                next_check=(
                    "Run the workload with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
                    "and compare torch.cuda.max_memory_reserved() (and the step time) with "
                    "and without, from the same state."
                ),
                caveats=(
                    "Reserved memory is what the allocator keeps to reuse; it is no waste "
                    "until another allocation fails for it.",
                    "expandable_segments needs PyTorch 2.1 or later; NCCL's own buffers are "
                    "outside these figures.",
                ),
                basis="reserved memory",
            )
        )
    return found


def memory_churn(case: Case, limits: Thresholds) -> list[Finding]:
    """A step allocates many times its peak: short-lived temporaries."""
    found = []
    for device, steps, place in _devices(case, limits):
        moved = median(s.allocated_bytes for s in steps)
        peak = median(s.peak_allocated_bytes for s in steps)
        if peak <= 0 or moved < limits.memory_churn_ratio * peak:
            continue
        count = median(s.allocations for s in steps)
        found.append(
            finding(
                "memory-churn",
                1 - peak / moved,
                observation=(
                    f"{device.device}: each step makes {count:.0f} allocations moving "
                    f"{size(moved)}, {moved / peak:.1f} times its peak of {size(peak)} "
                    "(medians over the steps): most of them are short-lived temporaries."
                ),
                evidence=evidence(
                    place,
                    ("device", device.device, "text"),
                    ("allocations_per_step", int(count), "count"),
                    ("allocated_bytes_per_step", int(moved), "bytes"),
                    ("peak_allocated_bytes", int(peak), "bytes"),
                    ("times_the_peak", moved / peak, "ratio"),
                ),
                hypothesis=(
                    "Unfused elementwise operators each write a new temporary: the allocator's "
                    "work, and the memory traffic of writing and reading them back, cost time."
                ),
                next_check=(
                    "Compile the model (torch.compile fuses elementwise chains into fewer "
                    "kernels and temporaries) and time it against the eager model, outside "
                    "the profiler, compile time apart; or use in-place and out= variants."
                ),
                basis="allocated bytes",
            )
        )
    return found
