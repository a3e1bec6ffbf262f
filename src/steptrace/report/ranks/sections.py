"""A job's rank traces as sections (a ``RanksReport``), built once for every format.

Reading order: the job (ranks, where each number came from, world size, missing and
duplicate ranks, warnings), the clocks, the stragglers, one step across ranks on the
timeline (HTML draws it), the rank x step matrix, each phase across ranks, the
collectives, the unmatched instances, the findings. Beyond
``rank_fold.FOLD_ABOVE`` ranks the tables name the ranks that deviate most and fold the
others into median / p90 / max rows; the JSON (``steptrace.ranks/2``) is the report itself,
never folded. ``None`` is shown as *not observed* (or a dash), never 0.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict

import msgspec

from steptrace.across.ranks.figures import RankLanes, RankResult, Straggler
from steptrace.report.document import Block, Cell, Column, Document, Paragraph, Section, Table
from steptrace.report.model import RanksReport
from steptrace.report.ranks import fold as rank_fold

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
SOURCE_WORDS = {
    "distributedInfo": "the trace's distributedInfo",
    "file name": "the rank number in the file name",
    "file order": "the order the files were given (nothing else said it)",
}


def ranks_document(
    report: RanksReport,
    title: str | None = None,
    *,
    findings_only: bool = False,
    lanes: tuple[RankLanes, ...] = (),
) -> Document:
    """The job's document: its title, the data JSON writes (the whole report, also with
    ``findings_only``, which keeps the job and the findings sections), sections on demand;
    ``lanes``: some ranks' lanes, which HTML draws (``pipeline.analyze_job``)."""
    if findings_only:
        build = functools.partial(findings_sections, report)
    else:
        build = functools.partial(sections, report, lanes)
    return Document(title or job_title(report), report, build)


def job_title(report: RanksReport) -> str:
    world = f" of world size {report.world_size}" if report.world_size is not None else ""
    return f"steptrace: {len(report.ranks)} rank traces{world}"


def sections(report: RanksReport, lanes: tuple[RankLanes, ...]) -> tuple[Section, ...]:
    """The sections in reading order (imported here: JSON needs none)."""
    from steptrace.report.ranks.collectives import collectives, unmatched
    from steptrace.report.ranks.matrix import matrix, phases
    from steptrace.report.sections.critical import job_critical_path
    from steptrace.report.sections.findings import findings_section
    from steptrace.report.sections.timeline import ranks_jumps, ranks_timeline_section

    drawn = ranks_timeline_section(report, lanes)
    found = findings_section(report.findings, report.thresholds.to_dict(), ranks=True)
    jumps = ranks_jumps(report, drawn)
    if jumps is not None:
        found = msgspec.structs.replace(found, blocks=(*found.blocks, jumps))
    return (
        job(report),
        clocks(report),
        stragglers(report),
        *job_critical_path(report),
        *((drawn,) if drawn else ()),
        matrix(report),
        phases(report),
        collectives(report),
        unmatched(report),
        found,
    )


def findings_sections(report: RanksReport) -> tuple[Section, ...]:
    """The job and the findings only."""
    from steptrace.report.sections.findings import findings_section

    return (
        job(report),
        findings_section(report.findings, report.thresholds.to_dict(), ranks=True),
    )


def job(report: RanksReport) -> Section:
    """Who the ranks are, how each number was known, what is missing, what was noticed."""
    numbers = [r.rank for r in report.ranks]
    backends = sorted({r.backend for r in report.ranks if r.backend})
    lines = [
        f"{len(numbers)} rank traces: ranks {rank_fold.rank_list(numbers)}",
        "world size: "
        + (str(report.world_size) if report.world_size is not None else "not said by any trace"),
        f"backend: {', '.join(backends) or 'not said'}",
        "missing ranks: " + _missing(report),
        "duplicate ranks: none (a rank given twice is refused before any analysis)",
    ]
    sources = defaultdict(list)
    for result in report.ranks:
        sources[result.rank_from].append(result.rank)
    for source, ranks in sources.items():
        lines.append(
            f"rank numbers from {SOURCE_WORDS[source]}: ranks {rank_fold.rank_list(ranks)}"
        )
    blocks: list[Block] = [Paragraph("\n".join(lines)), _rank_table(report)]
    blocks += [Paragraph(f"warning: {w}", "warning") for w in _warnings(report)]
    return Section("job", "The job: ranks and where their numbers came from", tuple(blocks))


def _missing(report: RanksReport) -> str:
    if report.world_size is None:
        return "not known (no trace says the world size)"
    return rank_fold.absent_runs(report.world_size, [r.rank for r in report.ranks])


def _rank_table(report: RanksReport) -> Table:
    numbers = [r.rank for r in report.ranks]
    odd = {
        r.rank: float(bool(r.warnings) or r.rank_from != "distributedInfo") for r in report.ranks
    }
    first = [s.rank for s in report.stragglers]
    shown = set(rank_fold.named_ranks(numbers, odd, first))
    columns = (
        Column("rank", "count"),
        Column("rank from", "text"),
        Column("trace", "name"),
        Column("steps", "count"),
        Column("collectives", "count"),
        Column("GPU", "text"),
        Column("warnings", "count"),
    )
    rows = tuple(_rank_row(r) for r in report.ranks if r.rank in shown)
    caption = ""
    if rank_fold.folds(numbers):
        caption = (
            f"{len(numbers)} ranks: {len(rows)} listed (stragglers, ranks with warnings or "
            "numbered otherwise, then the lowest); the JSON lists every rank"
        )
    return Table(columns, rows, caption=caption)


