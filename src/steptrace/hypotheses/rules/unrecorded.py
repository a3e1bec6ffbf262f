"""Rule ``unrecorded-time``: most of the step passes with no work recorded at all.

Its figure is each step's ``cpu.unrecorded_ms``: time in which no operator, Python
function, runtime or driver call runs on any thread and the GPU (when observed) runs
nothing, for 100 µs or more (``TraceContext.silences``), less what lies in the labels
read as reading the batch (a loader's wait records nothing either: ``input-pipeline``
explains it). A profiler that records operators cannot say what the host did then; the
labels around that time (``Phase.unrecorded_ms``) say where it lies. It fires on the GPU
and on the CPU alike: the trace is silent either way; on a GPU trace from a lower share
(``unrecorded_gpu_share``), since the GPU idles through that time too (a silence has no
GPU work), and the verdict names it as the host's cause when it is the largest.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from steptrace.hypotheses.finding import Finding, finding
from steptrace.hypotheses.rules.common import evidence, median, step_share, where
from steptrace.units import pct

if TYPE_CHECKING:
    from steptrace.analysis.measure import StepResult
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds

LABELS = 3  # labels named in the observation, by their unrecorded time


def unrecorded_time(case: Case, limits: Thresholds) -> list[Finding]:
    analysis = case.analysis
    timed = [(s, t) for s in analysis.steps if (t := outside_reading(s)) is not None]
    share = step_share(timed)
    floor = limits.unrecorded_gpu_share if analysis.trace.gpu_observed else limits.unrecorded_share
    if not timed or share < floor:
        return []
    ms = median(t for _, t in timed)
    labels = _labels(s for s, _ in timed)
    inside = "; ".join(f"{name} {t:.3f} ms" for name, t in labels[:LABELS])
    where_said = (
        f"Labels around it, by their own time in it (median per step): {inside}."
        if labels
        else "No label covers it."
    )
    gpu = "the GPU running nothing" if analysis.trace.gpu_observed else "the GPU not observed"
    reads = any(p.part == "data_read" and p.unrecorded_ms for s, _ in timed for p in s.phases)
    apart = "; reading the batch apart (input-pipeline's)" if reads else ""
    return [
        finding(
            "unrecorded-time",
            share,
            observation=(
                f"For {pct(share)} of the step ({ms:.3f} ms, median over {_steps(len(timed))}) "
                f"the trace records no work: no operator, Python function or runtime call "
                f"on any thread, {gpu}{apart}. {where_said}"
            ),
            evidence=evidence(
                where(analysis),
                ("unrecorded_ms_median", ms, "ms"),
                ("share_of_step_median", share, "share"),
                ("labels", tuple(name for name, _ in labels), "names"),
            ),
            hypothesis=(
                "The host spends this time in code the profiler does not record as operators "
                "(Python, compilation such as torch.compile's or Triton's on a first call, "
                "I/O) or waiting outside torch (a sleep, a lock, a queue, another process)."
            ),
            next_check=(
                "Record the same steps after a few warm-up steps (one-time compilation then "
                "falls outside the window) with with_stack=True, or under a sampling profiler "
                "(py-spy); label the step's parts with record_function; then "
                "time the step outside the profiler to see whether this time is there too."
            ),
            caveats=(
                "A trace filtered after capture (events dropped, as a sampled trace) shows "
                "the dropped events' time here.",
                "A wait for a DataLoader worker outside the labels read as reading the batch "
                "is here too (inside them it is input-pipeline's).",
            ),
        )
    ]


def _steps(count: int) -> str:
    return f"{count} step" if count == 1 else f"{count} steps"


def outside_reading(step: StepResult) -> float | None:
    """The step's unrecorded time less what lies in the labels read as reading the batch
    (a loader's wait is unrecorded too: input-pipeline's)."""
    if step.cpu.unrecorded_ms is None:
        return None
    reading = sum(p.unrecorded_ms or 0.0 for p in step.phases if p.part == "data_read")
    return max(step.cpu.unrecorded_ms - reading, 0.0)


def _labels(steps: Iterable[StepResult]) -> list[tuple[str, float]]:
    """The labels holding unrecorded time, by median per step (0 in a step without it),
    largest first; only those with some."""
    chosen = list(steps)
    names = {p.name for s in chosen for p in s.phases if p.unrecorded_ms and p.part != "data_read"}
    per_label = {
        name: median(
            sum(p.unrecorded_ms or 0.0 for p in s.phases if p.name == name) for s in chosen
        )
        for name in names
    }
    return sorted(((n, t) for n, t in per_label.items() if t > 0), key=lambda x: -x[1])
