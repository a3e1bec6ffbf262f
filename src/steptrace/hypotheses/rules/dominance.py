"""Rules ``dominant-op`` and ``profiler-distortion``: what the operator table can mislead.

``dominant-op`` never names a wrapper (``WRAPPER``): a collective's ``record_param_comms``
record, the ``ProfilerStep#`` marker, ``## name ##`` annotations, torch's
``Optimizer.step#`` labels hold the work of others, which the other rules name; nor a
compiled graph's records (``Torch-Compiled Region: F/C``, ``CompiledFunction``, Dynamo's
runtime: ``analysis.compiler.steps``), whose self time is a whole graph's generated code,
no operator that could be timed alone.
``profiler-distortion`` is a finding only when the distortion was measured; the
suggestion from very short operators, unmeasured, is a line of the report's context
(``distortion_note``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from steptrace.analysis.compiler.steps import GRAPH_CALLS, REGION, WRAPPERS
from steptrace.hypotheses.finding import Finding, finding
from steptrace.hypotheses.rules.common import (
    evidence,
    median,
    operator_figures,
    step_share,
    trace_share,
    where,
)
from steptrace.hypotheses.rules.cpu_side import oversubscribed
from steptrace.units import pct

if TYPE_CHECKING:
    from steptrace.analysis.measure import StepResult
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds
    from steptrace.scenario import ProfilerCost


# What the profiler or torch wraps around other work, never work of its own; and what runs
# a compiled graph, whose work is the graph's, not one operator's.
WRAPPER = re.compile(
    r"^record_param_comms$|^ProfilerStep#|^##.*##$|^Optimizer\.\w+#|^enumerate\(DataLoader\)#|"
    + "|".join(f"^{re.escape(name)}" for name in (*GRAPH_CALLS, *WRAPPERS))
    + f"|{REGION.pattern}"
)


def dominant_op(case: Case, limits: Thresholds) -> list[Finding]:
    """One operator holds a large share of the GPU time it launched (or of CPU self time);
    on a GPU-bound step (the GPU busy ``bound_gpu_busy`` of it) the largest, whatever its
    share, when it holds ``dominant_step_share`` of the step."""
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
    # a GPU-bound step: its largest operator is the first place to look, whatever its share
    gpu_bound = (
        on_gpu
        and median(s.gpu.utilization for s in analysis.steps if s.gpu) >= limits.bound_gpu_busy
    )
    needed = 0.0 if gpu_bound else limits.dominant_share
    if share < needed or of_step < limits.dominant_step_share:
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
                *_waiting_caveat(case, limits, on_gpu),
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


def _waiting_caveat(case: Case, limits: Thresholds, on_gpu: bool) -> tuple[str, ...]:
    """On the CPU, with more intra-op threads than free cores: its time may be waiting."""
    cpu = None if on_gpu else oversubscribed(case, limits)
    if cpu is None:
        return ()
    return (
        f"torch ran {cpu.torch_threads} intra-op threads with {cpu.free_cores} core(s) free "
        "(thread-oversubscription): a parallel operator that waits for a thread the "
        "scheduler put aside shows that wait as its own time, so part of this share may be "
        "waiting, not work: settle the threads first (thread-oversubscription's check).",
    )


def _busy_ms(step: StepResult, on_gpu: bool) -> float:
    if on_gpu:
        return step.gpu.busy_ms if step.gpu else 0.0
    return step.cpu.busy_ms


def profiler_distortion(case: Case, limits: Thresholds) -> list[Finding]:
    """The profiler's own cost, measured when the capture timed the same steps without it.

    Measured in interleaved blocks (``CaptureFacts.overhead``), the ratio and its CI decide:
    the rule fires when the whole CI lies beyond the ±1% band and the ratio reaches
    ``overhead_ratio``, and explains the share of each profiled step the profiler added
    (``1 - 1/ratio``); no detectable difference is no finding (the report's capture lines
    say it). An older capture's ratio without a CI decides alone, with a caveat. Not
    measured, nothing is claimed: ``distortion_note`` says what the operators' durations
    suggest, in the report's context (``investigate`` always measures it).
    """
    analysis = case.analysis
    cost = case.capture.overhead if case.capture else None
    ratio = case.capture.overhead_ratio if case.capture else None
    if cost is not None:
        fires = cost.detected and cost.ratio >= limits.overhead_ratio
    else:
        fires = ratio is not None and ratio >= limits.overhead_ratio
    if ratio is None or not fires:
        return []
    durations, counts = operator_figures(analysis)
    observation = (
        f"{median(counts):.0f} CPU operators per step with a median duration of "
        f"{median(durations):.1f} µs"
        if durations
        else "CPU operators"
    )
    ci = cost.ci if cost is not None else None
    return [
        finding(
            "profiler-distortion",
            _profiler_share(ratio),
            observation=f"{observation}; {_measured(ratio, cost)}.",
            evidence=evidence(
                where(analysis),
                ("operators_per_step", median(counts), "count"),
                ("operator_us_median", median(durations) if durations else None, "us"),
                ("measured_overhead_ratio", ratio, "ratio"),
                *(() if ci is None else (("measured_overhead_ci", _interval(ci), "text"),)),
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
            caveats=(
                "The trace still shows the order of events faithfully.",
                *(() if cost is not None or ratio is None else (_UNPAIRED,)),
            ),
        )
    ]


def distortion_note(case: Case, limits: Thresholds) -> str | None:
    """The context's line when the distortion was not measured and many very short CPU
    operators (``short_operator_us``, ``short_operator_count``) suggest one; else None."""
    if case.capture is not None and case.capture.overhead_ratio is not None:
        return None
    durations, counts = operator_figures(case.analysis)
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


_UNPAIRED = (
    "This capture timed its steps without the profiler after the window, not interleaved "
    "with it: no confidence interval, and whatever changed in between reads as the "
    "profiler's cost (capture again to measure it in interleaved blocks)."
)


def _interval(ci: tuple[float, float]) -> str:
    return f"{ci[0]:.2f}–{ci[1]:.2f}"


def _profiler_share(ratio: float | None) -> float:
    """The share of a profiled step the profiler added; nothing when it was not measured."""
    return 1 - 1 / ratio if ratio is not None and ratio > 1 else 0.0


def _measured(ratio: float, cost: ProfilerCost | None) -> str:
    if cost is None and ratio < 1:
        return (
            f"profiled steps took {ratio:.2f}× the time of the same steps without the "
            "profiler: below 1, that is noise between runs, not a speed-up"
        )
    interval = ""
    if cost is not None:
        low, high = cost.ci
        interval = (
            f" [{100 * cost.confidence:g}% CI {low:.2f}–{high:.2f}×, {len(cost.order)} pairs "
            "of interleaved blocks]"
        )
    return (
        f"profiled steps took {ratio:.2f}×{interval} the time of the same steps without the "
        f"profiler: the profiler added {pct(_profiler_share(ratio))} of each profiled step"
    )
