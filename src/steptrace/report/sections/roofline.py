"""The roofline as a section: the peaks used, the chart (HTML) and the table (every format).

The rows are ``analysis.roofline`` (``steptrace.analysis.efficiency.roofline``), already ordered by
time and cut to the report's top N; nothing is computed here but words and the chart's
points, which are the table's rows.
"""

from __future__ import annotations

from steptrace import units
from steptrace.analysis.efficiency.hardware import DevicePeaks
from steptrace.analysis.efficiency.roofline import RooflineCoverage, RooflineRow
from steptrace.report.document import (
    Cell,
    Column,
    Paragraph,
    Roof,
    RooflineChart,
    RooflinePoint,
    Section,
    Table,
)
from steptrace.report.model import Report

HEADING = "Roofline: each operator on its recorded shapes against the limits of the device"
MATRIX = frozenset({"GEMM", "convolution", "attention"})
NAME_WIDTH, SHAPES_WIDTH = 44, 40
NONE = "—"


def roofline(report: Report) -> Section:
    analysis = report.analysis
    rows = analysis.roofline
    if not rows:
        return Section("roofline", HEADING, (Paragraph(_without_shapes()),))
    on_gpu = analysis.trace.gpu_observed
    table = Table(
        (
            Column("operator", "name"),
            Column("input shapes", "text"),
            Column("calls", "count"),
            Column("GPU ms" if on_gpu else "CPU ms", "ms"),
            Column("kind", "text"),
            Column("precision", "text"),
            Column("TFLOP/s", "number"),
            Column("TB/s", "number"),
            Column("FLOP/B", "number"),
            Column("bound", "text"),
            Column("of roofline", "share"),
        ),
        tuple(_row(r) for r in rows),
        caption=_caption(on_gpu),
    )
    peaks = analysis.roofline_peaks
    roofs = _roofs(rows)
    chart = RooflineChart(
        tuple(_point(r, on_gpu) for r in rows if r.achieved_tflops is not None),
        roofs,
        peaks.memory_tbps if peaks else None,
        table,
        caption=(
            "Each point is a row of the table (hover for it); its area is its time. "
            + (
                "The slanted line is the memory roof, the flat ones the compute roofs of "
                "the precisions used. "
                if roofs
                else "No roof is drawn: the peaks are not known. "
            )
            + "Rows of no FLOPs (copies, fills) are in the table only."
        ),
    )
    said = (_coverage(analysis.roofline_coverage), _above(rows), _peaks(peaks, on_gpu))
    return Section("roofline", HEADING, (*(Paragraph(p) for p in said if p), chart))


def _coverage(covered: RooflineCoverage | None) -> str:
    """What share of the operators' GPU time the roofline places: what a bound claims."""
    if covered is None:
        return ""
    total = covered.operators_ms
    others = covered.unmodelled_count - len(covered.unmodelled)
    missing = (
        f" Without a cost model (shown, not costed): {', '.join(covered.unmodelled)}"
        + (f" and {others} other(s)" if others > 0 else "")
        + "."
        if covered.unmodelled
        else ""
    )
    placed = (
        f"the roofline places {units.pct(covered.share)} (compute-bound "
        f"{units.pct(covered.compute_ms / total)}, memory-bound "
        f"{units.pct(covered.memory_ms / total)})"
        if covered.share > 0 or covered.modelled_ms == 0
        else "none is placed on the roofline: the device's peaks are not known"
    )
    return (
        f"Coverage: cost models cover {units.pct(covered.modelled_ms / total)} of the "
        f"operators' GPU time ({units.ms(total)} ms over the whole trace); {placed}. A "
        "bound is said of the step only when operators of that bound hold half of it." + missing
    )


def _above(rows: tuple[RooflineRow, ...]) -> str:
    """Rows above their roofline did fewer FLOPs than the formula counts."""
    above = [r for r in rows if (r.roofline_pct or 0.0) > 100]
    if not above:
        return ""
    return (
        f"{len(above)} row(s) above 100% of their roofline: their kernels did fewer FLOPs "
        "than the formula counts (cuDNN's Winograd and FFT convolutions multiply less "
        "than a direct convolution; a sparse or cached kernel does less work), or the "
        "device's peaks are not the ones in use."
    )


