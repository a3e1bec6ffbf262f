"""Rules ``small-launches`` and ``optimizer-kernels``: work split into many tiny launches.

``small-launches`` explains the GPU's wait for launches of kernels shorter than their
launch call (``idle_causes``: not the wait while the batch is read or after a blocking
call); it needs enough kernels per step for their launches to matter.
``optimizer-kernels`` explains the optimizer step's time: the labels read as the
``optimizer_step`` part, torch's own ``Optimizer.step#...`` first when it is there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steptrace.analysis.time.parts import part_of
from steptrace.hypotheses.finding import Finding, finding
from steptrace.hypotheses.rules.common import (
    evidence,
    idle_causes,
    median,
    record_again_first,
    step_share,
    where,
)
from steptrace.units import pct

if TYPE_CHECKING:
    from steptrace.analysis.measure import StepResult, TraceAnalysis
    from steptrace.analysis.time.phases import Phase
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds

TORCH_OPTIMIZER = "Optimizer.step#"  # torch's own label around optimizer.step()


def small_launches(case: Case, limits: Thresholds) -> list[Finding]:
    analysis = case.analysis
    counts, short, waiting, walls = [], [], [], []
    for step in analysis.steps:
        if step.gpu is None:
            return []
        counts.append(step.gpu.kernels.count - step.gpu.kernels.replayed)  # launched one by one
        short.append(step.gpu.kernels.shorter_than_launch)
        waiting.append(step.gpu.idle_waiting_on_host_ms or 0.0)
        walls.append(step.wall_ms)
    count, wall = median(counts), median(walls)
    short_share = median(short) / count if count else 0.0
    wait_share = median(waiting) / wall if wall else 0.0
    explained = step_share((s, _launch_wait_ms(s)) for s in analysis.steps)
    if count < limits.small_kernel_count:
        return []  # a few kernels cannot cost much to launch, whatever the GPU waits for
    if short_share < limits.small_kernel_share and explained < limits.host_wait_share:
        return []
    return [
        finding(
            "small-launches",
            explained,
            observation=(
                f"{count:.0f} kernels{_one_by_one(analysis)} per step, {pct(short_share)} of "
                "them shorter than the runtime call that launched them; the GPU waited on the "
                f"host for {median(waiting):.3f} ms per step ({pct(wait_share)})."
            ),
            evidence=evidence(
                where(analysis),
                ("kernels_per_step", count, "count"),
                ("shorter_than_launch_share", short_share, "share"),
                ("idle_waiting_on_host_ms", median(waiting), "ms"),
                ("idle_waiting_on_host_share", wait_share, "share"),
            ),
            hypothesis=(
                "The work is fragmented into many small kernels: launching them costs more "
                "than running them, and the GPU waits for the CPU between them."
            ),
            next_check=record_again_first(
                analysis,
                "Try grouping the work (a foreach or fused optimizer, fused operators, "
                'torch.compile, CUDA graphs: torch.compile(mode="reduce-overhead")), one '
                "change at a time, same batch and warm-up; compare ms/step outside the "
                "profiler and count the compile or capture cost.",
            ),
            caveats=(
                "A larger batch also hides launch cost but changes the question; compilation "
                "and graph capture have a start-up cost that must be counted.",
                "Its share of the step is the wait for short kernels' launches only: not the "
                "GPU's idle time while the batch is read or after a blocking call.",
            ),
        )
    ]


def _one_by_one(analysis: TraceAnalysis) -> str:
    """`` launched one by one (and N replayed by graphs)`` when graphs replayed kernels in
    the steps; nothing otherwise (every kernel then has its launch)."""
    replayed = [s.gpu.kernels.replayed for s in analysis.steps if s.gpu is not None]
    if not any(replayed):
        return ""
    return f" launched one by one (and {median(replayed):.0f} replayed by graphs)"


def _launch_wait_ms(step: StepResult) -> float:
    causes = idle_causes(step)
    return causes.launches if causes is not None else 0.0


def optimizer_kernels(case: Case, limits: Thresholds) -> list[Finding]:
    analysis = case.analysis
    launches, times, labels = [], [], set[str]()
    shares = []
    for step in analysis.steps:
        phases = optimizer_phases(step.phases)
        counted = [p.gpu_launches for p in phases if p.gpu_launches is not None]
        if counted:
            launches.append(max(counted))  # nested optimizer labels: the outer one's count
            times.append(max(p.inclusive_ms for p in phases))
            shares.append((step, times[-1]))
            labels.update(p.name for p in phases)
    if not launches or median(launches) < limits.optimizer_launches:
        return []
    share = step_share(shares)
    return [
        finding(
            "optimizer-kernels",
            share,
            observation=(
                f"The optimizer step ({', '.join(sorted(labels))}) launches "
                f"{median(launches):.0f} GPU activities per step and lasts "
                f"{median(times):.3f} ms ({pct(share)} of the step)."
            ),
            evidence=evidence(
                where(analysis),
                ("launches_per_step", median(launches), "count"),
                ("optimizer_ms", median(times), "ms"),
                ("labels", tuple(sorted(labels)), "names"),
            ),
            hypothesis=(
                "The optimizer may update parameters one tensor at a time, many small kernels "
                "per parameter."
            ),
            next_check=(
                "Switch to the foreach or fused implementation (e.g. torch.optim.AdamW(..., "
                "fused=True)), same hyper-parameters and starting state; compare parameters "
                "after K steps, then ms/step outside the profiler."
            ),
            caveats=("Fused optimizers can differ in the last bits of floating point results.",),
        )
    ]


def optimizer_phases(phases: tuple[Phase, ...]) -> list[Phase]:
    """The labels read as the optimizer step; torch's own label alone when it is there (a
    framework's optimizer_step label may hold the forward and backward passes too)."""
    chosen = [p for p in phases if part_of(p.name) == "optimizer_step"]
    own = [p for p in chosen if p.name.startswith(TORCH_OPTIMIZER)]
    return own or chosen
