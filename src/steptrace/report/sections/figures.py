"""The figures of a report as sections: steps, labels, the GPU, operators, kernels, copies.

Each section holds its table with raw values and typed columns, and the chart that shows
the same numbers; nothing here formats a number (``cells`` does, for every renderer).
"""

from __future__ import annotations

from collections.abc import Sequence

from steptrace import units
from steptrace.analysis.measure import StepResult
from steptrace.analysis.time.copies import CopyPattern
from steptrace.analysis.time.parts import part_of
from steptrace.report.document import Bars, Cell, Column, Paragraph, Section, Series, Stacked, Table
from steptrace.report.formats.cells import NOT_OBSERVED, spread
from steptrace.report.model import Report
from steptrace.report.sections.kernel_launch import (
    LAUNCH_COLUMNS,
    LAUNCH_NOT_RECORDED,
    graph_note,
    launch_caption,
    launch_shape,
)

# Names longer than this are cut in tables (the JSON keeps them whole): kernels are longer.
NAME_WIDTH, KERNEL_WIDTH = 60, 90


# -- steps and labels -----------------------------------------------------------------------
def steps(report: Report) -> Section:
    analysis = report.analysis
    summary = analysis.summary
    first = summary.first_step
    highlight = 0 if first is not None and first.differs else None
    chart = Bars(
        tuple(s.name for s in analysis.steps),
        tuple(s.wall_ms for s in analysis.steps),
        "ms",
        highlight,
        caption="The first step, in orange, is shown apart." if highlight == 0 else "",
    )
    gpu_busy = summary.gpu_busy_ms
    any_partial = any(s.partial for s in analysis.steps)
    table = Table(
        (
            Column("step", "name"),
            Column("wall ms", "ms"),
            Column("CPU in operators ms", "ms"),
            Column("outside labels ms", "ms"),
            Column("GPU busy ms", "ms"),
            Column("GPU idle ms", "ms"),
        ),
        tuple(
            (
                s.said_name,
                s.wall_ms,
                s.cpu.busy_ms,
                s.unlabeled_ms if s.unlabeled_ms is not None else "—",
                s.gpu.busy_ms if s.gpu else None,
                s.gpu.idle_ms if s.gpu else None,
            )
            for s in analysis.steps
        ),
        caption=(
            f"{summary.count} step(s)"
            + (
                f", {first.name} shown apart (it differs) and left out of these figures"
                if first is not None and highlight == 0
                else ""
            )
            + f": wall {spread(summary.wall_ms, 'ms')} ms (median [min–max]); GPU busy "
            + (f"{spread(gpu_busy, 'ms')} ms" if gpu_busy is not None else NOT_OBSERVED)
            + ("; partial steps are listed, not counted" if any_partial else "")
        ),
    )
    rate = Paragraph(throughput_line(report))
    return Section(
        "steps",
        "Steps (wall time on the timeline; GPU busy = union of kernels, copies and sets)",
        (chart, table, rate),
    )


def throughput_line(report: Report) -> str:
    """Samples/s (and tokens/s) next to ms/step, or why they are not known."""
    rate = report.throughput
    if rate is None:
        return "Throughput: not known (the scenario states no batch size)."
    line = (
        f"Throughput: {rate.samples_per_s:,.1f} samples/s at the median "
        f"{units.ms(rate.ms_per_step)} ms/step (batch {rate.batch_size}"
    )
    if rate.tokens_per_s is None:
        return line + "; no sequence length stated, so no tokens/s)."
    return line + f" × {rate.sequence_length} tokens): {rate.tokens_per_s:,.0f} tokens/s."


def _every_label(steps: Sequence[StepResult]) -> dict[str, None]:
    """Every label of every step (the first too, when shown apart), in order of appearance."""
    return dict.fromkeys(p.name for s in steps for p in s.phases)


def labels(report: Report) -> Section:
    analysis = report.analysis
    first = analysis.summary.first_step
    apart = f", {first.name} shown apart" if first is not None and first.differs else ""
    heading = f"Labels per step (exclusive of nested labels; median [min–max] over steps{apart})"
    phases = analysis.summary.phases
    if not _every_label(analysis.steps):
        return Section(
            "labels", heading, (Paragraph("No labels (record_function) in this trace."),)
        )
    chart = Stacked(
        tuple(s.name for s in analysis.steps),
        (*_label_series(analysis.steps, list(_every_label(analysis.steps))),),
        tuple(s.wall_ms for s in analysis.steps),
        "ms",
        caption=(
            "Each bar is one step; dark grey is the step's thread outside every label, "
            "light grey the rest of the step (labels on other threads, or not attributed)."
        ),
    )
    table = Table(
        (
            Column("label", "name"),
            Column("read as", "text"),
            Column("steps", "count"),
            Column("exclusive ms", "ms"),
            Column("share of step", "share"),
            Column("GPU idle while it ran ms", "ms"),
        ),
        tuple(
            (
                units.short(p.name, NAME_WIDTH),
                part_of(p.name) or "—",
                p.steps,
                p.exclusive_ms,
                p.share,
                p.gpu_idle_ms,
            )
            for p in phases
        ),
        caption=(
            "Each label owns the time in which it is the innermost label on its thread: "
            "nested labels are never counted twice. 'Read as': the part of the scenario's "
            "step the findings take the label for (its name, or a usual one: "
            "docs/findings.md)."
        ),
    )
    if not phases:  # labels only in the first step, shown apart
        only = f"Only {first.name}, shown apart, has labels: its bar above." if first else ""
        return Section("labels", heading, (chart, Paragraph(only)))
    return Section("labels", heading, (chart, table))


