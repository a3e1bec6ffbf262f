"""Rules ``repeated-copy`` and ``pageable-memcpy``: what the copies in each step suggest."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from steptrace.hypotheses.finding import Finding, finding
from steptrace.hypotheses.rules.common import (
    carries_the_batch,
    evidence,
    median,
    step_share,
    trace_share,
    where,
)
from steptrace.units import pct

if TYPE_CHECKING:
    from steptrace.analysis.measure import TraceAnalysis
    from steptrace.analysis.time.copies import CopyPattern
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds


def repeated_copy(case: Case, limits: Thresholds) -> list[Finding]:
    """A host-to-device copy of the same size, from the same operator, in every step.

    Copies made inside labels read as reading or transferring the batch (the ``data_read``
    and ``transfer`` parts) are the batch itself: expected. A copy outside every label
    cannot be told apart from the batch and is not reported.

    Every such pattern makes one finding together: its evidence is the largest pattern's,
    ``instances`` names each pattern. Its severity is the patterns' copy time together
    over the steps' wall time: their summed durations (each copy is one event, in one
    pattern), at most the union of the steps' host-to-device copies, since copies on
    several streams can run at once and a sum would count their common time twice.
    """
    analysis = case.analysis
    steps = len(analysis.steps)
    found = [p for p in analysis.copies if _repeats(p, steps, limits)]
    if not found:
        return []
    largest = found[0]  # the patterns come longest first
    together_ms = min(sum(p.total_ms for p in found), _host_to_device_ms(analysis))
    return [
        finding(
            "repeated-copy",
            trace_share(together_ms, analysis),
            observation=_observation(found, steps),
            evidence=evidence(
                where(analysis),
                ("bytes", largest.bytes, "bytes"),
                ("operator", largest.operator, "text"),
                ("label", largest.label, "text"),
                ("host_memory", largest.host_memory, "text"),
                ("per_step", largest.per_step, "count"),
                ("total_ms", largest.total_ms, "ms"),
                ("instances", tuple(_instance(p) for p in found), "names"),
            ),
            hypothesis=(
                "A constant may be rebuilt on the host and transferred at every step "
                "instead of living on the device."
            ),
            next_check=(
                "Create the tensor once on the device before the loop (or register it as "
                "a buffer), keep everything else equal, and verify that outputs, loss and "
                "gradients are unchanged before comparing ms/step outside the profiler."
            ),
            caveats=(
                "The same size each step does not prove the same content: a tensor that "
                "really changes every step (a new mask, new indices) looks the same.",
            ),
        )
    ]


def _repeats(pattern: CopyPattern, steps: int, limits: Thresholds) -> bool:
    """The same host-to-device copy in every step, inside a label that is not the batch's."""
    return (
        pattern.direction == "HtoD"
        and steps >= limits.repeated_copy_steps
        and pattern.steps >= steps
        and len(set(pattern.per_step)) == 1
        and pattern.label is not None
        and not carries_the_batch(pattern.label)
    )


def _host_to_device_ms(analysis: TraceAnalysis) -> float:
    """The union of each step's host-to-device copies, added over the steps; infinite when
    a step's GPU was not observed (no bound known)."""
    if any(s.gpu is None for s in analysis.steps):
        return math.inf
    return sum(
        c.busy_ms for s in analysis.steps if s.gpu for c in s.gpu.memcpy if c.direction == "HtoD"
    )


def _observation(found: list[CopyPattern], steps: int) -> str:
    largest, rest = found[0], found[1:]
    more = ""
    if rest:
        verb = "copy adds" if len(rest) == 1 else "copies add"
        more = f"; {len(rest)} other such {verb} {sum(p.total_ms for p in rest):.3f} ms"
    return (
        f"The same host-to-device copy ({_size(largest)}, launched by {largest.operator} "
        f"inside '{largest.label}') happens {largest.per_step[0]}× in every one of the "
        f"{steps} steps, {largest.total_ms:.3f} ms in all{more}."
    )


def _size(pattern: CopyPattern) -> str:
    return f"{pattern.bytes:,} bytes" if pattern.bytes is not None else "unknown size"


def _instance(pattern: CopyPattern) -> str:
    """``1,024 bytes by aten::copy_ inside 'loss', 3× a step, 0.006 ms``."""
    return (
        f"{_size(pattern)} by {pattern.operator} inside '{pattern.label}', "
        f"{pattern.per_step[0]}× a step, {pattern.total_ms:.3f} ms"
    )


def pageable_memcpy(case: Case, limits: Thresholds) -> list[Finding]:
    """Host-to-device copies from pageable memory: staged, synchronous for the host."""
    analysis = case.analysis
    per_step_bytes, per_step_ms, counts = [], [], []
    for step in analysis.steps:
        if step.gpu is None:
            return []
        pageable = [c for c in step.gpu.memcpy if c.direction == "HtoD" and c.pageable]
        per_step_bytes.append(sum(c.pageable_bytes or 0 for c in pageable))
        per_step_ms.append(sum(c.pageable_busy_ms for c in pageable))
        counts.append(sum(c.pageable for c in pageable))
    if not any(counts) or median(per_step_bytes) < limits.pageable_bytes:
        return []
    share = step_share(zip(analysis.steps, per_step_ms, strict=True))
    return [
        finding(
            "pageable-memcpy",
            share,
            observation=(
                f"{median(counts):.0f} host-to-device copies per step come from pageable "
                f"memory ({median(per_step_bytes) / 1e6:.1f} MB, {median(per_step_ms):.3f} ms "
                f"of copy time per step, {pct(share)} of the step)."
            ),
            evidence=evidence(
                where(analysis),
                ("copies_per_step", median(counts), "count"),
                ("bytes_per_step", median(per_step_bytes), "bytes"),
                ("copy_ms_per_step", median(per_step_ms), "ms"),
            ),
            hypothesis=(
                "Copies from pageable memory are staged by the driver and block the host; "
                "pinned memory could let them overlap other work."
            ),
            next_check=(
                "Use pinned host memory (DataLoader(pin_memory=True) or tensor.pin_memory()) "
                "with .to(device, non_blocking=True), same batch and model; compare ms/step "
                "outside the profiler and check the outputs are unchanged."
            ),
            caveats=(
                "Pinned memory is a limited resource: pinning very large buffers can slow "
                "the rest of the system.",
            ),
        )
    ]
