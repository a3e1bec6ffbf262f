"""Rule ``input-pipeline``: the step spends a large share reading the batch, GPU idle."""

from __future__ import annotations

from typing import TYPE_CHECKING

from steptrace.hypotheses.finding import Finding, finding, pct
from steptrace.hypotheses.rules.common import INPUT_LABEL, median, where

if TYPE_CHECKING:
    from steptrace.analysis.analyze import TraceAnalysis
    from steptrace.hypotheses.thresholds import Thresholds


def input_pipeline(analysis: TraceAnalysis, limits: Thresholds) -> list[Finding]:
    shares, idles, reads, labels = [], [], [], set[str]()
    for step in analysis.steps:
        matching = [p for p in step.phases if INPUT_LABEL.search(p.name)]
        if not matching:
            continue
        read_ms = sum(p.exclusive_ms for p in matching)  # exclusive times never overlap
        labels.update(p.name for p in matching)
        reads.append(read_ms)
        shares.append(read_ms / step.wall_ms if step.wall_ms else 0.0)
        idle = [p.gpu_idle_ms for p in matching if p.gpu_idle_ms is not None]
        if idle:
            idles.append(max(idle))  # the outer label's idle time: never counted twice
    if not shares or median(shares) < limits.input_share:
        return []
    gpu_seen = analysis.trace.gpu_observed
    idle_share = median(idles) / median(reads) if gpu_seen and idles and median(reads) else None
    if gpu_seen and (idle_share is None or idle_share < limits.input_gpu_idle):
        return []
    share = median(shares)
    gpu_text = (
        f"and the GPU sat idle for {pct(idle_share)} of that time"
        if idle_share is not None
        else "(GPU not observed: whether it waits cannot be told from this trace)"
    )
    return [
        finding(
            "input-pipeline",
            share,
            observation=(
                f"Reading the batch ({', '.join(sorted(labels))}) takes {pct(share)} of the step "
                f"(median over {len(shares)} steps), {gpu_text}."
            ),
            evidence={
                "read_ms_median": median(reads),
                "share_of_step_median": share,
                "gpu_idle_share_while_reading": idle_share,
                "labels": sorted(labels),
                "where": where(analysis),
            },
            hypothesis="The input pipeline may not keep up with the compute.",
            next_check=(
                "Run the same compute on a batch prepared in advance (read once, reused for "
                "every step), with the same model, batch and warm-up, outside the profiler; "
                "compare ms/step with the real loader and check the outputs match."
            ),
            caveats=(
                "It does not measure storage directly: decoding, augmentation, collation "
                "or a too-small number of workers look the same from here.",
            ),
        )
    ]
