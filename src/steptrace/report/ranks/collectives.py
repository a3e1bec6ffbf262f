"""The collectives of a ``RanksReport`` per kind and process group, and the instances that
could not be matched, with their reasons, as sections.

Wait per rank is one column per collective group; beyond ``rank_fold.FOLD_ABOVE`` ranks the
most waiting (and least waiting) ranks are named and the rest folded into median / p90 /
max rows. Bandwidths and sizes the traces do not give are *not observed*, never 0.
"""

from __future__ import annotations

from steptrace.across.ranks.figures import CollectiveSummary
from steptrace.report.document import Block, Cell, Column, Paragraph, Section, Table
from steptrace.report.model import RanksReport
from steptrace.report.ranks import fold as rank_fold


def _group(c: CollectiveSummary) -> str:
    return f"{c.kind} in {c.process_group}"


def collectives(report: RanksReport) -> Section:
    """Count, matched, transfer, wait per rank and bandwidths of each kind and group."""
    heading = "Collectives per kind and process group"
    if not report.collectives:
        return Section(
            "collectives", heading, (Paragraph("No collective recognised on any rank."),)
        )
    columns = (
        Column("kind", "text"),
        Column("process group", "name"),
        Column("group size", "count"),
        Column("read from", "text"),
        Column("matched by", "text"),
        Column("count", "count"),
        Column("matched", "count"),
        Column("transfer ms", "ms"),
        Column("wait ms, median rank", "ms"),
        Column("wait ms, most", "ms"),
        Column("bytes each", "bytes"),
        Column("algbw GB/s", "number"),
        Column("busbw GB/s", "number"),
    )
    rows = tuple(
        (
            c.kind,
            c.process_group,
            c.group_size,
            c.source,
            c.match_key,
            c.count,
            c.matched,
            c.transfer_ms,
            rank_fold.stat(c.wait_ms.values(), "median"),
            rank_fold.stat(c.wait_ms.values(), "max"),
            c.bytes_per_instance,
            c.algbw_gbps,
            c.busbw_gbps,
        )
        for c in report.collectives
    )
    caption = (
        "transfer: per matched instance the shortest duration across ranks, summed; wait: "
        "a rank's duration minus that, summed; not observed: the trace gives no size"
    )
    blocks: list[Block] = [Table(columns, rows, caption=caption), _waits(report)]
    return Section("collectives", heading, tuple(blocks))


def _waits(report: RanksReport) -> Table:
    """Wait ms per rank (rows) and collective group (columns)."""
    groups = list(report.collectives)
    ranks = [r.rank for r in report.ranks]
    per_rank = {r: [c.wait_ms.get(r) for c in groups] for r in ranks}
    named = rank_fold.named_ranks(ranks, rank_fold.deviations(per_rank))
    rows: list[tuple[Cell, ...]] = [(str(r), *per_rank[r]) for r in named]
    caption = "wait ms at matched collectives, per rank; not observed: the rank has none there"
    if rank_fold.folds(ranks):
        for name in rank_fold.STATS:
            rows.append(
                (
                    name,
                    *(
                        rank_fold.stat((v[k] for v in per_rank.values()), name)
                        for k in range(len(groups))
                    ),
                )
            )
        caption = rank_fold.folded_caption(len(ranks), len(named))
    columns = (Column("rank", "text"), *(Column(f"{_group(c)} wait ms", "ms") for c in groups))
    return Table(columns, tuple(rows), caption=caption)


def unmatched(report: RanksReport) -> Section:
    """Instances that could not be paired across ranks, one row per reason."""
    heading = "Unmatched collectives"
    if not report.unmatched:
        return Section(
            "unmatched",
            heading,
            (Paragraph("Every collective instance was matched across ranks."),),
        )
    columns = (
        Column("kind", "text"),
        Column("process group", "name"),
        Column("reason", "text"),
        Column("instances", "count"),
        Column("ranks that recorded them", "text"),
        Column("first", "name"),
    )
    rows = tuple(
        (u.kind, u.process_group, u.reason, u.instances, rank_fold.rank_list(u.ranks), u.first_key)
        for u in report.unmatched
    )
    caption = "instances are counted once per rank that recorded them"
    return Section("unmatched", heading, (Table(columns, rows, caption=caption),))
