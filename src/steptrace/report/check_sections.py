"""An A/B comparison outside the profiler as a section: correctness first, then timing,
then the verdict, with every raw value drawn. The demo's reports and ``steptrace
compare`` both show it; nothing here imports torch (a ``Comparison`` is read, not made).
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

import msgspec

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

SHOWN_DIFFERENCES = 12  # the rows of the correctness table, the largest differences first


class ComparisonLike(Protocol):
    """What is shown of a ``steptrace.validate.Comparison`` (read-only)."""

    @property
    def verdict(self) -> str: ...
    @property
    def sentence(self) -> str: ...
    @property
    def ratio(self) -> float | None: ...
    @property
    def ci(self) -> tuple[float, float] | None: ...
    @property
    def p_value(self) -> float | None: ...
    @property
    def unit(self) -> str: ...
    @property
    def baseline(self) -> Any: ...
    @property
    def candidate(self) -> Any: ...
    @property
    def correctness(self) -> Any: ...
    @property
    def samples(self) -> Any: ...
    @property
    def loop(self) -> Any: ...
    @property
    def noise_warning(self) -> str | None: ...
    @property
    def estimate(self) -> Any: ...
    @property
    def other_estimate(self) -> Any: ...
    @property
    def interference(self) -> Any: ...
    @property
    def by_design(self) -> tuple[str, ...]: ...
    @property
    def accepted_difference(self) -> bool: ...
    @property
    def device(self) -> str: ...

    def throughput(self, side: Literal["baseline", "candidate"]) -> float | None: ...


def comparison_document(result: ComparisonLike, names: tuple[str, str]) -> Document:
    """``steptrace compare``'s output: A and B named, then the comparison."""
    title = f"A/B outside the profiler: A = {names[0]}, B = {names[1]}"
    assert isinstance(result, msgspec.Struct)  # a Comparison: what JSON writes
    return Document(title, result, lambda: (comparison_section("", result),))


def comparison_section(title: str, result: ComparisonLike) -> Section:
    heading = "A/B outside the profiler" + (f": {title}" if title else "")
    blocks: list[Block] = [Paragraph(f"On {result.device}.")]
    if result.by_design:
        blocks.append(Paragraph(f"Differs by design: {'; '.join(result.by_design)}."))
    blocks += _correctness(result)
    if result.baseline is not None and result.candidate is not None and result.samples:
        blocks += _timing(result)
    if result.loop is not None:
        loop = result.loop
        blocks.append(
            Paragraph(
                f"Whole loop (data included): A {loop.a_median_ms:.1f} ms, B "
                f"{loop.b_median_ms:.1f} ms, B/A {loop.ratio:.3f} ({len(loop.a_ms)} runs each)"
            )
        )
    if result.noise_warning:
        blocks.append(Paragraph(f"warning: {result.noise_warning}", "warning"))
    blocks.append(Paragraph(f"Verdict: {result.sentence}", "question"))
    return Section("check", heading, tuple(blocks))


def _correctness(result: ComparisonLike) -> list[Block]:
    check = result.correctness
    agreement = "all outputs, gradients and parameters agree" if check.ok else "outputs differ"
    if result.accepted_difference:
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


def _timing(result: ComparisonLike) -> list[Block]:
    a, b, samples = result.baseline, result.candidate, result.samples
    columns = [
        Column("side", "text"), Column("n", "count"), Column("median ms", "ms"),
        Column("IQR ms", "ms"), Column("min ms", "ms"), Column("max ms", "ms"),
        Column("IQR/median", "share"), Column("noise", "text"),
    ]  # fmt: skip
    rows: list[tuple[Cell, ...]] = []
    for name, stats, side in (("A", a, "baseline"), ("B", b, "candidate")):
        row: list[Cell] = [name, stats.n, stats.median, stats.iqr, stats.min, stats.max,
                           stats.spread, stats.noise]  # fmt: skip
        if result.unit == "samples/s":
            rate = result.throughput(side)  # type: ignore[arg-type]
            row.append(round(rate) if rate else "batch size unknown")
        rows.append(tuple(row))
    if result.unit == "samples/s":
        columns.append(Column("samples/s", "count"))
    caption = _estimate_text(result.estimate) + " decides"
    if result.other_estimate is not None:
        caption += f"; {_estimate_text(result.other_estimate)}"
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


def _estimate_text(estimate: Any) -> str:
    low, high = estimate.ci
    name = ESTIMATORS.get(estimate.estimator, estimate.estimator)
    level = f"{100 * estimate.confidence:g}%"
    return f"B/A = {estimate.ratio:.4f} [{level} CI {low:.4f}, {high:.4f}] from {name}"


def _interference_text(measured: Any) -> str:
    if measured is None:
        return "interference not measured"
    shares = f"A {100 * measured.slowed_a:.0f}%, B {100 * measured.slowed_b:.0f}%"
    if measured.detected:
        return f"steps held back by interference: {shares}, so the fastest steps decide"
    return f"steps held back by interference: {shares} (quiet: the medians decide)"


def _tolerance(value: float | None) -> str:
    return "default" if value is None else f"{value:g}"
