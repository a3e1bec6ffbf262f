"""Rules ``small-launches`` and ``optimizer-kernels``: work split into many tiny launches."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from steptrace.hypotheses.finding import Finding, finding
from steptrace.hypotheses.rules.common import evidence, median, where
from steptrace.units import pct

if TYPE_CHECKING:
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds

OPTIMIZER_LABEL = re.compile(r"optimizer[._ ]?step|Optimizer\.step", re.I)


def small_launches(case: Case, limits: Thresholds) -> list[Finding]:
    analysis = case.analysis
    counts, short, waiting, walls = [], [], [], []
    for step in analysis.steps:
        if step.gpu is None:
            return []
        counts.append(step.gpu.kernels.count)
        short.append(step.gpu.kernels.shorter_than_launch)
        waiting.append(step.gpu.idle_waiting_on_host_ms or 0.0)
        walls.append(step.wall_ms)
    count, wall = median(counts), median(walls)
    idle_share = median(s.gpu.idle_ms / s.wall_ms for s in analysis.steps if s.gpu and s.wall_ms)
    short_share = median(short) / count if count else 0.0
    wait_share = median(waiting) / wall if wall else 0.0
    many_short = count >= limits.small_kernel_count and short_share >= limits.small_kernel_share
    if not many_short and wait_share < limits.host_wait_share:
        return []
    return [
        finding(
            "small-launches",
            max(wait_share, short_share * idle_share),
            observation=(
                f"{count:.0f} kernels per step, {pct(short_share)} of them shorter than the "
                f"runtime call that launched them; the GPU waited on the host for "
                f"{median(waiting):.3f} ms per step ({pct(wait_share)})."
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
            next_check=(
                "Try grouping the work (a foreach or fused optimizer, fused operators, "
                "torch.compile, CUDA graphs), one change at a time, same batch and warm-up; "
                "compare ms/step outside the profiler and count the compile or capture cost."
            ),
            caveats=(
                "A larger batch also hides launch cost but changes the question; compilation "
                "and graph capture have a start-up cost that must be counted.",
            ),
        )
    ]


def optimizer_kernels(case: Case, limits: Thresholds) -> list[Finding]:
    analysis = case.analysis
    launches, times, labels = [], [], set[str]()
    for step in analysis.steps:
        phases = [p for p in step.phases if OPTIMIZER_LABEL.search(p.name)]
        counted = [p.gpu_launches for p in phases if p.gpu_launches is not None]
        if counted:
            launches.append(max(counted))  # nested optimizer labels: the outer one's count
            times.append(max(p.inclusive_ms for p in phases))
            labels.update(p.name for p in phases)
    if not launches or median(launches) < limits.optimizer_launches:
        return []
    wall = median(s.wall_ms for s in analysis.steps)
    share = median(times) / wall if wall else 0.0
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
