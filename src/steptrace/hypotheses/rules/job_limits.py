"""The job's findings whose severity is no share of the step: ``clock-skew`` (explains no
time, but limits what every cross-rank figure can claim) and ``memory-imbalance`` (a share
of the rank's memory peak); and where a job finding points on a rank (``rank_where``,
``rank_of``), for every rule over several ranks (``job``)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from steptrace.across.ranks.figures import RankResult, RanksAnalysis
from steptrace.across.ranks.rank_thresholds import RankThresholds
from steptrace.hypotheses.finding import Finding, Where, finding
from steptrace.hypotheses.rules.common import evidence
from steptrace.units import size


def rank_where(rank: RankResult | None) -> Where:
    """Where a job finding points on one rank: its steps, first to last."""
    if rank is None or not rank.steps:
        return Where(steps=(), time_us=(0.0, 0.0), thread=None, streams=None)
    first, last = rank.steps[0], rank.steps[-1]
    end = last.start_us + last.wall_ms * 1000
    return Where(tuple(s.name for s in rank.steps), (first.start_us, end), None, None)


def rank_of(analysis: RanksAnalysis, number: int) -> RankResult | None:
    """The rank numbered ``number`` (None: not among the analyzed ranks)."""
    return next((r for r in analysis.ranks if r.rank == number), None)


def clock_skew(analysis: RanksAnalysis, limits: RankThresholds) -> list[Finding]:
    clocks = analysis.clocks
    if len(analysis.ranks) < 2 or clocks.reference_rank is None:
        return []
    offsets = [(c.rank, c.offset_us) for c in clocks.ranks if c.offset_us is not None]
    far = [(r, o) for r, o in offsets if abs(o) >= limits.clock_offset_ms * 1000]
    if clocks.trusted and not far:
        return []
    largest = max(offsets, key=lambda ro: abs(ro[1]), default=(clocks.reference_rank, 0.0))
    if far:
        observation = (
            f"Rank clocks differ by up to {largest[1] / 1000:.3f} ms (rank {largest[0]} "
            f"against rank {clocks.reference_rank}, from collective ends); {clocks.reason}."
        )
        hypothesis = (
            "The hosts' clocks are not synchronized (or the traces were written with "
            "different time bases): a timeline that puts the ranks side by side without "
            "correction shows false arrival orders."
        )
    else:
        observation = f"Arrival order across ranks cannot be told: {clocks.reason}."
        hypothesis = (
            "The ranks do not finish a collective together (CPU collectives on a loaded "
            "machine finish when each process is scheduled), or their clocks drift during "
            "the window: either way, who arrived first cannot be read from the timestamps."
        )
    return [
        finding(
            "clock-skew",
            0.0,
            observation=observation,
            evidence=evidence(
                rank_where(rank_of(analysis, largest[0])),
                ("largest_offset_us", largest[1], "us"),
                ("rank", largest[0], "count"),
                ("residual_spread_us", clocks.residual_spread_us, "us"),
                ("trusted", "yes" if clocks.trusted else "no", "text"),
                ("ranks_far", tuple(r for r, _ in far), "names"),
            ),
            hypothesis=hypothesis,
            next_check=(
                "Check the hosts' clock synchronization (chronyc tracking, or ntpq -p) and "
                "re-record; meanwhile trust only duration-based figures (wait, transfer, "
                "stragglers), which need no clock."
            ),
            caveats=_skew_caveats(offsets),
        )
    ]


def _skew_caveats(offsets: Sequence[tuple[int, float]]) -> tuple[str, ...]:
    return (
        "Offsets are estimated from collective ends, assumed simultaneous; they were applied "
        f"to every cross-rank time ({len(offsets)} ranks).",
    )


def memory_imbalance(analysis: RanksAnalysis, limits: RankThresholds) -> list[Finding]:
    """A rank whose memory peak stands out from the other ranks' (median over its steps)."""
    peaks = {
        r.rank: statistics.median(p)
        for r in analysis.ranks
        if (p := [s.peak_allocated_bytes for s in r.steps if s.peak_allocated_bytes is not None])
    }
    if len(peaks) < 2:
        return []
    found = []
    for rank, peak in sorted(peaks.items()):
        others = statistics.median(v for r, v in peaks.items() if r != rank)
        excess = peak - others
        if peak < limits.memory_imbalance_ratio * others or excess < limits.memory_imbalance_bytes:
            continue
        found.append(
            finding(
                "memory-imbalance",
                excess / peak,
                observation=(
                    f"Rank {rank} peaks at {size(peak)} allocated (median over its steps), "
                    f"{peak / others:.2f} times the other ranks' median of {size(others)}."
                ),
                evidence=evidence(
                    rank_where(rank_of(analysis, rank)),
                    ("rank", rank, "count"),
                    ("peak_allocated_bytes", int(peak), "bytes"),
                    ("others_median_peak_bytes", int(others), "bytes"),
                ),
                hypothesis=(
                    "That rank holds more than the others (a larger shard, an uneven split "
                    "of an embedding or a pipeline stage, rank 0's logging or checkpoint "
                    "buffers): it runs out of memory first."
                ),
                next_check=(
                    "Analyze that rank's trace alone (its memory section says what holds its "
                    "peak) beside another rank's, and even out what differs."
                ),
                basis="memory peak",
            )
        )
    return sorted(found, key=lambda f: -f.severity)
