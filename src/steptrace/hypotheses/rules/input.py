"""Rule ``input-pipeline``: the step spends a large share reading the batch, GPU idle.

Reading the batch is what the labels read as the ``data_read`` part say
(``steptrace.analysis.time.parts``: the scenario's own name, ``read_batch``, the DataLoader's
``__next__``, Lightning's ``train_dataloader_next``, ...). It explains the GPU's idle time
while reading when the GPU is observed, the reading time itself when it is not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steptrace.hypotheses.finding import Finding, finding
from steptrace.hypotheses.rules.common import evidence, idle_causes, median, step_share, where
from steptrace.units import pct

if TYPE_CHECKING:
    from steptrace.analysis.measure import StepResult
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds


def input_pipeline(case: Case, limits: Thresholds) -> list[Finding]:
    analysis = case.analysis
    reads = [s.reading for s in analysis.steps if s.reading is not None]
    shares = [s.reading.ms / s.wall_ms for s in analysis.steps if s.reading and s.wall_ms]
    if not shares or median(shares) < limits.input_share:
        return []
    read_ms = median(r.ms for r in reads)
    idles = [r.gpu_idle_ms for r in reads if r.gpu_idle_ms is not None]
    idle_share = median(idles) / read_ms if idles and read_ms else None
    if analysis.trace.gpu_observed and (idle_share is None or idle_share < limits.input_gpu_idle):
        return []
    labels = sorted({name for r in reads for name in r.labels})
    share = median(shares)
    explained = step_share(_explained(step) for step in analysis.steps if step.reading)
    gpu_text = (
        f"and the GPU sat idle for {pct(idle_share)} of that time"
        if idle_share is not None
        else "(GPU not observed: whether it waits cannot be told from this trace)"
    )
    return [
        finding(
            "input-pipeline",
            explained,
            observation=(
                f"Reading the batch (labels read as data_read: {', '.join(labels)}) takes "
                f"{pct(share)} of the step (median over {len(shares)} steps), {gpu_text}."
            ),
            evidence=evidence(
                where(analysis),
                ("read_ms_median", read_ms, "ms"),
                ("share_of_step_median", share, "share"),
                ("gpu_idle_share_while_reading", idle_share, "share"),
                ("labels", tuple(labels), "names"),
            ),
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


def _explained(step: StepResult) -> tuple[StepResult, float]:
    """The GPU's idle time while reading, or the reading time when the GPU is not observed."""
    causes = idle_causes(step)
    reading = step.reading.ms if step.reading else 0.0
    return step, causes.reading if causes is not None else reading