def _label_series(steps: Sequence[StepResult], names: list[str]) -> list[Series]:
    series = [
        Series(
            name,
            tuple(sum(p.exclusive_ms for p in s.phases if p.name == name) for s in steps),
        )
        for name in names
    ]
    outside = tuple(s.unlabeled_ms or 0.0 for s in steps)
    series.append(Series("outside labels", outside, muted=True))
    return series


# -- the GPU ----------------------------------------------------------------------------------
def gpu(report: Report) -> Section:
    analysis = report.analysis
    heading = "GPU per step"
    if not analysis.trace.gpu_observed:
        return Section("gpu", heading, (Paragraph(f"GPU: {NOT_OBSERVED} (see above)."),))
    observed = [s for s in analysis.steps if s.gpu is not None]
    chart = Stacked(
        tuple(s.name for s in observed),
        (
            Series("busy", tuple(s.gpu.busy_ms for s in observed if s.gpu)),
            Series("idle", tuple(s.gpu.idle_ms for s in observed if s.gpu)),
        ),
        tuple(s.wall_ms for s in observed),
        "ms",
    )
    table = Table(
        (
            Column("step", "name"),
            Column("GPU busy", "share"),
            Column("kernels launched", "count"),
            Column("launch delay µs (median)", "us"),
            Column("idle waiting on the host ms", "ms"),
            Column("idle after a sync ms", "ms"),
            Column("sync calls", "text"),
            Column("communication ms", "ms"),
            Column("overlapping compute ms", "ms"),
        ),
        tuple(_gpu_row(s) for s in observed),
        caption=(
            "Busy, idle and communication are measured on the step's window: the union of "
            "kernels, copies and sets on all streams between its start and its end, "
            "whichever step launched them. The idle columns are the timeline's gaps by "
            "cause (waiting on the host: the next launch came after the GPU went idle; "
            "after a sync: from a blocking call's end, at most as long as it blocked the host). "
            "Kernels, launch delays and sync "
            "calls are those the step launched, which may run after it ends."
        ),
    )
    return Section("gpu", heading, (chart, table))


def _gpu_row(step: StepResult) -> tuple[Cell, ...]:
    g = step.gpu
    assert g is not None
    delay = g.launch_delay_us.median if g.launch_delay_us else None
    syncs = ", ".join(f"{s.name} ×{s.count}" for s in g.sync_calls) or "none"
    return (
        step.name,
        g.utilization,
        g.kernels.count,
        delay,
        g.idle_waiting_on_host_ms,
        g.idle_after_sync_ms,
        syncs,
        g.communication.busy_ms,
        g.communication.overlap_with_compute_ms,
    )


# -- operators, kernels, copies ---------------------------------------------------------------
def _scope(report: Report, totals: bool) -> tuple[str, str]:
    """The columns' suffix and the caption's sentence saying what the figures sum."""
    count = report.analysis.summary.count
    if totals:
        return "(whole trace)", (
            "Totals over the whole trace, every call inside the steps or not "
            "(without --totals: per step)."
        )
    steps = f"{count} step" + ("s" if count != 1 else "")
    return "per step", (
        f"Per step: the mean over the {steps} (the calls that started in a step, summed, "
        f"divided by {count}), listed in the order of their totals over the whole trace; "
        "--totals gives those totals."
    )


