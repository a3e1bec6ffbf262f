"""One trace's report as sections, built once for every format.

Reading order: the question, notes on what the trace can and cannot say, step times, the
labels of each step, the GPU, CPU operators, kernels, copies, the findings, any A/B
checks run on them, warnings, and how to open the trace on a timeline. ``findings_only``
keeps the question, the findings and the warnings.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from steptrace import units
from steptrace.analysis.measure import StepResult
from steptrace.hypotheses.finding import Figure, Finding
from steptrace.report.cells import NOT_OBSERVED, number, spread
from steptrace.report.check_sections import ComparisonLike, comparison_section
from steptrace.report.document import (
    Bars,
    Cell,
    Column,
    Document,
    Paragraph,
    Section,
    Series,
    Stacked,
    Table,
)
from steptrace.report.model import Report
from steptrace.scenario import OPTION_COSTS, CaptureFacts, Scenario

NO_QUESTION = (
    "No question was recorded with this trace: state the question and the step's "
    "boundaries before reading it (steptrace.profile_training or steptrace.capture "
    "record them)."
)
GPU_ABSENT = (
    "GPU not observed: the trace holds no kernel, memcpy or memset event, so GPU "
    "collection was absent or failed. Every GPU figure is 'not observed', not zero; "
    "nothing here describes the GPU."
)
CPU_ONLY = (
    "CPU-only trace, as the scenario states (device {device}): no GPU was asked for, so "
    "every GPU figure is 'not observed'."
)
NO_STEPS = (
    "No ProfilerStep markers: the whole trace is analyzed as one window. Use "
    "torch.profiler's schedule and prof.step() to get per-step figures."
)
FINDINGS_TITLE = (
    "Possible readings of this trace, not verdicts. No duration or speed-up is promised; "
    "each ends with the controlled check that can confirm or refute it."
)
PERFETTO = (
    "Open ui.perfetto.dev in a browser and drag the trace file into it (Perfetto reads it "
    "locally; the file is not uploaded): {trace}. chrome://tracing also opens it. Look at "
    "the steps, time ranges, threads and streams named in the findings."
)
_ON = ("1", "true", "True")
# Names longer than this are cut in tables (the JSON keeps them whole): kernels are longer.
NAME_WIDTH, KERNEL_WIDTH = 60, 90


class View(msgspec.Struct, frozen=True, kw_only=True):
    """What to show beside the report itself."""

    findings_only: bool = False
    comparisons: tuple[tuple[str, ComparisonLike], ...] = ()  # A/B checks, titled
    trace_name: str | None = None  # the trace as the reader will find it (default: its path)


def report_document(report: Report, view: View | None = None) -> Document:
    """The sections of one report, in reading order, and the data its JSON form writes."""
    view = view or View()
    checks = tuple(comparison_section(title, c) for title, c in view.comparisons)
    if view.findings_only:
        sections = (question(report), findings(report), *checks, *warnings(report))
        return Document(title(report), sections, findings_data(report))
    sections = (
        question(report),
        notes(report),
        steps(report),
        labels(report),
        gpu(report),
        operators(report),
        kernels(report),
        copies(report),
        findings(report),
        *checks,
        *warnings(report),
        timeline(view.trace_name or report.analysis.trace.path),
    )
    return Document(title(report), sections, report)


def findings_data(report: Report) -> dict[str, object]:
    """What ``--findings-only --format json`` keeps."""
    return {
        "schema": report.schema,
        "scenario": report.scenario,
        "capture": report.capture,
        "trace": report.analysis.trace,
        "findings": report.findings,
        "thresholds": report.thresholds,
        "warnings": report.warnings,
    }


def title(report: Report) -> str:
    trace = report.analysis.trace
    rank = f" (rank {trace.rank} of {trace.world_size})" if trace.rank is not None else ""
    return f"{trace.path}{rank}"


# -- the question --------------------------------------------------------------------------
def question(report: Report) -> Section:
    """The question and the step first: what this trace was captured to answer."""
    scenario = report.scenario
    if scenario is None:
        return Section("question", "Question", (Paragraph(NO_QUESTION, "warning"),))
    lines = [Paragraph(line, "question") for line in scenario_lines(scenario)]
    lines += [Paragraph(line) for line in capture_lines(report.capture)]
    return Section("question", "Question", tuple(lines))


def scenario_lines(scenario: Scenario) -> list[str]:
    step = ", ".join(scenario.parts)
    if scenario.kind == "inference":
        step += "; model loading " + ("inside" if scenario.model_load_in_step else "excluded")
    shapes = ", ".join("×".join(map(str, s)) for s in scenario.input_shapes) or "not stated"
    return [
        f"Question: {scenario.question}",
        f"Step ({scenario.kind}): {step}",
        f"Batch {scenario.batch_size or 'not stated'} · shapes {shapes} · {scenario.dtype} · "
        f"{scenario.mode} mode · compile {scenario.compile} · {scenario.device} · "
        f"data {scenario.data_origin} · unit {scenario.unit}",
        f"Simplified: {scenario.simplifications or 'nothing stated'}",
    ]


def capture_lines(capture: CaptureFacts | None) -> list[str]:
    if capture is None:
        return []
    lines = []
    if capture.model_load_ms is not None:
        lines.append(f"Model load (outside every request): {units.ms(capture.model_load_ms)} ms")
    if capture.cold_start_ms:
        cold = ", ".join(units.ms(v) for v in capture.cold_start_ms)
        lines.append(f"Cold start (first step(s), before the profiler): {cold} ms — kept apart")
    if capture.overhead_ratio is not None:
        lines.append(
            f"Profiler distortion: profiled steps took {capture.overhead_ratio:.2f}× the "
            "same steps without the profiler (medians, synchronized at step boundaries)"
        )
    if capture.flops_per_step:
        mfu = capture.mfu
        lines.append(
            f"FLOPs per step {capture.flops_per_step:,}; achieved "
            f"{capture.achieved_tflops or 0:.3g} TFLOP/s; "
            + (
                f"MFU {100 * mfu:.1f}%"
                if mfu is not None
                else "MFU unknown (no peak for this device)"
            )
        )
    return lines


# -- notes ----------------------------------------------------------------------------------
def notes(report: Report) -> Section:
    """What the trace can say: the GPU observed or not, steps or one window, costly options."""
    analysis = report.analysis
    trace = analysis.trace
    blocks: list[Paragraph] = []
    if trace.gpu_observed:
        blocks.append(Paragraph(f"GPU: {devices(report)}"))
    else:
        absent = gpu_absent_note(report.scenario)
        blocks.append(Paragraph(absent, "warning" if absent == GPU_ABSENT else "plain"))
    if not trace.steps_from_markers:
        blocks.append(Paragraph(NO_STEPS, "warning"))
    first = analysis.summary.first_step
    if first is not None and first.differs and first.ratio is not None:
        blocks.append(
            Paragraph(
                f"First step {first.name} took {units.ms(first.wall_ms)} ms, {first.ratio:.2f}× "
                f"the median of the other steps ({units.ms(first.others_median_ms)} ms): shown "
                "apart, not averaged away.",
                "warning",
            )
        )
    blocks += [
        Paragraph(f"{k} was on: {cost}", "warning")
        for k, cost in OPTION_COSTS.items()
        if trace.options.get(k) in _ON
    ]
    return Section("notes", "What this trace can tell", tuple(blocks))


def devices(report: Report) -> str:
    found = report.analysis.trace.devices
    if not found:
        return "no deviceProperties in the trace"
    named = [f"{d.name} (cc {d.compute_capability})" for d in found]
    return ", ".join(f"{named.count(n)} × {n}" for n in dict.fromkeys(named))


def gpu_absent_note(scenario: Scenario | None) -> str:
    """Why there are no GPU figures: expected (a CPU scenario) or a warning."""
    if scenario is not None and not scenario.device.startswith("cuda"):
        return CPU_ONLY.format(device=scenario.device)
    return GPU_ABSENT


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
    )
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
                s.name,
                s.wall_ms,
                s.cpu.busy_ms,
                s.unlabeled_ms if s.unlabeled_ms is not None else "—",
                s.gpu.busy_ms if s.gpu else None,
                s.gpu.idle_ms if s.gpu else None,
            )
            for s in analysis.steps
        ),
        caption=(
            f"{summary.count} step(s): wall {spread(summary.wall_ms, 'ms')} ms (median [min–max])"
            + ("; the first step, highlighted, is shown apart" if highlight == 0 else "")
        ),
    )
    return Section(
        "steps",
        "Steps (wall time on the timeline; GPU busy = union of kernels, copies and sets)",
        (chart, table),
    )


def labels(report: Report) -> Section:
    analysis = report.analysis
    heading = "Labels per step (exclusive of nested labels; median [min–max] over steps)"
    phases = analysis.summary.phases
    if not phases:
        return Section(
            "labels", heading, (Paragraph("No labels (record_function) in this trace."),)
        )
    chart = Stacked(
        tuple(s.name for s in analysis.steps),
        (*_label_series(analysis.steps, [p.name for p in phases]),),
        tuple(s.wall_ms for s in analysis.steps),
        "ms",
    )
    table = Table(
        (
            Column("label", "name"),
            Column("steps", "count"),
            Column("exclusive ms", "ms"),
            Column("share of step", "share"),
            Column("GPU idle while it ran ms", "ms"),
        ),
        tuple(
            (units.short(p.name, NAME_WIDTH), p.steps, p.exclusive_ms, p.share, p.gpu_idle_ms)
            for p in phases
        ),
        caption=(
            "Each label owns the time in which it is the innermost label on its thread: "
            "nested labels are never counted twice. In the chart, grey is time on other "
            "threads or not attributed."
        ),
    )
    return Section("labels", heading, (chart, table))


def _label_series(steps: Sequence[StepResult], names: list[str]) -> list[Series]:
    series = [
        Series(
            name,
            tuple(sum(p.exclusive_ms for p in s.phases if p.name == name) for s in steps),
        )
        for name in names
    ]
    series.append(Series("outside labels", tuple(s.unlabeled_ms or 0.0 for s in steps)))
    return series


# -- the GPU ----------------------------------------------------------------------------------
def gpu(report: Report) -> Section:
    analysis = report.analysis
    heading = "GPU per step"
    if not analysis.trace.gpu_observed:
        return Section("gpu", heading, (Paragraph(gpu_absent_note(report.scenario)),))
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
            Column("kernels", "count"),
            Column("launch delay µs (median)", "us"),
            Column("idle waiting on the host ms", "ms"),
            Column("idle after a sync ms", "ms"),
            Column("sync calls", "text"),
            Column("communication ms", "ms"),
            Column("overlapping compute ms", "ms"),
        ),
        tuple(_gpu_row(s) for s in observed),
        caption=(
            "Busy is the union of kernels, copies and sets on all streams within the step; "
            "work is counted in the step whose CPU side launched it."
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
def operators(report: Report) -> Section:
    analysis = report.analysis
    listed = f"top {len(analysis.operators)} of {analysis.operators_total}"
    table = Table(
        (
            Column("operator", "name"),
            Column("calls", "count"),
            Column("self ms", "ms"),
            Column("inclusive ms", "ms"),
            Column("GPU ms launched", "ms"),
            Column("input shapes", "text"),
        ),
        tuple(
            (
                units.short(o.name, NAME_WIDTH),
                o.calls,
                o.self_ms,
                o.inclusive_ms,
                o.gpu_ms,
                units.short(o.input_shapes or "not recorded", NAME_WIDTH),
            )
            for o in analysis.operators
        ),
        caption="Self time excludes nested operators; inclusive time counts a recursive call once.",
    )
    return Section("operators", f"CPU operators by self time ({listed})", (table,))


def kernels(report: Report) -> Section:
    analysis = report.analysis
    heading = f"Kernels by total time (top {len(analysis.kernels)} of {analysis.kernels_total})"
    if not analysis.trace.gpu_observed:
        return Section("kernels", "Kernels", (Paragraph(f"Kernels: {NOT_OBSERVED}."),))
    table = Table(
        (
            Column("kernel", "name"),
            Column("calls", "count"),
            Column("total ms", "ms"),
            Column("mean µs", "us"),
            Column("min µs", "us"),
            Column("max µs", "us"),
        ),
        tuple(
            (units.short(k.name, KERNEL_WIDTH), k.calls, k.total_ms, k.mean_us, k.min_us, k.max_us)
            for k in analysis.kernels
        ),
        caption="Each row is exact over every call of the kernel.",
    )
    return Section("kernels", heading, (table,))


def copies(report: Report) -> Section:
    analysis = report.analysis
    heading = "Copies and sets"
    if not analysis.trace.gpu_observed:
        return Section("copies", heading, (Paragraph(f"Copies: {NOT_OBSERVED}."),))
    rows: list[tuple[Cell, ...]] = []
    for step in analysis.steps:
        if step.gpu is None:
            continue
        for c in step.gpu.memcpy:
            size = c.bytes if c.bytes is not None else "bytes not recorded"
            rows.append(
                (step.name, f"Memcpy {c.direction}", c.count, c.busy_ms, size, c.pageable, c.pinned)
            )
        if step.gpu.memset.count:
            s = step.gpu.memset
            rows.append((step.name, "Memset", s.count, s.busy_ms, "—", "—", "—"))
    per_step = Table(
        (
            Column("step", "name"),
            Column("copy", "text"),
            Column("count", "count"),
            Column("busy ms", "ms"),
            Column("bytes", "bytes"),
            Column("pageable", "count"),
            Column("pinned", "count"),
        ),
        tuple(rows),
        caption="Per step and direction; busy is the union of the copies' intervals.",
    )
    patterns = Table(
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
            for p in analysis.copies
        ),
        caption=(
            "Copies grouped by direction, size, launching operator and label: one that "
            "recurs in every step with the same size may be a constant rebuilt each step."
        ),
    )
    return Section("copies", heading, (per_step, patterns))


# -- findings, warnings, the timeline --------------------------------------------------------
def findings(report: Report) -> Section:
    heading = "Findings"
    if not report.findings:
        limits = ", ".join(f"{k}={v}" for k, v in report.thresholds.to_dict().items())
        return Section(
            "findings",
            heading,
            (Paragraph(FINDINGS_TITLE), Paragraph(f"No finding above thresholds ({limits}).")),
        )
    table = Table(
        (
            Column("finding", "text"),
            Column("observation and evidence", "text"),
            Column("hypothesis", "text"),
            Column("next controlled check", "text"),
            Column("caveats", "text"),
        ),
        tuple(_finding_row(f) for f in report.findings),
    )
    return Section("findings", heading, (Paragraph(FINDINGS_TITLE), table))


def _finding_row(found: Finding) -> tuple[str, ...]:
    return (
        f"{found.level} · {100 * found.severity:.0f}% of step\n{found.rule}",
        f"{found.observation}\n{evidence_line(found)}",
        found.hypothesis,
        found.next_check,
        " ".join(found.caveats),
    )


def evidence_line(found: Finding) -> str:
    """The evidence in one line; where to look comes last."""
    parts = [f"{f.name}={figure_text(f)}" for f in found.evidence.figures if _shown(f)]
    place = found.evidence.where
    names = place.steps
    span = f"{names[0]}–{names[-1]}" if len(names) > 1 else (names[0] if names else "")
    look = f"look at {span} (ts {place.time_us[0]:.0f}–{place.time_us[1]:.0f} µs"
    if place.thread:
        look += f", {place.thread}"
    if place.streams:
        look += f", streams {', '.join(map(str, place.streams))}"
    return "; ".join([*parts, look + ")"])


def _shown(figure: Figure) -> bool:
    return figure.value is not None and figure.value != ()


def figure_text(figure: Figure) -> str:
    """One figure's value in its unit; lists of names shortened to the first."""
    value = figure.value
    if isinstance(value, tuple):
        if figure.unit == "names":
            first = units.short(str(value[0]), 60)
            return first if len(value) == 1 else f"{first} (+{len(value) - 1} more)"
        return ", ".join(str(v) for v in value)
    if isinstance(value, str) or value is None:
        return units.short(str(value), 80)
    return number(value, figure.unit)


def warnings(report: Report) -> tuple[Section, ...]:
    """The trace's warnings and the report's, when there are any."""
    found = report.analysis.trace.warnings + report.warnings
    if not found:
        return ()
    return (Section("warnings", "Warnings", tuple(Paragraph(w, "warning") for w in found)),)


def timeline(trace: str) -> Section:
    return Section(
        "timeline", "Open the trace on the timeline", (Paragraph(PERFETTO.format(trace=trace)),)
    )
