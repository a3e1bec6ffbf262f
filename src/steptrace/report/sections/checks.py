"""An A/B comparison outside the profiler as a section: correctness first, then timing,
then the verdict, with every raw value drawn. The demo's reports and ``steptrace
compare`` both show it; nothing here imports torch (a ``Comparison`` is read, not made).
"""

from __future__ import annotations

from steptrace.report.document import (
    Block,
    Cell,
    Column,
    Document,
    Paragraph,
    Section,
    Series,
    Strips,
    Table,
)
from steptrace.validate.estimators import Estimate, Interference
from steptrace.validate.results import Comparison, OutputsDiffer, Timed

SHOWN_DIFFERENCES = 12  # the rows of the correctness table, the largest differences first


def comparison_document(result: Comparison, names: tuple[str, str]) -> Document:
    """``steptrace compare``'s output: A and B named, then the comparison."""
    title = f"A/B outside the profiler: A = {names[0]}, B = {names[1]}"
    return Document(title, result, lambda: (comparison_section("", result),))


def comparison_section(title: str, result: Comparison) -> Section:
    heading = "A/B outside the profiler" + (f": {title}" if title else "")
    blocks: list[Block] = [Paragraph(f"On {result.device}.")]
    if result.by_design:
        blocks.append(Paragraph(f"Differs by design: {'; '.join(result.by_design)}."))
    blocks += _correctness(result)
    if isinstance(result, Timed):
        blocks += _timing(result)
    loop = None if isinstance(result, OutputsDiffer) else result.loop
    if loop is not None:
        blocks.append(
            Paragraph(
                f"Whole loop (data included): A {loop.a_median_ms:.1f} ms, B "
                f"{loop.b_median_ms:.1f} ms, B/A {loop.ratio:.3f} ({len(loop.a_ms)} runs each)"
            )
        )
    if isinstance(result, Timed) and result.noise_warning:
        blocks.append(Paragraph(f"warning: {result.noise_warning}", "warning"))
    blocks.append(Paragraph(f"Verdict: {result.sentence}", "question"))
    return Section("check", heading, tuple(blocks))


def _correctness(result: Comparison) -> list[Block]:
    check = result.correctness
    agreement = "all outputs, gradients and parameters agree" if check.ok else "outputs differ"
    if not isinstance(result, OutputsDiffer) and result.accepted_difference:
        agreement += " (the difference was accepted explicitly)"
    start = "identical" if check.start_identical else "NOT identical"
    worst = sorted(check.differences, key=lambda d: (d.ok, -(d.max_abs or 0)))
    shown = worst[:SHOWN_DIFFERENCES]
    caption = (
        f"{len(shown)} of {len(worst)} compared values, the largest differences first"
        if len(shown) < len(worst)
        else ""
    )
    table = Table(
        (
            Column("compared", "name"),
            Column("agrees", "text"),
            Column("max abs diff", "number"),
            Column("max rel diff", "number"),
            Column("rtol / atol", "text"),
        ),
        tuple(
            (
                d.name,
                "yes" if d.ok else "NO",
                "—" if d.max_abs is None else d.max_abs,
                "—" if d.max_rel is None else d.max_rel,
                d.note or f"{_tolerance(d.rtol)} / {_tolerance(d.atol)}",
            )
            for d in shown
        ),
        caption=caption,
    )
    sentence = (
        f"Correctness after {check.steps} steps from the same state (start {start}): {agreement}."
    )
    return [Paragraph(sentence, "plain" if check.ok else "warning"), table]


def _timing(result: Timed) -> list[Block]:
    samples = result.samples
    columns = [
        Column("side", "text"),
        Column("n", "count"),
        Column("median ms", "ms"),
        Column("IQR ms", "ms"),
        Column("min ms", "ms"),
        Column("max ms", "ms"),
        Column("IQR/median", "share"),
        Column("noise", "text"),
    ]
    rows: list[tuple[Cell, ...]] = []
    for name, stats, rate in (
        ("A", result.baseline, result.throughput("baseline")),
        ("B", result.candidate, result.throughput("candidate")),
    ):
        row: list[Cell] = [name, stats.n, stats.median, stats.iqr, stats.min, stats.max]
        row += [stats.spread, stats.noise]
        if result.unit == "samples/s":
            row.append(round(rate) if rate else "batch size unknown")
        rows.append(tuple(row))
    if result.unit == "samples/s":
        columns.append(Column("samples/s", "count"))
    caption = f"{_estimate_text(result.estimate)} decides; {_estimate_text(result.other_estimate)}"
    cold_a = ", ".join(f"{v:.3f}" for v in samples.warmup_a)
    cold_b = ", ".join(f"{v:.3f}" for v in samples.warmup_b)
    p_value = f"{result.p_value:.3g}" if result.p_value is not None else "n/a"
    return [
        Paragraph("Steady-state step time, outside the profiler (ms/step):"),
        Table(tuple(columns), tuple(rows), caption=caption),
        Strips(
            (
                Series("A warm-up", tuple(samples.warmup_a)),
                Series("A", tuple(samples.a)),
                Series("B warm-up", tuple(samples.warmup_b)),
                Series("B", tuple(samples.b)),
            ),
            "ms",
        ),
        Paragraph(f"Warm-up (kept apart, ms/step): A {cold_a}   B {cold_b}"),
        Paragraph(
            f"{len(samples.order)} interleaved blocks of {samples.block_steps} steps per side in "
            f"randomized order, {samples.elapsed_s:.1f} s (stopped: {samples.stopped}); "
            f"paired Wilcoxon p = {p_value}; {_interference_text(result.interference)}"
        ),
    ]


ESTIMATORS = {
    "median": "the blocks' median steps (Hodges–Lehmann, signed-rank CI)",
    "block-minimum": "the blocks' fastest steps (Hodges–Lehmann, signed-rank CI)",
}


def _estimate_text(estimate: Estimate) -> str:
    low, high = estimate.ci
    name = ESTIMATORS.get(estimate.estimator, estimate.estimator)
    level = f"{100 * estimate.confidence:g}%"
    return f"B/A = {estimate.ratio:.4f} [{level} CI {low:.4f}, {high:.4f}] from {name}"


def _interference_text(measured: Interference) -> str:
    shares = f"A {100 * measured.slowed_a:.0f}%, B {100 * measured.slowed_b:.0f}%"
    if measured.detected:
        return f"steps held back by interference: {shares}, so the fastest steps decide"
    return f"steps held back by interference: {shares} (quiet: the medians decide)"


def _tolerance(value: float | None) -> str:
    return "default" if value is None else f"{value:g}"
