"""Rules ``low-efficiency`` and ``fusion``: how close the GPU's work runs to the hardware.

Both read the roofline (``analysis.roofline``: FLOPs and bytes per operator from the
recorded shapes, held to the device's peaks) and the GPU's time by kind of work, and both
need the GPU: on a CPU trace its figures are not observed and neither rule fires.

- ``low-efficiency``: matrix work (GEMM, convolution, attention) that takes a real part of
  the step runs at a small share of its roofline. Elementwise and reduction work is
  ``fusion``'s: it is bound by memory, and fewer passes over it is what helps.
- ``fusion``: the GPU is busy most of the step, and most of that busy time is elementwise
  and reduction kernels of low intensity (under the ridge point: bound by memory), which a
  compiler can fuse into fewer kernels that read and write memory fewer times.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steptrace.hypotheses.finding import Finding, finding
from steptrace.hypotheses.rules.common import evidence, median, step_share, trace_share, where
from steptrace.units import pct

if TYPE_CHECKING:
    from steptrace.analysis.efficiency.roofline import RooflineRow
    from steptrace.analysis.measure import StepResult, TraceAnalysis
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds

MATRIX_WORK = frozenset({"GEMM", "convolution", "attention"})
VECTOR_WORK = frozenset({"elementwise", "reduction", "normalization"})
VECTOR_KINDS = ("elementwise", "reduction")  # the kernel kinds fusion reads
NAMED = 3  # operators named in a finding


def low_efficiency(case: Case, limits: Thresholds) -> list[Finding]:
    """Matrix work that takes a real part of the step runs far under its roofline."""
    analysis = case.analysis
    if not analysis.trace.gpu_observed:
        return []
    low = sorted(
        (r for r in _held(analysis.roofline, MATRIX_WORK) if r.roofline_pct is not None),
        key=lambda r: -(r.gpu_ms or 0.0),
    )
    low = [r for r in low if (r.roofline_pct or 0.0) < limits.low_efficiency_pct]
    ms = sum(r.gpu_ms or 0.0 for r in low)
    of_step = min(trace_share(ms, analysis), median(_busy_share(s) for s in analysis.steps))
    if not low or of_step < limits.low_efficiency_share:
        return []
    top = low[0]
    names = tuple(f"{r.operator} {r.input_shapes}" for r in low[:NAMED])
    return [
        finding(
            "low-efficiency",
            of_step,
            observation=(
                f"{len(low)} matrix operator(s) on their recorded shapes run under "
                f"{limits.low_efficiency_pct:.0f}% of their roofline and take {ms:.3f} ms of "
                f"GPU time ({pct(of_step)} of the step); the largest, {top.operator} on "
                f"{top.input_shapes}, reaches {top.achieved_tflops or 0.0:.3g} TFLOP/s, "
                f"{top.roofline_pct or 0.0:.1f}% of what its roofs allow ({top.bound}-bound)."
            ),
            evidence=evidence(
                where(analysis),
                ("operator", top.operator, "text"),
                ("input_shapes", top.input_shapes, "text"),
                ("roofline_share", (top.roofline_pct or 0.0) / 100, "share"),
                ("achieved_tflops", top.achieved_tflops, "tflops"),
                ("peak_tflops", top.peak_tflops, "tflops"),
                ("bound", top.bound, "text"),
                ("gpu_ms", ms, "ms"),
                ("operators", names, "names"),
            ),
            hypothesis=(
                f"The kernels chosen for these shapes leave most of the hardware idle; for "
                f"the largest, {_what_helps(top)}."
            ),
            next_check=(
                f"Time {top.operator} alone on its recorded shapes and dtypes (steptrace "
                "investigate does: operator-alone) and read its TFLOP/s; then try the change "
                "on the same inputs (another kernel or backend, a layout, a fused "
                "implementation) and check the outputs agree."
            ),
            caveats=(
                f"The peaks are {_peaks_source(analysis)}: kernels rarely reach a "
                "datasheet's, so measured peaks (--peaks FILE) give a truer share.",
                "FLOPs come from the shapes (causal attention counted as half the square).",
            ),
        )
    ]


def _what_helps(row: RooflineRow) -> str:
    """What usually helps such an operator, by its kind of work and its bound."""
    if row.model == "attention":
        return (
            "another attention kernel may suit this GPU and head size better (FlashAttention-3 "
            "or cuDNN attention on Hopper and later; torch.nn.attention.sdpa_kernel chooses "
            "the backend), and longer sequences per call raise the intensity"
        )
    if row.bound == "memory":
        return (
            "its shapes are thin, so it moves many bytes per FLOP: more rows per call (a "
            "larger batch, requests batched together) or a fused implementation that keeps "
            "intermediates on chip helps"
        )
    return (
        "bound by compute, a better kernel helps: another backend, shapes that tile evenly "
        "(multiples of 64 or 128), a lower precision with its quality checked"
    )


def _peaks_source(analysis: TraceAnalysis) -> str:
    peaks = analysis.roofline_peaks
    return f"{peaks.name}'s ({peaks.source})" if peaks else "not known"


def fusion(case: Case, limits: Thresholds) -> list[Finding]:
    """A GPU-bound step whose busy time is mostly elementwise and reduction kernels."""
    analysis = case.analysis
    summary = analysis.summary.gpu_categories
    steps = [s for s in analysis.steps if s.gpu is not None]
    if not analysis.trace.gpu_observed or summary is None or not steps:
        return []
    busy = median(_busy_share(s) for s in steps)
    share = sum(c.share_of_busy or 0.0 for c in summary if c.category in VECTOR_KINDS)
    if busy < limits.fusion_gpu_busy or share < limits.fusion_share:
        return []
    rows = _held(analysis.roofline, VECTOR_WORK)
    row_ms = sum(r.gpu_ms or 0.0 for r in rows)
    memory_ms = sum(r.gpu_ms or 0.0 for r in rows if r.bound == "memory")
    if row_ms > 0 and memory_ms < 0.5 * row_ms:
        return []  # the vector work is not bound by memory: fusing would not save much
    of_step = step_share((s, _vector_ms(s)) for s in steps)
    largest = tuple(f"{r.operator} {r.input_shapes}" for r in rows[:NAMED])
    return [
        finding(
            "fusion",
            of_step,
            observation=(
                f"The GPU is busy {pct(busy)} of the step, and elementwise and reduction "
                f"kernels take {pct(share)} of that busy time ({pct(of_step)} of the step)"
                + (
                    f"; {pct(memory_ms / row_ms)} of their operators' time is bound by memory."
                    if row_ms > 0
                    else "."
                )
            ),
            evidence=evidence(
                where(analysis, steps),
                ("gpu_busy_share", busy, "share"),
                ("elementwise_reduction_share", share, "share"),
                ("memory_bound_share", memory_ms / row_ms if row_ms > 0 else None, "share"),
                ("operators", largest or None, "names"),
            ),
            hypothesis=(
                "Many small memory-bound kernels read and write the same tensors one after "
                "another: fused into fewer kernels, they would move fewer bytes."
            ),
            next_check=(
                "Compare the model as it runs with torch.compile(model) on the same batches, "
                "compile time apart, outside the profiler, and check the outputs agree "
                "(steptrace investigate does: compiled)."
            ),
            caveats=(
                (
                    "Shapes were not recorded: the kernels' intensity is not known, only their "
                    "kinds (elementwise and reduction kernels are nearly always memory-bound).",
                )
                if row_ms == 0
                else ()
            )
            + ("Kernel kinds come from the kernels' names (docs/analyze.md).",),
        )
    ]


def _held(rows: tuple[RooflineRow, ...], kinds: frozenset[str]) -> list[RooflineRow]:
    return [r for r in rows if r.model in kinds and r.gpu_ms]


def _busy_share(step: StepResult) -> float:
    return step.gpu.utilization if step.gpu is not None else 0.0


def _vector_ms(step: StepResult) -> float:
    if step.gpu is None:
        return 0.0
    return sum(c.busy_ms for c in step.gpu.categories if c.category in VECTOR_KINDS)
