"""Rules ``sync-in-step`` and ``cpu-bound``: the host and the GPU waiting for each other.

``sync-in-step`` explains the GPU's idle time after blocking calls, less the idle time
while the batch is read; ``cpu-bound`` the GPU idle time no other cause takes
(``idle_causes``). ``comm-overlap`` is in ``rules.communication``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steptrace.hypotheses.finding import Finding, finding
from steptrace.hypotheses.rules.common import (
    evidence,
    idle_causes,
    median,
    operator_figures,
    record_again_first,
    recorded_options,
    step_share,
    where,
)
from steptrace.hypotheses.rules.unrecorded import outside_reading
from steptrace.units import pct

if TYPE_CHECKING:
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds

# Operators that copy a value to the host and so wait for the GPU.
SYNCING_OPERATORS = (
    "aten::item",
    "aten::_local_scalar_dense",
    "aten::nonzero",
    "aten::is_nonzero",
)


def sync_in_step(case: Case, limits: Thresholds) -> list[Finding]:
    analysis = case.analysis
    if not analysis.trace.gpu_observed:
        return []
    idle = [s.gpu.idle_after_sync_ms for s in analysis.steps if s.gpu]
    share = median(
        s.gpu.idle_after_sync_ms / s.wall_ms for s in analysis.steps if s.gpu and s.wall_ms
    )
    if share < limits.sync_idle_share:
        return []
    calls: dict[str, int] = {}
    for step in analysis.steps:
        for sync in step.gpu.sync_calls if step.gpu else ():
            calls[sync.name] = calls.get(sync.name, 0) + sync.count
    operators = {o.name: o.calls for o in analysis.operators if o.name in SYNCING_OPERATORS}
    named = ", ".join(f"{n} ×{c}" for n, c in {**calls, **operators}.items()) or "blocking calls"
    explained = step_share((s, c.after_sync) for s in analysis.steps if (c := idle_causes(s)))
    return [
        finding(
            "sync-in-step",
            explained,
            observation=(
                f"After blocking calls ({named}) the GPU sits idle {median(idle):.3f} ms per "
                f"step ({pct(share)}) until the host launches more work."
            ),
            evidence=evidence(
                where(analysis),
                ("idle_after_sync_ms", median(idle), "ms"),
                ("share_of_step", share, "share"),
                ("sync_calls", tuple(f"{n} ×{c}" for n, c in calls.items()), "names"),
                ("syncing_operators", tuple(f"{n} ×{c}" for n, c in operators.items()), "names"),
            ),
            hypothesis=(
                "The host waits for the GPU inside the step (a .item(), .cpu(), nonzero or an "
                "explicit synchronize), then the GPU waits for the host."
            ),
            next_check=(
                "Move the synchronizing call out of the step (log every N steps, keep values "
                "on the device) or remove it; check that the results are unchanged, then "
                "compare ms/step outside the profiler."
            ),
            caveats=(
                "Some syncs are needed (a data-dependent shape, a loss printed for a reason); "
                "the profiler's own step boundary is not one of them.",
            ),
        )
    ]


def cpu_bound(case: Case, limits: Thresholds) -> list[Finding]:
    """The host's own work sets the pace: the GPU idle while the host is inside operators,
    or while its work (operators, Python between them, launches) is recorded."""
    analysis = case.analysis
    if not analysis.trace.gpu_observed:
        return []
    gpu = median(s.gpu.utilization for s in analysis.steps if s.gpu)
    cpu = median(s.cpu.busy_ms / s.wall_ms for s in analysis.steps if s.wall_ms)
    working = median(  # the GPU idle while the host's work is recorded (not silent)
        max(0.0, c.other - (outside_reading(s) or 0.0)) / s.wall_ms
        for s in analysis.steps
        if s.wall_ms and (c := idle_causes(s)) is not None
    )
    if gpu >= limits.cpu_bound_gpu_busy or (
        cpu < limits.cpu_bound_cpu_busy and working < limits.cpu_bound_host_share
    ):
        return []
    explained = step_share((s, c.other) for s in analysis.steps if (c := idle_causes(s)))
    durations, counts = operator_figures(analysis)
    options = recorded_options(analysis)
    per_operator = (
        f": {median(counts):.0f} CPU operators per step, {median(durations):.1f} µs each (median)"
        if durations
        else ""
    )
    return [
        finding(
            "cpu-bound",
            explained,
            observation=(
                f"The GPU is busy {pct(gpu)} of the step while the CPU is inside operators "
                f"{pct(cpu)} of it{per_operator}."
            ),
            evidence=evidence(
                where(analysis),
                ("gpu_busy_share", gpu, "share"),
                ("cpu_in_operators_share", cpu, "share"),
                ("host_work_share", working, "share"),
                ("operators_per_step", median(counts), "count"),
                ("operator_us_median", median(durations) if durations else None, "us"),
                ("recorded_options", options, "names"),
            ),
            hypothesis=(
                "The host's own work may set the pace: it may launch the GPU's work more "
                "slowly than the GPU runs it, so the GPU waits between launches."
            ),
            next_check=record_again_first(
                analysis,
                "Cut the host's time per step, one change at a time: capture the step in a "
                'CUDA graph (torch.compile(mode="reduce-overhead"), torch.cuda.graphs), a '
                "larger batch per launch, fewer and larger operators (fused or compiled); "
                "compare ms/step outside the profiler (steptrace compare).",
            ),
            caveats=(
                "The profiler slows the CPU side more than the GPU side: part of this may be "
                "its own cost (see profiler-distortion).",
                "Its share of the step is the GPU idle time left once reading the batch, "
                "blocking calls and short kernels' launches have taken theirs.",
            ),
        )
    ]
