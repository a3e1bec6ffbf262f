"""Rules ``repeated-copy`` and ``pageable-memcpy``: what the copies in each step suggest."""

from __future__ import annotations

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
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds


def repeated_copy(case: Case, limits: Thresholds) -> list[Finding]:
    """A host-to-device copy of the same size, from the same operator, in every step.

    Copies made inside labels read as reading or transferring the batch (the ``data_read``
    and ``transfer`` parts) are the batch itself: expected. A copy outside every label
    cannot be told apart from the batch and is not reported.
    """
    analysis = case.analysis
    steps = len(analysis.steps)
    found = []
    for pattern in analysis.copies:
        label = pattern.label
        if (
            pattern.direction != "HtoD"
            or steps < limits.repeated_copy_steps
            or pattern.steps < steps
            or len(set(pattern.per_step)) != 1
            or label is None
            or carries_the_batch(label)
        ):
            continue
        size = f"{pattern.bytes:,} bytes" if pattern.bytes is not None else "unknown size"
        found.append(
            finding(
                "repeated-copy",
                trace_share(pattern.total_ms, analysis),
                observation=(
                    f"The same host-to-device copy ({size}, launched by {pattern.operator} "
                    f"inside '{label}') happens {pattern.per_step[0]}× in every one of the "
                    f"{steps} steps, {pattern.total_ms:.3f} ms in all."
                ),
                evidence=evidence(
                    where(analysis),
                    ("bytes", pattern.bytes, "bytes"),
                    ("operator", pattern.operator, "text"),
                    ("label", label, "text"),
                    ("host_memory", pattern.host_memory, "text"),
                    ("per_step", pattern.per_step, "count"),
                    ("total_ms", pattern.total_ms, "ms"),
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
        )
    return found


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
