"""Rules over several ranks of one job: ``straggler``, ``exposed-communication``,
``collective-imbalance``, ``clock-skew``, ``memory-imbalance`` (docs/findings.md); the last
two, whose severity is no share of the step, in ``job_limits``.

Contract: ``rank_findings(analysis, thresholds) -> tuple[Finding, ...]`` over a
``RanksAnalysis``: the stragglers first (the cause before its effects), then the others
most severe first; the same ``Finding`` as a single trace's rules, with the severity a
share of the step wall time (0 for ``clock-skew``, which explains no time but limits what
can be claimed); ``memory-imbalance``'s is a share of the rank's memory peak (its
``basis``), after the others.

One claim per millisecond: the wait a straggler causes is the straggler's. On each other
rank and step, the wait it explains is the rank's collective wait, at most its exposed
communication and the stragglers' excess (split between several stragglers by their
excess); a straggler's severity is that wait over the step (the median over the other
ranks of the median over their steps), and ``exposed-communication`` keeps only the
exposed time no straggler explains. Should the time findings still add up past the step
(their medians are taken apart), each keeps at most what those before it left.
"""

from __future__ import annotations

import statistics

from steptrace.across.ranks.figures import RanksAnalysis, Straggler
from steptrace.across.ranks.rank_thresholds import RankThresholds
from steptrace.hypotheses.finding import (
    Finding,
    finding,
)
from steptrace.hypotheses.rules.common import evidence
from steptrace.hypotheses.rules.job_limits import clock_skew, memory_imbalance, rank_of, rank_where
from steptrace.units import pct

RANK_RULES = (
    "straggler",
    "exposed-communication",
    "collective-imbalance",
    "clock-skew",
    "memory-imbalance",
)


def rank_findings(analysis: RanksAnalysis, limits: RankThresholds) -> tuple[Finding, ...]:
    caused = _caused_ms(analysis)
    late = sorted(
        (_straggler(analysis, s, _caused_share(analysis, s, caused)) for s in analysis.stragglers),
        key=lambda f: -f.severity,
    )
    others = [
        *_exposed(analysis, limits, caused),
        *_imbalance(analysis, limits),
        *clock_skew(analysis, limits),
    ]
    timed = _within_the_step([*late, *sorted(others, key=lambda f: -f.severity)])
    return (*timed, *memory_imbalance(analysis, limits))


def _caused_ms(analysis: RanksAnalysis) -> dict[tuple[int, int], dict[int, float]]:
    """Per (rank, step index): the wait each straggler explains there, in ms per step."""
    found: dict[tuple[int, int], dict[int, float]] = {}
    for rank in analysis.ranks:
        late = {s.rank: s.excess_ms for s in analysis.stragglers if s.rank != rank.rank}
        total = sum(late.values())
        for k, step in enumerate(rank.steps):
            if not late or step.comm_wait_ms is None or total <= 0:
                continue
            wait = min(step.comm_wait_ms, step.exposed_comm_ms or 0.0, total)
            found[rank.rank, k] = {r: wait * excess / total for r, excess in late.items()}
    return found


def _caused_share(
    analysis: RanksAnalysis, straggler: Straggler, caused: dict[tuple[int, int], dict[int, float]]
) -> float:
    """The straggler's severity: the wait it causes the others, over their step."""
    per_rank = [
        statistics.median(
            caused.get((r.rank, k), {}).get(straggler.rank, 0.0) / s.wall_ms
            for k, s in enumerate(r.steps)
            if s.wall_ms > 0
        )
        for r in analysis.ranks
        if r.rank != straggler.rank and any(s.wall_ms > 0 for s in r.steps)
    ]
    return statistics.median(per_rank) if per_rank else 0.0


def _within_the_step(found: list[Finding]) -> list[Finding]:
    """The time findings in order, each keeping at most what those before it left."""
    kept: list[Finding] = []
    left = 1.0
    for f in found:
        if f.severity > left:
            f = finding(
                f.rule,
                left,
                observation=f.observation,
                evidence=f.evidence,
                hypothesis=f.hypothesis,
                next_check=f.next_check,
                caveats=(
                    *f.caveats,
                    f"The findings above claim {pct(1.0 - left)} of the step: this one keeps "
                    f"what is left ({pct(left)} of {pct(f.severity)}).",
                ),
            )
        left = max(0.0, left - f.severity)
        kept.append(f)
    return kept