def _rank_row(result: RankResult) -> tuple[Cell, ...]:
    gpu = "observed" if result.gpu_observed else "not observed"
    return (
        result.rank,
        result.rank_from,
        result.path,
        len(result.steps),
        result.collectives,
        gpu,
        len(result.warnings),
    )


def _warnings(report: RanksReport) -> list[str]:
    """The job's warnings, then each rank's; warnings that differ only in their numbers
    are said once for all their ranks, with the first rank's numbers."""
    groups: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for result in report.ranks:
        for warning in result.warnings:
            groups[_NUMBER.sub("#", warning)].append((result.rank, warning))
    said = list(report.warnings)
    for said_by in groups.values():
        ranks = [r for r, _ in said_by]
        first_rank, text = said_by[0]
        if len(ranks) == 1:
            said.append(f"rank {first_rank}: {text}")
            continue
        same = all(w == text for _, w in said_by)
        numbers = "" if same else f" (rank {first_rank}'s figures; the JSON has each rank's)"
        said.append(f"ranks {rank_fold.rank_list(ranks)} ({len(ranks)}): {text}{numbers}")
    return said


def clocks(report: RanksReport) -> Section:
    """Each rank's offset to the reference clock, its residual, and whether order is trusted."""
    alignment = report.clocks
    reference = alignment.reference_rank
    lines = [
        "reference clock: "
        + (f"rank {reference}" if reference is not None else "none (nothing matched)"),
        "offsets applied to cross-rank timing: " + ("yes" if alignment.offsets_applied else "no"),
        "arrival order: " + ("trusted" if alignment.trusted else "not trusted"),
        f"why: {alignment.reason}",
    ]
    spread = alignment.residual_spread_us
    if spread is not None:
        lines.append(f"largest residual after alignment: {spread:.3f} µs")
    per_rank = {c.rank: (c.offset_us, c.residual_us) for c in alignment.ranks}
    deviation = {r: abs(v[0] or 0) + (v[1] or 0) for r, v in per_rank.items()}
    shown = rank_fold.named_ranks(sorted(per_rank), deviation)
    by_rank = {c.rank: c for c in alignment.ranks}
    columns = (
        Column("rank", "text"),
        Column("offset µs", "us"),
        Column("collectives used", "count"),
        Column("residual µs", "us"),
        Column("base time written", "text"),
    )
    rows: list[tuple[Cell, ...]] = [
        (
            str(r),
            by_rank[r].offset_us,
            by_rank[r].collectives_used,
            by_rank[r].residual_us,
            "yes" if by_rank[r].base_time_ns is not None else "no",
        )
        for r in shown
    ]
    caption = ""
    if rank_fold.folds(sorted(per_rank)):
        for name in rank_fold.STATS:
            rows.append(
                (
                    name,
                    rank_fold.stat((v[0] for v in per_rank.values()), name),
                    "—",
                    rank_fold.stat((v[1] for v in per_rank.values()), name),
                    "—",
                )
            )
        caption = rank_fold.folded_caption(len(per_rank), len(shown))
    note = (
        "offset: the rank's clock minus the reference's (subtracted from its times); "
        "not observed: no matched collective to estimate it from"
    )
    blocks: list[Block] = [Paragraph("\n".join(lines))]
    blocks += [Table(columns, tuple(rows), caption=caption or note)]
    return Section("clocks", "Clocks: offsets to the reference rank", tuple(blocks))


def _arrived_last(s: Straggler, spread_us: float | None) -> str:
    """The straggler's arrivals last: counted on trusted clocks; on untrusted ones, those
    last by more than the clocks' uncertainty, when known."""
    if s.times_last is not None:
        return f"{s.times_last} of {s.of}"
    if s.times_last_beyond_uncertainty is None or spread_us is None:
        return f"not claimed (clocks not trusted; {s.of} collectives)"
    return (
        f"{s.times_last_beyond_uncertainty} of {s.of} by more than the clocks' "
        f"uncertainty (±{spread_us:.0f} µs)"
    )


def stragglers(report: RanksReport) -> Section:
    """The ranks that spend more than the others in one phase, most excess first."""
    heading = "Stragglers, most excess first"
    if not report.stragglers:
        limits = report.thresholds
        return Section(
            "stragglers",
            heading,
            (
                Paragraph(
                    "No straggler: no rank's phase exceeded the others' median by "
                    f"{limits.straggler_floor_ms} ms and {100 * limits.straggler_step_share:.0f}% "
                    "of the step consistently, with the others waiting for it."
                ),
            ),
        )
    columns = (
        Column("rank", "count"),
        Column("phase", "name"),
        Column("excess ms/step", "ms"),
        Column("steps late", "text"),
        Column("arrived last", "text"),
        Column("others' wait ms/step", "ms"),
        Column("own wait ms/step", "ms"),
    )
    rows = tuple(
        (
            s.rank,
            s.phase,
            s.excess_ms,
            f"{s.steps_late} of {s.steps}",
            _arrived_last(s, report.clocks.residual_spread_us),
            s.others_wait_ms,
            s.own_wait_ms,
        )
        for s in report.stragglers
    )
    caption = (
        "excess: the rank's time in the phase minus the other ranks' median, per step "
        "(median over steps); wait: time at collectives waiting for the last rank"
    )
    return Section("stragglers", heading, (Table(columns, rows, caption=caption),))
