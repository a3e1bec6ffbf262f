"""Terminal renderer: rich tables, one section per question a user asks of a trace."""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from steptrace.analysis.analyze import TraceAnalysis
from steptrace.report import format as fmt


def render_text(
    results: list[TraceAnalysis], console: Console, *, findings_only: bool = False
) -> None:
    """Print every analysis to ``console`` (only the question and findings if asked)."""
    for result in results:
        console.print(_findings_report(result) if findings_only else _report(result))


def _report(result: TraceAnalysis) -> RenderableType:
    parts: list[RenderableType] = [Rule(fmt.title(result)), *_notes(result), _steps(result)]
    if result.summary.phases:
        parts.append(_phases(result))
    if result.trace.gpu_observed:
        parts.append(_transfers(result))
    parts += [_operators(result), _kernels(result), _findings(result)]
    return Group(*parts)


def _findings_report(result: TraceAnalysis) -> RenderableType:
    lines = [Text(line, style="bold") for line in fmt.scenario_lines(result)]
    return Group(Rule(fmt.title(result)), *lines, _findings(result))


def _findings(result: TraceAnalysis) -> RenderableType:
    if not result.findings:
        return Text(fmt.no_findings(result))
    table = _table(fmt.FINDINGS_TITLE, "finding", "observation and evidence", "hypothesis",
                   "next controlled check")  # fmt: skip
    table.columns[0].justify = "left"
    for column in table.columns[1:]:
        column.justify = "left"
    for f in result.findings:
        observed = f"{f.observation}\n{fmt.evidence_line(f.evidence)}"
        if f.caveats:
            observed += "\nCaveat: " + " ".join(f.caveats)
        _row(table, f"{f.level} · {pct_of(f.severity)}\n{f.rule}", observed, f.hypothesis,
             f.next_check)  # fmt: skip
    return table


def pct_of(share: float) -> str:
    return f"{100 * share:.0f}% of step"


def _notes(result: TraceAnalysis) -> list[RenderableType]:
    trace = result.trace
    style = "bold" if result.scenario else "bold yellow"
    notes: list[RenderableType] = [Text(line, style=style) for line in fmt.scenario_lines(result)]
    notes += [Text(f"note: {n}", style="yellow") for n in fmt.option_notes(result)]
    if trace.gpu_observed:
        notes.append(Text(f"GPU: {fmt.devices(result)}"))
    else:
        absent = fmt.gpu_absent_note(result)
        notes.append(Text(absent, style="bold yellow" if absent == fmt.GPU_ABSENT else ""))
    if not trace.steps_from_markers:
        notes.append(Text(fmt.NO_STEPS, style="yellow"))
    if (first := fmt.first_step_note(result)) is not None:
        notes.append(Text(first, style="yellow"))
    notes += [Text(f"warning: {w}", style="yellow") for w in trace.warnings]
    return notes


def _table(title: str, *columns: str) -> Table:
    table = Table(title=Text(title), title_justify="left", title_style="bold")
    for i, column in enumerate(columns):
        table.add_column(column, justify="left" if i == 0 else "right", overflow="fold")
    return table


def _row(table: Table, *cells: str) -> None:
    """Add a row of plain text: trace names hold brackets that are not rich markup."""
    table.add_row(*(Text(c) for c in cells))


def _steps(result: TraceAnalysis) -> Table:
    table = _table(
        "Steps (wall time on the timeline; GPU busy = union of kernels, copies, sets)",
        "step", "wall ms", "GPU busy ms", "GPU idle ms", "GPU busy", "kernels",
        "launch delay µs (median)", "sync calls", "outside labels ms",
    )  # fmt: skip
    for step in result.steps:
        gpu = step.gpu
        _row(
            table,
            step.name,
            fmt.ms(step.wall_ms),
            fmt.ms(gpu.busy_ms if gpu else None),
            fmt.ms(gpu.idle_ms if gpu else None),
            fmt.pct(gpu.utilization if gpu else None),
            str(gpu.kernels.count) if gpu else fmt.NOT_OBSERVED,
            fmt.us(gpu.launch_delay_us.median if gpu and gpu.launch_delay_us else None),
            ", ".join(f"{s.name}×{s.count}" for s in gpu.sync_calls) or "none" if gpu else "—",
            fmt.ms(step.unlabeled_ms) if step.unlabeled_ms is not None else "—",
        )
    summary = result.summary
    busy = summary.gpu_busy_ms
    table.caption = Text(
        f"{summary.count} step(s): wall {fmt.spread(summary.wall_ms)} ms (median [min–max]); "
        + (f"GPU busy {fmt.spread(busy)} ms" if busy else f"GPU busy {fmt.NOT_OBSERVED}")
    )
    return table


def _phases(result: TraceAnalysis) -> Table:
    table = _table(
        "Labels per step (exclusive of nested labels; median [min–max] over steps)",
        "label", "steps", "exclusive ms", "share of step", "GPU idle while it ran ms",
    )  # fmt: skip
    for phase in result.summary.phases:
        _row(
            table,
            fmt.short(phase.name, 60),
            str(phase.steps),
            fmt.spread(phase.exclusive_ms),
            fmt.spread(phase.share, "%"),
            fmt.spread(phase.gpu_idle_ms),
        )
    return table


def _transfers(result: TraceAnalysis) -> Table:
    table = _table(
        "Copies and sets per step", "step", "copy", "count", "busy ms", "bytes", "pageable"
    )
    for step in result.steps:
        if step.gpu is None:
            continue
        for copy in step.gpu.memcpy:
            _row(
                table,
                step.name,
                f"Memcpy {copy.direction}",
                str(copy.count),
                fmt.ms(copy.busy_ms),
                fmt.size(copy.bytes),
                str(copy.pageable),
            )
        if step.gpu.memset.count:
            memset = step.gpu.memset
            _row(table, step.name, "Memset", str(memset.count), fmt.ms(memset.busy_ms), "", "")
    return table


def _operators(result: TraceAnalysis) -> Table:
    table = _table(
        f"CPU operators by self time (top {len(result.operators)} of {result.operators_total})",
        "operator", "calls", "self ms", "inclusive ms", "GPU ms launched", "input shapes",
    )  # fmt: skip
    for op in result.operators:
        _row(
            table,
            fmt.short(op.name, 50),
            str(op.calls),
            fmt.ms(op.self_ms),
            fmt.ms(op.inclusive_ms),
            fmt.ms(op.gpu_ms),
            fmt.short(op.input_shapes or "not recorded", 40),
        )
    return table


def _kernels(result: TraceAnalysis) -> RenderableType:
    if not result.trace.gpu_observed:
        return Text("Kernels: not observed.")
    table = _table(
        f"Kernels by total time (top {len(result.kernels)} of {result.kernels_total})",
        "kernel", "calls", "total ms", "mean µs", "min µs", "max µs",
    )  # fmt: skip
    for k in result.kernels:
        _row(
            table,
            fmt.short(k.name, 70),
            str(k.calls),
            fmt.ms(k.total_ms),
            fmt.us(k.mean_us),
            fmt.us(k.min_us),
            fmt.us(k.max_us),
        )
    return table
