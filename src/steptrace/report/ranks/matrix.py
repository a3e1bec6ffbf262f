"""The rank x step matrix and the per-phase rank comparison, as sections with heatmaps.

Contract: ``matrix(report)`` and ``phases(report)`` read a ``RanksReport`` and return a
``Section`` each; the heatmaps draw the numbers of their tables (rows binned beyond
``rank_fold.BIN_ABOVE`` ranks: each bin drawn with its rank farthest from 0). A phase's
per-rank figure is the median over that rank's steps of its exclusive ms (a step without
the label counts 0 ms; a rank that never shows the label: not observed).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence

from steptrace.across.ranks.figures import RankStep
from steptrace.report.document import Cell, Column, ColumnUnit, Heatmap, Paragraph, Section, Table
from steptrace.report.model import RanksReport
from steptrace.report.ranks import fold as rank_fold

Grid = dict[int, dict[str, float | None]]  # rank -> column -> value
FIGURES: tuple[tuple[str, Callable[[RankStep], float | None]], ...] = (
    ("wall ms", lambda s: s.wall_ms),
    ("GPU busy ms", lambda s: s.gpu_busy_ms),
    ("GPU idle ms", lambda s: s.idle_ms),
    ("exposed comm ms", lambda s: s.exposed_comm_ms),
    ("comm wait ms", lambda s: s.comm_wait_ms),
)
UNLABELED = "unlabeled"


def step_names(report: RanksReport) -> list[str]:
    """Every step name of any rank, by step number (then name)."""
    found = {s.name: s.number for r in report.ranks for s in r.steps}
    return sorted(found, key=lambda n: (found[n] is None, found[n] or 0, n))


def phase_names(report: RanksReport) -> list[str]:
    """Every label of any rank, most time first over all ranks and steps; unlabeled last."""
    totals: dict[str, float] = {}
    for result in report.ranks:
        for step in result.steps:
            for name, value in step.phases_ms.items():
                totals[name] = totals.get(name, 0.0) + value
    names = sorted(totals, key=lambda n: (-totals[n], n))
    unlabeled = any(s.unlabeled_ms is not None for r in report.ranks for s in r.steps)
    return [*names, UNLABELED] if unlabeled and UNLABELED not in totals else names


def phase_ms(step: RankStep, phase: str) -> float | None:
    if phase == UNLABELED and phase not in step.phases_ms:
        return step.unlabeled_ms
    return step.phases_ms.get(phase, 0.0)


def of_phase(phase: str) -> Callable[[RankStep], float | None]:
    """A step's exclusive ms in ``phase``."""
    return lambda step: phase_ms(step, phase)


def _steps_grid(report: RanksReport, value: Callable[[RankStep], float | None]) -> Grid:
    return {r.rank: {s.name: value(s) for s in r.steps} for r in report.ranks}


def _rank_median(
    steps: Sequence[RankStep], value: Callable[[RankStep], float | None]
) -> float | None:
    seen = [v for v in (value(s) for s in steps) if v is not None]
    return statistics.median(seen) if seen else None


def _heatmap_figure(report: RanksReport) -> tuple[str, Callable[[RankStep], float | None]]:
    """The straggler's phase when there is one, else the comm wait when seen, else wall."""
    if report.stragglers:
        phase = report.stragglers[0].phase
        return f"{phase} ms (the first straggler's phase)", of_phase(phase)
    if any(s.comm_wait_ms is not None for r in report.ranks for s in r.steps):
        return "comm wait ms", lambda s: s.comm_wait_ms
    return "wall ms", lambda s: s.wall_ms


def grid_block(
    grid: Grid,
    columns: Sequence[str],
    unit: str,
    named: Sequence[int],
    *,
    diverging: bool = False,
    marked: Sequence[int] = (),
) -> Heatmap:
    """A heatmap of ``grid`` (binned beyond BIN_ABOVE ranks; the rows holding the
    ``marked`` ranks always labelled) and its table (folded)."""
    ranks = sorted(grid)
    labels: list[str] = []
    rows: list[tuple[float | None, ...]] = []
    marks: list[int] = []
    for label, chunk in rank_fold.bins(ranks):
        if set(chunk) & set(marked):
            marks.append(len(labels))
        labels.append(label)
        rows.append(tuple(rank_fold.farthest(grid[r].get(c) for r in chunk) for c in columns))
    table_rows: list[tuple[Cell, ...]] = [
        (str(r), *(grid[r].get(c) for c in columns)) for r in named
    ]
    caption = f"{unit} per rank"
    if rank_fold.folds(ranks):
        for name in rank_fold.STATS:
            table_rows.append(
                (name, *(rank_fold.stat((grid[r].get(c) for r in ranks), name) for c in columns))
            )
        caption += "; " + rank_fold.folded_caption(len(ranks), len(named))
    cell_unit: ColumnUnit = "delta_ms" if diverging else "ms"
    table = Table(
        (Column("rank", "text"), *(Column(c, cell_unit) for c in columns)),
        tuple(table_rows),
        caption=caption,
    )
    binned = len(labels) < len(ranks)
    drawn = (
        f"; each row is a bin of {len(ranks) // len(labels)}+ ranks drawn with its rank "
        "farthest from 0"
        if binned
        else ""
    )
    return Heatmap(
        tuple(labels),
        tuple(columns),
        tuple(rows),
        unit,
        table,
        diverging,
        caption=f"{unit} per rank{drawn}; grey: not observed"
        + ("; in bold: the stragglers' rows" if marks else ""),
        marked=tuple(marks),
    )