def operators(report: Report, totals: bool = False) -> Section:
    analysis = report.analysis
    listed = f"top {len(analysis.operators)} of {analysis.operators_total}"
    suffix, scope = _scope(report, totals)
    table = Table(
        (
            Column("operator", "name"),
            Column(f"calls {suffix}", "count"),
            Column(f"self ms {suffix}", "ms"),
            Column(f"inclusive ms {suffix}", "ms"),
            Column(f"GPU ms launched {suffix}", "ms"),
            Column("input shapes", "text"),
        ),
        tuple(
            (
                units.short(o.name, NAME_WIDTH),
                o.calls if totals else o.calls_per_step,
                o.self_ms if totals else o.self_ms_per_step,
                o.inclusive_ms if totals else o.inclusive_ms_per_step,
                o.gpu_ms if totals else o.gpu_ms_per_step,
                units.short(o.input_shapes or "not recorded", NAME_WIDTH),
            )
            for o in analysis.operators
        ),
        caption=(
            f"{scope} Self time excludes nested operators; inclusive time counts a "
            "recursive call once."
        ),
    )
    shown = "totals over the whole trace" if totals else "per step"
    heading = f"CPU operators ({listed} by self time): {shown}"
    return Section("operators", heading, (table, *graph_note(analysis.graph_work_without_operator)))


def kernels(report: Report, totals: bool = False) -> Section:
    analysis = report.analysis
    if not analysis.trace.gpu_observed:
        return Section("kernels", "Kernels", (Paragraph(f"Kernels: {NOT_OBSERVED}."),))
    listed = f"top {len(analysis.kernels)} of {analysis.kernels_total}"
    suffix, scope = _scope(report, totals)
    shown = "totals over the whole trace" if totals else "per step"
    heading = f"Kernels ({listed} by time): {shown}"
    shaped = any(k.blocks_per_sm is not None for k in analysis.kernels)
    table = Table(
        (
            Column("kernel", "name"),
            Column(f"calls {suffix}", "count"),
            Column(f"ms {suffix}", "ms"),
            Column("mean µs per call", "us"),
            Column("min µs", "us"),
            Column("max µs", "us"),
            *(LAUNCH_COLUMNS if shaped else ()),
        ),
        tuple(
            (
                units.short(k.name, KERNEL_WIDTH),
                k.calls if totals else k.calls_per_step,
                k.total_ms if totals else k.total_ms_per_step,
                k.mean_us,
                k.min_us,
                k.max_us,
                *(launch_shape(k) if shaped else ()),
            )
            for k in analysis.kernels
        ),
        caption=(
            f"{scope.replace('started', 'were launched')} Mean, min and max are per call, "
            "exact over every call of the kernel in the trace. "
            + (launch_caption(analysis.kernels) if shaped else LAUNCH_NOT_RECORDED)
        ),
    )
    return Section("kernels", heading, (table,))


def copies(report: Report) -> Section:
    analysis = report.analysis
    heading = "Copies and sets"
    if not analysis.trace.gpu_observed:
        return Section("copies", heading, (Paragraph(f"Copies: {NOT_OBSERVED}."),))
    per_step = _copies_per_step(analysis.steps)
    if not per_step.rows:
        return Section("copies", heading, (Paragraph("No copy and no set in any step."),))
    return Section("copies", heading, (per_step, _copy_patterns(analysis.copies)))


def _copies_per_step(steps: Sequence[StepResult]) -> Table:
    rows: list[tuple[Cell, ...]] = []
    for step in steps:
        if step.gpu is None:
            continue
        for c in step.gpu.memcpy:
            size = c.bytes if c.bytes is not None else "bytes not recorded"
            pageable = c.pageable_bytes if c.pageable_bytes is not None else "—"
            rows.append(
                (
                    step.name,
                    f"Memcpy {c.direction}",
                    c.count,
                    c.busy_ms,
                    size,
                    c.pageable,
                    pageable,
                    c.pinned,
                )
            )
        if step.gpu.memset.count:
            s = step.gpu.memset
            rows.append((step.name, "Memset", s.count, s.busy_ms, "—", "—", "—", "—"))
    return Table(
        (
            Column("step", "name"),
            Column("copy", "text"),
            Column("count", "count"),
            Column("busy ms", "ms"),
            Column("bytes", "bytes"),
            Column("pageable", "count"),
            Column("pageable bytes", "bytes"),
            Column("pinned", "count"),
        ),
        tuple(rows),
        caption="Per step and direction; busy is the union of the copies' intervals.",
    )


def _copy_patterns(patterns: Sequence[CopyPattern]) -> Table:
    return Table(
        (
            Column("direction", "text"),
            Column("bytes", "bytes"),
            Column("operator", "name"),
            Column("label", "text"),
            Column("host memory", "text"),
            Column("steps", "count"),
            Column("per step", "text"),
            Column("total ms", "ms"),
        ),
        tuple(
            (
                p.direction,
                p.bytes if p.bytes is not None else "bytes not recorded",
                units.short(p.operator, NAME_WIDTH),
                units.short(p.label, NAME_WIDTH) if p.label else "outside every label",
                p.host_memory or "—",
                p.steps,
                ", ".join(map(str, p.per_step)),
                p.total_ms,
            )
            for p in patterns
        ),
        caption=(
            "Copies grouped by direction, size, launching operator and label: one that "
            "recurs in every step with the same size may be a constant rebuilt each step."
        ),
    )
