"""What the verdict says of the roofline on a GPU-bound step: compute- or memory-bound,
claimed only when operators of that bound hold ``CLAIM`` (half) of the operators' GPU time
(``analysis.roofline_coverage``), and how much of it the roofline places."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from steptrace.units import pct

if TYPE_CHECKING:
    from steptrace.analysis.measure import TraceAnalysis

GpuBound = Literal["compute", "memory"]
CLAIM = 0.5  # of the operators' GPU time: a roofline bound said of the step


def gpu_bound_of(analysis: TraceAnalysis) -> GpuBound | None:
    """Compute- or memory-bound: the roofline bound of a majority (``CLAIM``) of the
    operators' GPU time; None: no bound holds that much (or nothing is on the roofline)."""
    covered = analysis.roofline_coverage
    if covered is None:
        return None
    for bound, ms in (("compute", covered.compute_ms), ("memory", covered.memory_ms)):
        if ms >= CLAIM * covered.operators_ms and ms > 0:
            return bound  # type: ignore[return-value]
    return None


def roofline_words(analysis: TraceAnalysis, bound: GpuBound | None) -> str:
    covered = analysis.roofline_coverage
    if covered is None:
        if analysis.roofline:  # rows without GPU time
            return "; compute- or memory-bound is not known here."
        return (
            "; compute- or memory-bound is not known here (record_shapes=True gives the "
            "roofline per operator)."
        )
    on = f"the roofline places {pct(covered.share)} of the operators' GPU time"
    if bound is None and covered.share == 0 and covered.modelled_ms > 0:
        return (
            "; compute- or memory-bound is not known here: the device's peaks are not known "
            "(give them with --peaks FILE)."
        )
    if bound is None:
        largest = max(covered.compute_ms, covered.memory_ms)
        kind = "compute" if covered.compute_ms >= covered.memory_ms else "memory"
        missing = (
            f"; the largest without a cost model: {', '.join(covered.unmodelled)}"
            if covered.unmodelled
            else ""
        )
        return (
            f"; compute- or memory-bound is not claimed: {on}, and no bound holds "
            f"{pct(CLAIM)} of it ({kind}-bound operators {pct(largest / covered.operators_ms)}"
            f"{missing})."
        )
    mine = covered.compute_ms if bound == "compute" else covered.memory_ms
    return (
        f", mostly in {bound}-bound operators ({pct(mine / covered.operators_ms)} of the "
        f"operators' GPU time; the roofline places {pct(covered.share)} of it)."
    )
