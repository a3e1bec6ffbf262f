"""A trace diff as sections: what moved between two windows, and why they may differ."""

from __future__ import annotations

from collections.abc import Sequence

from steptrace import units
from steptrace.across.changes import ChangeCounts
from steptrace.across.diff import MemoryChange, NameChange, SpreadChange, TraceDiff
from steptrace.across.labels import LabelChange
from steptrace.report.document import Block, Column, Document, Paragraph, Section, Table
from steptrace.report.formats.cells import spread


def diff_document(diff: TraceDiff, top: int) -> Document:
    """Summary and warnings, the labels, then the operators and kernels that moved (``top``
    of each)."""
    summary: list[Block] = [Paragraph(line) for line in summary_lines(diff)]
    summary += [Paragraph(f"warning: {w}", "warning") for w in diff.warnings]
    sections = [Section("summary", "Step time and what changed", tuple(summary))]
    sections.append(_labels(diff.labels[:top]))
    sections.append(_changes("operators", "Operators (self ms per step)", diff.operators[:top]))
    sections.append(_changes("kernels", "Kernels (total ms per step)", diff.kernels[:top]))
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
    lines += [_memory_line(m) for m in diff.memory]
    lines.append(f"labels: {_counts(diff.label_counts)}")
    lines.append(f"operators: {_counts(diff.operator_counts)}")
    lines.append(f"kernels: {_counts(diff.kernel_counts)}")
    return lines


def _memory_line(change: MemoryChange) -> str:
    """A device's memory peak (and growth per step) before and after."""

    def side(peak: int | None, growth: float | None) -> str:
        if peak is None or growth is None:
            return "not recorded"
        return f"{units.size(peak)} (growth {units.size(growth)}/step)"

    before = side(change.before_peak_bytes, change.before_growth_bytes_per_step)
    after = side(change.after_peak_bytes, change.after_growth_bytes_per_step)
    delta = (
        f", {'+' if change.delta_bytes >= 0 else '-'}{units.size(abs(change.delta_bytes))}"
        if (change.delta_bytes is not None)
        else ""
    )
    return f"memory peak on {change.device}: {before} → {after}{delta}"


def _changes(key: str, heading: str, changes: Sequence[NameChange]) -> Section:
    if not changes:
        return Section(key, heading, (Paragraph("No change listed."),))
    columns = (
        Column("name", "name"),
        Column("status", "text"),
        Column("calls/step before", "count"),
        Column("calls/step after", "count"),
        Column("ms/step before", "ms"),
        Column("ms/step after", "ms"),
        Column("delta ms/step", "delta_ms"),
    )
    rows = tuple(
        (
            units.short(c.name, 70),
            c.status,
            _or_dash(c.before_calls),
            _or_dash(c.after_calls),
            _or_dash(c.before_ms),
            _or_dash(c.after_ms),
            c.delta_ms,
        )
        for c in changes
    )
    return Section(key, f"{heading}: changes, largest first", (Table(columns, rows),))


def _labels(changes: Sequence[LabelChange]) -> Section:
    heading = "Labels (exclusive ms per step, median over the complete steps)"
    if not changes:
        return Section("labels", heading, (Paragraph("No label on either side."),))
    columns = (
        Column("label", "name"),
        Column("status", "text"),
        Column("steps before", "count"),
        Column("steps after", "count"),
        Column("ms/step before", "ms"),
        Column("ms/step after", "ms"),
        Column("delta ms/step", "delta_ms"),
    )
    rows = tuple(
        (
            _label_name(c),
            c.status,
            c.before_steps,
            c.after_steps,
            c.before_ms,
            c.after_ms,
            "—" if c.delta_ms is None else c.delta_ms,
        )
        for c in changes
    )
    one_sided = any(c.delta_ms is None for c in changes)
    caption = "not observed: the label is absent from that side (not 0 ms)" if one_sided else ""
    return Section(
        "labels", f"{heading}: largest change first", (Table(columns, rows, caption=caption),)
    )


def _label_name(change: LabelChange) -> str:
    """The label, and its name after when it changed (the DataLoader's iterator class)."""
    if change.after_name is None:
        return units.short(change.name, 70)
    return f"{units.short(change.name, 70)} → {units.short(change.after_name, 70)}"


def _or_dash(value: float | None) -> float | str:
    """A side where the name is absent shows a dash (not 'not observed': it did not run)."""
    return "—" if value is None else value


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