def _median_wall(analysis: RanksAnalysis) -> float:
    walls = [s.wall_ms for r in analysis.ranks for s in r.steps]
    return statistics.median(walls) if walls else 0.0


def _bounds(analysis: RanksAnalysis, rank: int) -> int | None:
    """In how many steps the job's critical path ends on ``rank``; None: not computed."""
    path = analysis.critical_path
    return None if path is None else sum(b.rank == rank for b in path)


def _on_job_path(analysis: RanksAnalysis, s: Straggler) -> str:
    """The job's critical path through the straggler, in words (empty: not computed)."""
    path = analysis.critical_path
    if path is None:
        return ""
    mine = [b for b in path if b.rank == s.rank]
    in_phase = sum(b.phase == s.phase for b in mine)
    return (
        f" The job's critical path ends on rank {s.rank} in {len(mine)} of {len(path)} steps, "
        f"in {s.phase} in {in_phase} of them."
    )


def _arrival_untrusted(analysis: RanksAnalysis, s: Straggler) -> str:
    """What arrival order can say when the clocks are not trusted: the arrivals last by
    more than the clocks' uncertainty, if it is known."""
    spread = analysis.clocks.residual_spread_us
    if s.times_last_beyond_uncertainty is None or spread is None:
        return "arrival order is not claimed (the clocks are not trusted)"
    return (
        f"it arrived last by more than the clocks' uncertainty (±{spread:.0f} µs) at "
        f"{s.times_last_beyond_uncertainty} of the {s.of} matched collectives it took part "
        "in; the clocks are not trusted for the rest of the order"
    )


def _straggler(analysis: RanksAnalysis, s: Straggler, share: float) -> Finding:
    arrived = (
        f"it arrived last at {s.times_last} of the {s.of} matched collectives it took part in"
        if s.times_last is not None
        else _arrival_untrusted(analysis, s)
    )
    return finding(
        "straggler",
        share,
        observation=(
            f"Rank {s.rank} spends {s.excess_ms:.3f} ms more per step in {s.phase} than the "
            f"median of the other ranks ({s.steps_late} of {s.steps} steps); {arrived}; the "
            f"others wait {s.others_wait_ms:.3f} ms per step in collectives, rank {s.rank} "
            f"{s.own_wait_ms:.3f} ms: the wait it causes is {pct(share)} of their step "
            f"(counted here, not in exposed-communication).{_on_job_path(analysis, s)}"
        ),
        evidence=evidence(
            rank_where(rank_of(analysis, s.rank)),
            ("rank", s.rank, "count"),
            ("phase", s.phase, "text"),
            ("excess_ms", s.excess_ms, "ms"),
            ("steps_late", s.steps_late, "count"),
            ("steps", s.steps, "count"),
            ("times_last", s.times_last, "count"),
            ("of", s.of, "count"),
            ("others_wait_ms", s.others_wait_ms, "ms"),
            ("own_wait_ms", s.own_wait_ms, "ms"),
            ("caused_wait_share", share, "share"),
            ("bounds_steps", _bounds(analysis, s.rank), "count"),
        ),
        hypothesis=(
            f"{s.phase} is slower on rank {s.rank} (its data shard, its storage or host, a "
            "noisy neighbour), and every other rank waits for it at the next collective: "
            f"the job runs at rank {s.rank}'s pace."
        ),
        next_check=(
            f"Re-run with rank {s.rank}'s {s.phase} replaced by a prepared batch (the same "
            "tensor every step, steptrace.validate.prepared_batch_check): if the others' "
            f"wait vanishes, {s.phase} on that rank is the cause; then `steptrace compare` "
            f"{s.phase} on rank {s.rank} against another rank's, outside the profiler."
        ),
        caveats=(
            "Only durations are compared, so clock offsets do not change this finding.",
            "One profiled window: a rank slow in these steps may not be slow in every step.",
        ),
    )


