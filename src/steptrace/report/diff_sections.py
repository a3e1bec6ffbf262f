"""A trace diff as sections: what moved between two windows, and why they may differ."""

from __future__ import annotations

from collections.abc import Sequence

from steptrace import units
from steptrace.across.diff import ChangeCounts, NameChange, SpreadChange, TraceDiff
from steptrace.report.cells import spread
from steptrace.report.document import Block, Column, Document, Paragraph, Section, Table


def diff_document(diff: TraceDiff, top: int) -> Document:
    """Summary and warnings, then the operators and kernels that moved (``top`` of each)."""
    summary: list[Block] = [Paragraph(line) for line in summary_lines(diff)]
    summary += [Paragraph(f"warning: {w}", "warning") for w in diff.warnings]
    sections = [Section("summary", "Step time and what changed", tuple(summary))]
    for key, heading, changes in (
        ("operators", "Operators (self ms per step)", diff.operators),
        ("kernels", "Kernels (total ms per step)", diff.kernels),
    ):
        sections.append(
            Section(key, f"{heading}: changes, largest first", (_table(changes[:top]),))
        )
    sections.append(
        Section("reminder", "What a diff can say", (Paragraph(diff.reminder, "question"),))
    )
    title = f"steptrace diff: {diff.before} → {diff.after}"
    return Document(title, diff, lambda: tuple(sections))


def summary_lines(diff: TraceDiff) -> list[str]:
    lines = [
        f"before: {diff.before} ({diff.before_steps} steps)",
        f"after:  {diff.after} ({diff.after_steps} steps)",
        _spread_line("step time", diff.step_ms),
    ]
    for name, change in (("GPU busy", diff.gpu_busy_ms), ("GPU idle", diff.gpu_idle_ms)):
        lines.append(
            _spread_line(name, change) if change else f"{name}: not observed on both sides"
        )
    lines.append(f"operators: {_counts(diff.operator_counts)}")
    lines.append(f"kernels: {_counts(diff.kernel_counts)}")
    return lines


def _table(changes: Sequence[NameChange]) -> Table:
    columns = (
        Column("name", "name"), Column("status", "text"),
        Column("calls/step before", "text"), Column("calls/step after", "text"),
        Column("ms/step before", "text"), Column("ms/step after", "text"),
        Column("delta ms/step", "text"),
    )  # fmt: skip
    rows = tuple(
        (units.short(c.name, 70), c.status, _number(c.before_calls), _number(c.after_calls),
         _number(c.before_ms), _number(c.after_ms), f"{c.delta_ms:+.3f}")
        for c in changes
    )  # fmt: skip
    return Table(columns, rows, caption="" if rows else "no change listed")


def _number(value: int | float | None) -> str:
    if value is None:
        return "—"
    return f"{value:g}" if float(value).is_integer() else f"{value:.3g}"


def _spread_line(name: str, change: SpreadChange) -> str:
    ratio = f", after/before {change.ratio:.3f}" if change.ratio is not None else ""
    return (
        f"{name}: {spread(change.before, 'ms')} → {spread(change.after, 'ms')} ms "
        f"(median [min–max]{ratio})"
    )


def _counts(counts: ChangeCounts) -> str:
    return (
        f"{counts.appeared} appeared, {counts.disappeared} disappeared, {counts.changed} changed, "
        f"{counts.unchanged} unchanged" + (f", {counts.unknown} unknown" if counts.unknown else "")
    )
