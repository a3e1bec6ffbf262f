"""Rules ``per-tensor-optimizer``, ``dispatch-bound`` and ``thread-oversubscription``: where
the CPU's time goes when there is no GPU to watch.

``per-tensor-optimizer`` reads the optimizer step on a CPU trace (torch's own
``Optimizer.step#`` label first): many operators in it and no multi-tensor operator
(``_foreach_*``, ``_fused_*``) anywhere means one small operator per parameter and
moment; torch picks the per-tensor loop by itself on the CPU (``foreach=None``).
``dispatch-bound`` reads how each step's work is cut: many operators called from Python,
and most of the step outside the leaf operators longer than ``analysis.time.cpu.SHORT_OPERATOR_US``
(where the work is done): torch's per-operator overhead, not the work, sets the pace.
``thread-oversubscription`` reads the capture's facts: torch's intra-op threads against
the cores that other processes left free when the window began. No trace shows what it
costs (a parallel operator waiting for a thread put aside looks like a long operator), so
it claims no time; its check measures it, and runs before the others, whose timings it
would otherwise distort.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steptrace.analysis.time.cpu import SHORT_OPERATOR_US
from steptrace.hypotheses.finding import Finding, finding
from steptrace.hypotheses.rules.common import evidence, median, step_share, where
from steptrace.hypotheses.rules.launches import optimizer_phases
from steptrace.units import pct

if TYPE_CHECKING:
    from steptrace.analysis.measure import TraceAnalysis
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds
    from steptrace.scenario import CpuFacts

MULTI_TENSOR = ("_foreach_", "_fused_")  # operators that update many tensors at once


def per_tensor_optimizer(case: Case, limits: Thresholds) -> list[Finding]:
    analysis = case.analysis
    if analysis.trace.gpu_observed or _multi_tensor(analysis):
        return []
    counts, times, labels = [], [], set[str]()
    for step in analysis.steps:
        phases = optimizer_phases(step.phases)
        if phases:
            counts.append(max(p.operators for p in phases))  # nested labels: the outer one
            times.append((step, max(p.inclusive_ms for p in phases)))
            labels.update(p.name for p in phases)
    share = step_share(times)
    if not counts or median(counts) < limits.optimizer_cpu_operators:
        return []
    if share < limits.optimizer_cpu_share:
        return []
    ms = median(t for _, t in times)
    return [
        finding(
            "per-tensor-optimizer",
            share,
            observation=(
                f"The optimizer step ({', '.join(sorted(labels))}) runs {median(counts):.0f} "
                f"CPU operators per step and lasts {ms:.3f} ms ({pct(share)} of the step); no "
                "multi-tensor operator (_foreach_*, _fused_*) runs in the trace."
            ),
            evidence=evidence(
                where(analysis),
                ("operators_per_step", median(counts), "count"),
                ("optimizer_ms", ms, "ms"),
                ("labels", tuple(sorted(labels)), "names"),
            ),
            hypothesis=(
                "The optimizer updates one tensor at a time (torch's default on the CPU): a "
                "few small operators per parameter, each paying torch's dispatch."
            ),
            next_check=(
                "Build the optimizer with fused=True (else foreach=True), same "
                "hyper-parameters and starting state; compare parameters after a few steps, "
                "then ms/step outside the profiler."
            ),
            caveats=(
                "The profiler adds a few µs to every operator: the optimizer's share of a "
                "profiled step overstates it; the check measures it without the profiler.",
                "Fused and foreach optimizers can differ in the last bits of floating point.",
            ),
        )
    ]


def _multi_tensor(analysis: TraceAnalysis) -> bool:
    return any(marker in o.name for o in analysis.operators for marker in MULTI_TENSOR)


def dispatch_bound(case: Case, limits: Thresholds) -> list[Finding]:
    analysis = case.analysis
    steps = [s for s in analysis.steps if s.wall_ms > 0]
    if analysis.trace.gpu_observed or not steps:
        return []
    outer = median(s.cpu.outer_operators for s in steps)
    share = step_share((s, max(s.wall_ms - s.cpu.leaf_work_ms, 0.0)) for s in steps)
    if outer < limits.short_operator_count or share < limits.dispatch_share:
        return []
    work_ms = median(s.cpu.leaf_work_ms for s in steps)
    wall_ms = median(s.wall_ms for s in steps)
    return [
        finding(
            "dispatch-bound",
            share,
            observation=(
                f"{outer:.0f} operators per step called from Python; the leaf operators longer "
                f"than {SHORT_OPERATOR_US:g} µs, where the work is done, take {work_ms:.3f} ms "
                f"of the {wall_ms:.3f} ms step: {pct(share)} of it goes to shorter operators, "
                "their dispatch and the Python between them."
            ),
            evidence=evidence(
                where(analysis),
                ("outer_operators_per_step", outer, "count"),
                ("leaf_work_ms", work_ms, "ms"),
                ("short_operator_us", SHORT_OPERATOR_US, "us"),
            ),
            hypothesis=(
                "The step is dispatch-bound: it is cut into many operators on little data "
                "each, so torch's per-operator overhead (a few µs) sets its pace, not the work."
            ),
            next_check=(
                "torch.compile the model (compile time apart) and compare ms/step outside the "
                "profiler, outputs compared; or vectorise by hand: one operator on a batched "
                "tensor instead of a Python loop of small ones."
            ),
            caveats=(
                "The profiler adds a few µs to every operator: a dispatch-bound step looks "
                "slower in the trace than it is without it.",
            ),
        )
    ]


def oversubscribed(case: Case, limits: Thresholds) -> CpuFacts | None:
    """The capture's CPU facts when torch ran more intra-op threads than the free cores
    hold (``threads_per_free_core`` each, at least one core); else None."""
    cpu = case.capture.cpu if case.capture is not None else None
    if cpu is None or cpu.free_cores is None or cpu.torch_threads <= 1:
        return None
    if cpu.torch_threads <= limits.threads_per_free_core * max(cpu.free_cores, 1):
        return None
    return cpu


def thread_oversubscription(case: Case, limits: Thresholds) -> list[Finding]:
    cpu = oversubscribed(case, limits)
    if cpu is None or cpu.free_cores is None:
        return []
    room = max(cpu.free_cores, 1)
    load = f", load {cpu.load_1min:.1f}" if cpu.load_1min is not None else ""
    return [
        finding(
            "thread-oversubscription",
            0.0,
            observation=(
                f"torch ran {cpu.torch_threads} intra-op threads on {cpu.cores} cores, "
                f"{cpu.others_running} runnable task(s) of other processes beside them"
                f"{load}: {cpu.free_cores} core(s) free when the window began."
            ),
            evidence=evidence(
                where(case.analysis),
                ("torch_threads", cpu.torch_threads, "count"),
                ("cores", cpu.cores, "count"),
                ("others_running", cpu.others_running, "count"),
                ("free_cores", cpu.free_cores, "count"),
            ),
            hypothesis=(
                "More threads than free cores: each parallel operator ends by waiting for a "
                "thread the scheduler put aside, so the step takes longer than with fewer."
            ),
            next_check=(
                f"torch.set_num_threads({room}) (the free cores), and compare ms/step outside "
                "the profiler with the threads as they are."
            ),
            caveats=(
                "The trace cannot show what it costs (a parallel operator waiting for a "
                "thread looks like a long one): this finding claims no time until its check "
                "measures it.",
                "Other processes come and go: the free cores were counted when the window began.",
            ),
        )
    ]