def _exposed(
    analysis: RanksAnalysis,
    limits: RankThresholds,
    caused: dict[tuple[int, int], dict[int, float]],
) -> list[Finding]:
    """Exposed communication less the wait the stragglers explain (``_caused_ms``)."""
    shares: dict[int, float] = {}
    left_ms: list[float] = []
    for rank in analysis.ranks:
        values = []
        for k, s in enumerate(rank.steps):
            if s.exposed_comm_ms is None or s.wall_ms <= 0:
                continue
            left = max(0.0, s.exposed_comm_ms - sum(caused.get((rank.rank, k), {}).values()))
            values.append(left / s.wall_ms)
            if s.exposed_comm_ms:
                left_ms.append(left)
        if values:
            shares[rank.rank] = statistics.median(values)
    if not shares:
        return []
    share = statistics.median(shares.values())
    if share < limits.exposed_comm_share:
        return []
    worst = max(shares, key=lambda r: shares[r])
    waits = [s.comm_wait_ms for r in analysis.ranks for s in r.steps if s.comm_wait_ms is not None]
    wait = statistics.median(waits) if waits else None
    exposed_ms = statistics.median(left_ms) if left_ms else 0.0
    waiting = (
        f"; of each step's collective time, {wait:.3f} ms (median) is waiting for other ranks"
        if wait is not None
        else ""
    )
    if analysis.stragglers:
        late = ", ".join(str(s.rank) for s in analysis.stragglers)
        waiting += f"; the wait for rank {late} is left out: the straggler finding has it"
    return [
        finding(
            "exposed-communication",
            share,
            observation=(
                f"Communication overlaps no compute for {pct(share)} of the step (median over "
                f"ranks; {exposed_ms:.3f} ms per step; rank {worst} the most at "
                f"{pct(shares[worst])}){waiting}."
            ),
            evidence=evidence(
                rank_where(rank_of(analysis, worst)),
                ("share_of_step", share, "share"),
                ("exposed_comm_ms", exposed_ms, "ms"),
                ("worst_rank", worst, "count"),
                ("worst_rank_share", shares[worst], "share"),
                ("comm_wait_ms", wait, "ms"),
            ),
            hypothesis=(
                "Gradients are communicated after the compute that could hide them (buckets "
                "filled late, a synchronization at the end of backward), or the ranks wait "
                "for each other: waiting time shows as exposed communication too."
            ),
            next_check=(
                "Split it first: if the wait is most of it, look for a straggler; else "
                "`steptrace compare` the step with DDP's bucket_cap_mb changed (or "
                "gradient_as_bucket_view=True) against the current one, outside the profiler."
            ),
            caveats=(
                "On a CPU-only trace, exposed means not covered by the step's thread's "
                "own operators (docs/json-schema.md).",
            ),
        )
    ]


def _imbalance(analysis: RanksAnalysis, limits: RankThresholds) -> list[Finding]:
    found = []
    wall = _median_wall(analysis)
    steps = max((len(r.steps) for r in analysis.ranks), default=0)
    for c in analysis.collectives:
        sizes = c.bytes_by_rank
        if len(sizes) < 2:
            continue
        middle = statistics.median(sizes.values())
        heaviest = max(sizes, key=lambda r: sizes[r])
        ratio = sizes[heaviest] / middle if middle > 0 else 0.0
        if ratio < limits.imbalance_ratio:
            continue
        share = (c.transfer_ms / steps) / wall if steps and wall > 0 else 0.0
        if share < limits.imbalance_step_share:
            continue
        found.append(
            _imbalance_finding(analysis, c.kind, c.process_group, heaviest, ratio, share, sizes)
        )
    return found


def _imbalance_finding(
    analysis: RanksAnalysis,
    kind: str,
    group: str,
    heaviest: int,
    ratio: float,
    share: float,
    sizes: dict[int, int],
) -> Finding:
    return finding(
        "collective-imbalance",
        share,
        observation=(
            f"In {kind} of process group {group}, rank {heaviest} moves {ratio:.2f}x the "
            "median rank's bytes; these collectives take "
            f"{pct(share)} of the step in transfer."
        ),
        evidence=evidence(
            rank_where(rank_of(analysis, heaviest)),
            ("kind", kind, "text"),
            ("process_group", group, "text"),
            ("rank", heaviest, "count"),
            ("ratio", ratio, "ratio"),
            ("bytes", sizes[heaviest], "bytes"),
            ("share_of_step", share, "share"),
        ),
        hypothesis=(
            f"Work is unevenly split (an embedding table or an all-to-all split that sends "
            f"more to or from rank {heaviest}): the collective lasts as long as its "
            "heaviest rank."
        ),
        next_check=(
            "Re-run with the split evened out (sharding plan, input_split_sizes) and "
            "`steptrace compare` the step against the current one."
        ),
    )