def _row(r: RooflineRow) -> tuple[Cell, ...]:
    pct = r.roofline_pct / 100 if r.roofline_pct is not None else None
    modelled = r.model is not None
    return (
        units.short(r.operator, NAME_WIDTH),
        units.short(r.input_shapes or "not recorded", SHAPES_WIDTH),
        r.calls,
        r.gpu_ms if r.gpu_ms is not None else r.cpu_ms,
        r.model or "no model",
        r.precision or NONE,
        _or_none(r.achieved_tflops),
        _or_none(r.achieved_tbps),
        _or_none(r.intensity),
        r.bound or NONE,
        pct if pct is not None else (NONE if modelled else "no model"),
    )


def _or_none(value: float | None) -> Cell:
    return value if value is not None else NONE


def _point(r: RooflineRow, on_gpu: bool) -> RooflinePoint:
    ms = r.gpu_ms if r.gpu_ms is not None else r.cpu_ms
    label = f"{r.operator} {r.input_shapes or ''}".strip()
    facts = [
        f"{units.ms(ms)} ms {'on the GPU' if on_gpu else 'on the CPU'}",
        f"{r.achieved_tflops or 0:.3g} TFLOP/s",
        f"{r.achieved_tbps or 0:.3g} TB/s",
        f"{r.intensity:.3g} FLOP/B" if r.intensity is not None else "",
        f"{r.bound}-bound" if r.bound else "",
        f"{r.roofline_pct:.1f}% of the roofline" if r.roofline_pct is not None else "",
    ]
    tip = f"{label} ({r.precision or 'precision not known'}, ×{r.calls}): " + ", ".join(
        f for f in facts if f
    )
    return RooflinePoint(
        units.short(label, 60),
        r.intensity or 0.0,
        r.achieved_tflops or 0.0,
        ms,
        r.model or "no model",
        tip,
    )


def _roofs(rows: tuple[RooflineRow, ...]) -> tuple[Roof, ...]:
    """One flat roof per precision and unit (matrix or vector) the rows are held to."""
    found: dict[str, float] = {}
    for r in rows:
        if r.peak_tflops is None or r.precision is None:
            continue
        unit = "matrix" if r.model in MATRIX else "vector"
        found.setdefault(f"{r.precision} {unit}" if unit == "matrix" else unit, r.peak_tflops)
    return tuple(
        Roof(label, tflops) for label, tflops in sorted(found.items(), key=lambda x: -x[1])
    )


def _peaks(peaks: DevicePeaks | None, on_gpu: bool) -> str:
    if peaks is None and not on_gpu:
        return (
            "Roofs: the CPU's were not measured (a capture with record_shapes=True measures "
            "them), so no percentage of the roofline is given; give them with --peaks FILE "
            "(docs/analyze.md)."
        )
    if peaks is None:
        return (
            "Roofs: this device is not in the table of peaks, so no percentage of the "
            "roofline is given; give its peaks with --peaks FILE (docs/analyze.md)."
        )
    compute = ", ".join(f"{k} {v:g}" for k, v in sorted(peaks.matrix_tflops.items()))
    vector = f"; vector {peaks.vector_tflops:g}" if peaks.vector_tflops else ""
    memory = f"{peaks.memory_tbps:g} TB/s" if peaks.memory_tbps else "memory bandwidth not known"
    return (
        f"Roofs: {peaks.name} ({peaks.source}): {memory}; matrix TFLOP/s {compute}{vector}. "
        "Datasheet peaks are upper bounds that kernels rarely reach; measured ones "
        "(--peaks FILE) read truer."
    )


def _caption(on_gpu: bool) -> str:
    time = (
        "GPU ms: the union of the GPU work the calls launched, their children's included"
        if on_gpu
        else "CPU ms: the calls' summed time on the CPU (the GPU was not observed)"
    )
    return (
        "Per operator and recorded input shapes, types and scalars, over the whole trace. "
        f"{time}. FLOPs and bytes come from the shapes (TraceLens's formulas; one FLOP per "
        "element for elementwise work); TFLOP/s and TB/s are calls × FLOPs (bytes) / time; "
        "FLOP/B is the intensity; bound: the lower roof at that intensity; of roofline: "
        "achieved / min(peak, intensity × bandwidth). 'no model': the work is shown, not "
        "costed."
    )


def _without_shapes() -> str:
    return (
        "No operator with recorded input shapes and a cost model: capture with "
        "record_shapes=True to see how close each operator runs to the device's limits."
    )
