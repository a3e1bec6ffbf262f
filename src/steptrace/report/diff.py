"""Renderers of a trace diff: terminal (rich), Markdown and JSON. They never compute."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from steptrace.diff import ChangeCounts, NameChange, SpreadChange, TraceDiff
from steptrace.report import format as fmt

COLUMNS = (
    "name", "status", "calls/step before", "calls/step after", "ms/step before",
    "ms/step after", "delta ms/step",
)  # fmt: skip


def summary_lines(diff: TraceDiff) -> list[str]:
    lines = [f"before: {diff.before} ({diff.before_steps} steps)",
             f"after:  {diff.after} ({diff.after_steps} steps)",
             _spread_line("step time", diff.step_ms)]  # fmt: skip
    for name, change in (("GPU busy", diff.gpu_busy_ms), ("GPU idle", diff.gpu_idle_ms)):
        lines.append(
            _spread_line(name, change) if change else f"{name}: not observed on both sides"
        )
    lines.append(f"operators: {_counts(diff.operator_counts)}")
    lines.append(f"kernels: {_counts(diff.kernel_counts)}")
    return lines


def render_diff_text(diff: TraceDiff, console: Console, top: int) -> None:
    parts: list[RenderableType] = [Text(line) for line in summary_lines(diff)]
    parts += [Text(f"warning: {w}", style="yellow") for w in diff.warnings]
    for title, changes in (
        ("Operators (self ms per step)", diff.operators),
        ("Kernels (total ms per step)", diff.kernels),
    ):
        if not changes:
            parts.append(Text(f"{title}: no change listed."))
            continue
        table = Table(title=Text(f"{title}: changes, largest first"), title_justify="left")
        for column in COLUMNS:
            table.add_column(column, justify="left" if column in ("name", "status") else "right")
        for row in _rows(changes[:top]):
            table.add_row(*(Text(c) for c in row))
        parts.append(table)
    parts.append(Text(diff.reminder, style="bold"))
    console.print(Group(*parts))


def render_diff_markdown(diff: TraceDiff, top: int) -> str:
    out = ["# steptrace diff\n", *(f"- {line}" for line in summary_lines(diff)), ""]
    out += [f"> warning: {w}\n" for w in diff.warnings]
    header = "| " + " | ".join(COLUMNS) + " |"
    for title, changes in (
        ("Operators (self ms per step)", diff.operators),
        ("Kernels (total ms per step)", diff.kernels),
    ):
        out += [f"## {title}\n", header, "|:---|:---|---:|---:|---:|---:|---:|"]
        out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in _rows(changes[:top])]
        out.append("")
    out.append(f"**{diff.reminder}**\n")
    return "\n".join(out)


def render_diff_json(diff: TraceDiff) -> str:
    return msgspec.json.format(msgspec.json.encode(diff).decode(), indent=2) + "\n"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _rows(changes: Sequence[NameChange]) -> list[list[str]]:
    def number(value: int | float | None) -> str:
        if value is None:
            return "—"
        return f"{value:g}" if float(value).is_integer() else f"{value:.3g}"

    return [
        [fmt.short(c.name, 70), c.status, number(c.before_calls), number(c.after_calls),
         number(c.before_ms), number(c.after_ms), f"{c.delta_ms:+.3f}"]
        for c in changes
    ]  # fmt: skip


def _spread_line(name: str, change: SpreadChange) -> str:
    ratio = f", after/before {change.ratio:.3f}" if change.ratio is not None else ""
    return (
        f"{name}: {fmt.spread(change.before)} → {fmt.spread(change.after)} ms "
        f"(median [min–max]{ratio})"
    )


def _counts(counts: ChangeCounts) -> str:
    return (
        f"{counts.appeared} appeared, {counts.disappeared} disappeared, {counts.changed} changed, "
        f"{counts.unchanged} unchanged" + (f", {counts.unknown} unknown" if counts.unknown else "")
    )