def _deviation(report: RanksReport, phases: Sequence[str]) -> dict[int, float]:
    values = {
        r.rank: [
            *(_rank_median(r.steps, f) for _, f in FIGURES),
            *(_rank_median(r.steps, of_phase(p)) for p in phases),
        ]
        for r in report.ranks
    }
    return rank_fold.deviations(values)


def matrix(report: RanksReport) -> Section:
    """Each rank's steps: wall, GPU busy, idle, exposed comm, comm wait, and the labels."""
    heading = "Rank x step matrix"
    steps, phases = step_names(report), phase_names(report)
    if not steps:
        return Section("matrix", heading, (Paragraph("No step on any rank."),))
    ranks = [r.rank for r in report.ranks]
    named = rank_fold.named_ranks(
        ranks, _deviation(report, phases), [s.rank for s in report.stragglers]
    )
    title, figure = _heatmap_figure(report)
    slow = [s.rank for s in report.stragglers]
    heat = grid_block(_steps_grid(report, figure), steps, title, named, marked=slow)
    figures = _long_table(report, named, steps, [(t, f) for t, f in FIGURES])
    labels = _long_table(report, named, steps, [(f"{p} ms", of_phase(p)) for p in phases])
    if not any(s.peak_allocated_bytes is not None for r in report.ranks for s in r.steps):
        return Section("matrix", heading, (heat, figures, labels))
    memory = _long_table(report, named, steps, [("peak allocated", _peak)], unit="bytes")
    return Section("matrix", heading, (heat, figures, labels, memory))


def _peak(step: RankStep) -> float | None:
    return None if step.peak_allocated_bytes is None else float(step.peak_allocated_bytes)


def _long_table(
    report: RanksReport,
    named: Sequence[int],
    steps: Sequence[str],
    figures: Sequence[tuple[str, Callable[[RankStep], float | None]]],
    unit: ColumnUnit = "ms",
) -> Table:
    """One row per (rank, step) for the named ranks; when folded, per step median/p90/max."""
    columns = (
        Column("rank", "text"),
        Column("step", "name"),
        *(Column(t, unit) for t, _ in figures),
    )
    by_rank = {r.rank: {s.name: s for s in r.steps} for r in report.ranks}
    rows: list[tuple[Cell, ...]] = []
    for rank in named:
        for name in steps:
            step = by_rank[rank].get(name)
            if step is not None:
                rows.append((str(rank), name, *(f(step) for _, f in figures)))
    caption = ""
    if rank_fold.folds(list(by_rank)):
        for name in steps:
            present = [s[name] for s in by_rank.values() if name in s]
            for stat in rank_fold.STATS:
                rows.append(
                    (
                        stat,
                        name,
                        *(rank_fold.stat((f(s) for s in present), stat) for _, f in figures),
                    )
                )
        caption = rank_fold.folded_caption(len(by_rank), len(named))
    return Table(columns, tuple(rows), caption=caption)


def phases(report: RanksReport) -> Section:
    """Each phase across ranks: per-rank median ms, and the rank farthest above the others."""
    heading = "Phases across ranks (median ms per step)"
    names = phase_names(report)
    if not names:
        return Section("phases", heading, (Paragraph("No label on any rank."),))
    medians = {r.rank: {p: _rank_median(r.steps, of_phase(p)) for p in names} for r in report.ranks}
    rows = [_phase_row(p, {r: m[p] for r, m in medians.items()}) for p in names]
    columns = (
        Column("phase", "name"),
        Column("median over ranks ms", "ms"),
        Column("rank most above the others", "text"),
        Column("its ms", "ms"),
        Column("others' median ms", "ms"),
        Column("difference ms", "delta_ms"),
    )
    differences: Grid = {r: {} for r in medians}
    for p in names:
        for rank, value in _against_others({r: m[p] for r, m in medians.items()}).items():
            differences[rank][p] = value
    named = rank_fold.named_ranks(
        sorted(medians), _deviation(report, names), [s.rank for s in report.stragglers]
    )
    heat = grid_block(
        differences,
        names,
        "ms above the others' median",
        named,
        diverging=True,
        marked=[s.rank for s in report.stragglers],
    )
    return Section("phases", heading, (Table(columns, tuple(rows)), heat))


def _against_others(values: Mapping[int, float | None]) -> dict[int, float | None]:
    """Each rank's value minus the median of the other ranks' (None when either is unseen)."""
    out: dict[int, float | None] = {}
    for rank, value in values.items():
        others = [v for r, v in values.items() if r != rank and v is not None]
        out[rank] = value - statistics.median(others) if value is not None and others else None
    return out


def _phase_row(phase: str, values: Mapping[int, float | None]) -> tuple[Cell, ...]:
    against = {r: d for r, d in _against_others(values).items() if d is not None}
    middle = rank_fold.stat(values.values(), "median")
    if not against:
        return (phase, middle, "—", None, None, None)
    top = max(against, key=lambda r: (against[r], -r))
    own = values[top]
    return (phase, middle, str(top), own, None if own is None else own - against[top], against[top])
