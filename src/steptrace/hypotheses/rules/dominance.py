"""Rules ``dominant-op`` and ``profiler-distortion``: what the operator table can mislead.

``dominant-op`` never names a wrapper (``WRAPPER``): a collective's ``record_param_comms``
record, the ``ProfilerStep#`` marker, ``## name ##`` annotations, torch's
``Optimizer.step#`` labels hold the work of others, which the other rules name.
``profiler-distortion`` is a finding only when the distortion was measured; the
suggestion from very short operators, unmeasured, is a line of the report's context
(``distortion_note``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from steptrace.hypotheses.finding import Finding, finding
from steptrace.hypotheses.rules.common import evidence, median, step_share, trace_share, where
from steptrace.units import pct

if TYPE_CHECKING:
    from steptrace.analysis.measure import StepResult, TraceAnalysis
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds


# What the profiler or torch wraps around other work, never work of its own.
WRAPPER = re.compile(
    r"^record_param_comms$|^ProfilerStep#|^##.*##$|^Optimizer\.\w+#|^enumerate\(DataLoader\)#"
)


def dominant_op(case: Case, limits: Thresholds) -> list[Finding]:
    """One operator holds a large share of the GPU time it launched (or of CPU self time)."""
    analysis = case.analysis
    ops = analysis.operators
    on_gpu = analysis.trace.gpu_observed
    measure = "GPU time it launched" if on_gpu else "CPU self time"
    values = [(o.gpu_ms or 0.0) if on_gpu else o.self_ms for o in ops]
    total = sum(values)  # over the listed operators: a lower bound of the share's base
    work = [k for k, o in enumerate(ops) if not WRAPPER.search(o.name)]
    if total <= 0 or not work:
        return []
    top = max(work, key=values.__getitem__)
    op, share = ops[top], values[top] / total
    # its time over the steps' wall time, at most its share of each step's busy time (GPU,
    # or CPU in operators): time outside the steps does not count
    of_step = min(
        trace_share(values[top], analysis),
        step_share((s, share * _busy_ms(s, on_gpu)) for s in analysis.steps),
    )
    if share < limits.dominant_share or of_step < limits.dominant_step_share:
        return []
    shapes = op.input_shapes if op.input_shapes and _DIGIT.search(op.input_shapes) else None
    return [
        finding(
            "dominant-op",
            of_step,
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
                ("input_shapes", op.input_shapes, "text"),
            ),
            hypothesis="Its input shapes or its algorithm may decide the step time.",
            next_check=(
                f"Time {op.name} alone on the same inputs "
                + (f"(shapes {shapes}) " if shapes else "")
                + "and dtypes, outside the profiler; then compare it with an alternative "
                "(layout, algorithm, precision) on the same inputs and check the outputs agree."
            ),
            caveats=(
                *_shape_caveat(op.input_shapes, shapes),
                "A large share says where time goes, not that it can be saved.",
            ),
        )
    ]


_DIGIT = re.compile(r"\d")  # a recorded tensor shape has a size; [[], []] has none


def _shape_caveat(recorded: str | None, shapes: str | None) -> tuple[str, ...]:
    if shapes is not None:
        return ()
    if recorded is None:
        return (
            "Input shapes were not recorded: capture again with record_shapes=True to get "
            "them, knowing it adds overhead.",
        )
    return (f"Its recorded inputs ({recorded}) hold no tensor size to time it on.",)


def _busy_ms(step: StepResult, on_gpu: bool) -> float:
    if on_gpu:
        return step.gpu.busy_ms if step.gpu else 0.0
    return step.cpu.busy_ms


def profiler_distortion(case: Case, limits: Thresholds) -> list[Finding]:
    """The profiler's own cost, measured when the capture timed the same steps without it.

    The ratio decides: the rule fires from ``overhead_ratio`` on, and explains the share
    of each profiled step the profiler added (``1 - 1/ratio``). Not measured, nothing is
    claimed: ``distortion_note`` says what the operators' durations suggest.
    """
    analysis = case.analysis
    ratio = case.capture.overhead_ratio if case.capture else None
    if ratio is None or ratio < limits.overhead_ratio:
        return []
    durations, counts = _operator_figures(analysis)
    observation = (
        f"{median(counts):.0f} CPU operators per step with a median duration of "
        f"{median(durations):.1f} µs"
        if durations
        else "CPU operators"
    )
    return [
        finding(
            "profiler-distortion",
            _profiler_share(ratio),
            observation=f"{observation}; {_measured(ratio)}.",
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


def distortion_note(case: Case, limits: Thresholds) -> str | None:
    """The context's line when the distortion was not measured and many very short CPU
    operators (``short_operator_us``, ``short_operator_count``) suggest one; else None."""
    if case.capture is not None and case.capture.overhead_ratio is not None:
        return None
    durations, counts = _operator_figures(case.analysis)
    if not durations or median(durations) > limits.short_operator_us:
        return None
    if median(counts) < limits.short_operator_count:
        return None
    return (
        f"Profiler distortion: not measured. {median(counts):.0f} CPU operators per step "
        f"with a median duration of {median(durations):.1f} µs: the profiler's few µs per "
        "operator may be a large part of what they show, so validate any change outside "
        "it (steptrace compare; profile_training(measure_overhead=True) measures it)."
    )


def _operator_figures(analysis: TraceAnalysis) -> tuple[list[float], list[float]]:
    """Per step: the CPU operators' median duration (µs, where known) and their count."""
    durations = [s.cpu.operator_us.median for s in analysis.steps if s.cpu.operator_us]
    return durations, [float(s.cpu.operators) for s in analysis.steps]


def _profiler_share(ratio: float | None) -> float:
    """The share of a profiled step the profiler added; nothing when it was not measured."""
    return 1 - 1 / ratio if ratio is not None and ratio > 1 else 0.0


def _measured(ratio: float) -> str:
    if ratio < 1:  # only with an overhead_ratio threshold under 1
        return (
            f"profiled steps took {ratio:.2f}× the time of the same steps without the "
            "profiler: below 1, that is noise between runs, not a speed-up"
        )
    return (
        f"profiled steps took {ratio:.2f}× the time of the same steps without the profiler: "
        f"the profiler added {pct(_profiler_share(ratio))} of each profiled step"
    )
