"""Terminal renderer of an A/B comparison: correctness first, then timing, then the verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from steptrace.validate.compare import Comparison
    from steptrace.validate.stats import SideStats


def render_comparison(result: Comparison, console: Console, names: tuple[str, str]) -> None:
    console.print(Group(*_parts(result, names)))


def _parts(result: Comparison, names: tuple[str, str]) -> list[RenderableType]:
    parts: list[RenderableType] = [Text(f"A = {names[0]}    B = {names[1]}    on {result.device}")]
    parts.append(_correctness(result))
    if result.baseline and result.candidate and result.samples:
        parts.append(_timing(result, result.baseline, result.candidate))
        cold_a = ", ".join(f"{v:.3f}" for v in result.samples.warmup_a)
        cold_b = ", ".join(f"{v:.3f}" for v in result.samples.warmup_b)
        parts.append(Text(f"Warm-up (kept apart, ms/step): A {cold_a}   B {cold_b}"))
        parts.append(
            Text(
                f"{len(result.samples.order)} interleaved blocks in randomized order, "
                f"{result.samples.elapsed_s:.1f} s; paired Wilcoxon p = "
                + (f"{result.p_value:.3g}" if result.p_value is not None else "n/a")
            )
        )
    if result.loop is not None:
        loop = result.loop
        parts.append(
            Text(
                f"Whole loop (data included): A {_median(loop.a_ms):.1f} ms, "
                f"B {_median(loop.b_ms):.1f} ms, B/A {loop.ratio:.3f} ({len(loop.a_ms)} runs each)"
            )
        )
    if result.noise_warning:
        parts.append(Text(f"warning: {result.noise_warning}", style="yellow"))
    style = "bold red" if result.verdict == "outputs-differ" else "bold"
    parts.append(Text(f"Verdict: {result.sentence}", style=style))
    if result.accepted_difference:
        parts.append(Text("The outputs differ and the difference was accepted explicitly."))
    return parts


def _correctness(result: Comparison) -> Table:
    check = result.correctness
    title = (
        f"Correctness after {check.steps} steps from the same state "
        f"(start identical: {'yes' if check.start_identical else 'NO'})"
    )
    table = Table(title=Text(title), title_justify="left")
    for column in ("compared", "agrees", "max abs diff", "max rel diff", "rtol / atol"):
        table.add_column(column, justify="left" if column == "compared" else "right")
    for d in check.differences:
        table.add_row(
            Text(d.name),
            Text("yes" if d.ok else "NO", style="" if d.ok else "bold red"),
            Text(_number(d.max_abs)),
            Text(_number(d.max_rel)),
            Text(d.note or f"{_tolerance(d.rtol)} / {_tolerance(d.atol)}"),
        )
    return table


def _timing(result: Comparison, a: SideStats, b: SideStats) -> Table:
    table = Table(
        title=Text("Steady-state step time, outside the profiler (ms/step)"), title_justify="left"
    )
    for column in ("side", "n", "median", "IQR", "min", "max", "IQR/median"):
        table.add_column(column, justify="left" if column == "side" else "right")
    if result.unit == "samples/s":
        table.add_column("samples/s", justify="right")
    for name, stats, side in (("A", a, "baseline"), ("B", b, "candidate")):
        row = [name, str(stats.n), f"{stats.median:.4f}", f"{stats.iqr:.4f}", f"{stats.min:.4f}",
               f"{stats.max:.4f}", f"{100 * stats.spread:.1f}% ({stats.noise})"]  # fmt: skip
        if result.unit == "samples/s":
            throughput = result.throughput(side)  # type: ignore[arg-type]
            row.append(f"{throughput:,.1f}" if throughput else "batch size unknown")
        table.add_row(*(Text(c) for c in row))
    ci = result.ci
    table.caption = Text(
        f"B/A = {result.ratio:.4f}, 95% CI [{ci[0]:.4f}, {ci[1]:.4f}] (paired bootstrap)"
        if ci and result.ratio
        else ""
    )
    return table


def _tolerance(value: float | None) -> str:
    return "default" if value is None else f"{value:g}"


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def _median(values: tuple[float, ...]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
