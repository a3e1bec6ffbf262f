"""Rules ``dominant-op`` and ``profiler-distortion``: what the operator table can mislead."""

from __future__ import annotations

from typing import TYPE_CHECKING

from steptrace.hypotheses.finding import Finding, finding
from steptrace.hypotheses.rules.common import evidence, median, where
from steptrace.units import pct

if TYPE_CHECKING:
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds


def dominant_op(case: Case, limits: Thresholds) -> list[Finding]:
    """One operator holds a large share of the GPU time it launched (or of CPU self time)."""
    analysis = case.analysis
    ops = analysis.operators
    if not ops:
        return []
    on_gpu = analysis.trace.gpu_observed
    measure = "GPU time it launched" if on_gpu else "CPU self time"
    values = [(o.gpu_ms or 0.0) if on_gpu else o.self_ms for o in ops]
    total = sum(values)  # over the listed operators: a lower bound of the share's base
    if total <= 0:
        return []
    top = max(range(len(ops)), key=values.__getitem__)
    op, share = ops[top], values[top] / total
    wall_ms = sum(s.wall_ms for s in analysis.steps)
    step_share = values[top] / wall_ms if wall_ms else 0.0
    if share < limits.dominant_share or step_share < limits.dominant_step_share:
        return []
    shapes = op.input_shapes
    return [
        finding(
            "dominant-op",
            step_share,
            observation=(
                f"{op.name} accounts for {pct(share)} of the {measure} ({values[top]:.3f} ms "
                f"over {op.calls} calls)."
            ),
            evidence=evidence(
                where(analysis),
                ("operator", op.name, "text"),
                ("calls", op.calls, "count"),
                ("ms", values[top], "ms"),
                ("share", share, "share"),
                ("measure", measure, "text"),
                ("input_shapes", shapes, "text"),
            ),
            hypothesis="Its input shapes or its algorithm may decide the step time.",
            next_check=(
                f"Time {op.name} alone on the same inputs "
                + (f"(shapes {shapes}) " if shapes else "")
                + "and dtypes, outside the profiler; then compare it with an alternative "
                "(layout, algorithm, precision) on the same inputs and check the outputs agree."
            ),
            caveats=(
                (
                    "Input shapes were not recorded: capture again with record_shapes=True to "
                    "get them, knowing it adds overhead.",
                )
                if shapes is None
                else ()
            )
            + ("A large share says where time goes, not that it can be saved.",),
        )
    ]


def profiler_distortion(case: Case, limits: Thresholds) -> list[Finding]:
    """Very short CPU operators, many per step: the profiler's own cost is not small here."""
    analysis = case.analysis
    durations = [s.cpu.operator_us.median for s in analysis.steps if s.cpu.operator_us]
    counts = [s.cpu.operators for s in analysis.steps]
    ratio = case.capture.overhead_ratio if case.capture else None
    short = (
        bool(durations)
        and median(durations) <= limits.short_operator_us
        and median(counts) >= limits.short_operator_count
    )
    measured = ratio is not None and ratio >= limits.overhead_ratio
    if not short and not measured:
        return []
    cpu_share = median(s.cpu.busy_ms / s.wall_ms for s in analysis.steps if s.wall_ms)
    observation = (
        f"{median(counts):.0f} CPU operators per step with a median duration of "
        f"{median(durations):.1f} µs"
        if durations
        else "CPU operators"
    )
    if ratio is not None:
        observation += f"; measured without the profiler, steps ran {ratio:.2f}× faster"
    return [
        finding(
            "profiler-distortion",
            cpu_share,
            observation=observation + ".",
            evidence=evidence(
                where(analysis),
                ("operators_per_step", median(counts), "count"),
                ("operator_us_median", median(durations) if durations else None, "us"),
                ("measured_overhead_ratio", ratio, "ratio"),
            ),
            hypothesis=(
                "The step may be dispatch-bound: the profiler adds a few µs to every operator, "
                "so it can distort this step, and per-operator figures may overstate the "
                "small ones."
            ),
            next_check=(
                "Validate any change outside the profiler (steptrace compare, or "
                "profile_training(measure_overhead=True)) before believing per-operator "
                "figures; compare ms/step with and without the profiler."
            ),
            caveats=("The trace still shows the order of events faithfully.",),
        )
    ]
