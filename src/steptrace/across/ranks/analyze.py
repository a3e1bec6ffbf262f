"""The cross-rank analysis composed: matched collectives, clocks, waits, steps, stragglers.

Contract: ``analyze_ranks_data(ranks, identified, thresholds) -> RanksAnalysis``, pure,
over each rank measured once (``steptrace.across.ranks.matrix.rank_data``): collectives
matched across ranks (``matching``), clock offsets from their ends (``clocks``), wait and
transfer per collective (``waits``), the rank x step matrix (``matrix``) and the
stragglers (``stragglers``). What could not be matched or trusted is in ``warnings`` and
``unmatched``, never a silent 0.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from steptrace.across.ranks.clocks import align
from steptrace.across.ranks.figures import (
    JobStepBound,
    RankLanes,
    RankResult,
    RanksAnalysis,
    RankStep,
    Straggler,
    Unmatched,
)
from steptrace.across.ranks.job_path import job_path
from steptrace.across.ranks.matching import match
from steptrace.across.ranks.matrix import RankData, rank_steps
from steptrace.across.ranks.rank_thresholds import RankThresholds
from steptrace.across.ranks.reading.discover import Identified
from steptrace.across.ranks.stragglers import find_stragglers
from steptrace.across.ranks.waits import Timing, summaries, timings, unmatched_total

TIMELINE_RANKS = 16  # ranks whose lanes the report carries: the stragglers', then the lowest


def analyze_ranks_data(
    ranks: Sequence[RankData], identified: Identified, limits: RankThresholds
) -> RanksAnalysis:
    numbers = [i.rank for i in identified.ranks]
    data = dict(zip(numbers, ranks, strict=True))
    instances = {r: d.instances for r, d in data.items()}
    matching = match(instances, identified.world_size)
    origins = {r: (d.base_time_ns, d.clock_ns) for r, d in data.items()}
    hosts = {r: d.host for r, d in data.items()}
    clocks, offsets = align(matching.matched, origins, limits.clock_residual_us, hosts)
    spread = clocks.residual_spread_us
    uncertainty = None if spread is None else round(spread * 1000)
    timed = timings(matching.matched, offsets, clocks.trusted, uncertainty)
    waits: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    of: Counter[int] = Counter()
    last: Counter[int] = Counter()
    clearly: Counter[int] = Counter()
    for t in timed:
        for r, w in t.wait_ns.items():
            waits[r][t.issued_ns[r]] += w  # two calls issued at one instant both count
            of[r] += 1
        if t.last_rank is not None:
            last[t.last_rank] += 1
        if t.clearly_last is not None:
            clearly[t.clearly_last] += 1
    steps: dict[int, tuple[RankStep, ...]] = {
        r: rank_steps(d, offsets.get(r, 0), clocks.origin_ns, waits.get(r, {}))
        for r, d in data.items()
    }
    beyond = uncertainty is not None and not clocks.trusted and bool(offsets)
    arrivals = {
        r: (last[r] if clocks.trusted else None, of[r], clearly[r] if beyond else None)
        for r in data
    }
    sources = {i.rank: i.source for i in identified.ranks}
    results = tuple(
        RankResult(
            rank=r,
            path=d.path,
            rank_from=sources[r],
            world_size=d.world_size,
            backend=d.backend,
            gpu_observed=d.gpu_observed,
            clock_offset_us=offsets[r] / 1000 if r in offsets else None,
            collectives=len(d.instances),
            steps=steps[r],
            warnings=d.warnings,
        )
        for r, d in sorted(data.items())
    )
    stragglers = find_stragglers(steps, arrivals, limits)
    return RanksAnalysis(
        world_size=identified.world_size,
        ranks=results,
        clocks=clocks,
        collectives=summaries(instances, matching.matched, timed, matching.queues),
        unmatched=matching.unmatched,
        stragglers=stragglers,
        warnings=(*identified.warnings, *_warnings(data, matching.unmatched, clocks.trusted)),
        lanes=_lanes_carried(data, stragglers),
        critical_path=_job_path(data, timed),
    )


def _job_path(
    data: dict[int, RankData], timed: Sequence[Timing]
) -> tuple[JobStepBound, ...] | None:
    """The job's critical path when every rank carries its own (``--critical-path``)."""
    if any(d.parts.critical is None for d in data.values()):
        return None
    return job_path(data, timed)


def _lanes_carried(
    data: dict[int, RankData], stragglers: Sequence[Straggler]
) -> tuple[RankLanes, ...]:
    """At most ``TIMELINE_RANKS`` ranks' lanes, by rank: the stragglers', then the lowest."""
    chosen = list(dict.fromkeys([s.rank for s in stragglers] + sorted(data)))
    kept = sorted(chosen[:TIMELINE_RANKS])
    return tuple(RankLanes(rank=r, lanes=t) for r in kept if (t := data[r].parts.lanes) is not None)


def _warnings(
    data: dict[int, RankData], unmatched: Sequence[Unmatched], trusted: bool
) -> list[str]:
    said = []
    lost = unmatched_total(unmatched)
    if lost:
        said.append(
            f"{lost} collective instances (counted per rank) could not be matched across "
            "ranks: see unmatched for the reasons"
        )
    silent = [r for r, d in data.items() if not d.instances]
    if silent and len(silent) < len(data):
        said.append(
            f"ranks {', '.join(map(str, silent))} show no collective while others do: "
            "their communication is not observed (not 0)"
        )
    if len(data) > 1 and not trusted:
        said.append("the ranks' clocks are not trusted: no arrival-order claim is made")
    return said
