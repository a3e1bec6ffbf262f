"""Stragglers: a rank late in one phase, step after step, that the others wait for.

Contract: ``find_stragglers(steps, arrivals, thresholds) -> tuple[Straggler, ...]``. Steps
are compared by their number (by position when a trace has no step markers), over the
steps every rank has. In each step, a rank's time in each phase (each label's exclusive
time, and the unlabeled time) is compared with the median of the OTHER ranks: the excess.
A late rank shows more time in some phase while the others wait for it in collectives
(and it waits less), the step walls staying in lockstep. A rank is a straggler in a phase
when, with ``RankThresholds``:

* its median excess over the steps passes the floor (``straggler_floor_ms``, and
  ``straggler_step_share`` of the median step wall), and so does its excess in at least
  ``straggler_consistency`` of the steps: one slow step is noise;
* the others' median collective wait exceeds its own by at least
  ``straggler_corroboration`` of that excess: a rank nobody waits for delays nobody.

Only durations are used, never the clocks: the verdict is the same with any clock offset.
Each rank is named once, in its phase of largest excess; most excess first.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from steptrace.across.ranks.model import RankStep, Straggler
from steptrace.across.ranks.thresholds import RankThresholds

UNLABELED = "(unlabeled)"


def common_steps(steps: Mapping[int, Sequence[RankStep]]) -> dict[int, list[RankStep]]:
    """Per rank, the steps every rank has, in one order (by number, else by position)."""
    if any(s.number is None for found in steps.values() for s in found):
        n = min((len(found) for found in steps.values()), default=0)
        return {r: list(found[:n]) for r, found in steps.items()}
    shared = set.intersection(*({s.number for s in found} for found in steps.values()))
    return {
        r: sorted((s for s in found if s.number in shared), key=lambda s: s.number or 0)
        for r, found in steps.items()
    }


def _phase_ms(step: RankStep, phase: str) -> float:
    if phase == UNLABELED:
        return step.unlabeled_ms or 0.0
    return step.phases_ms.get(phase, 0.0)


def find_stragglers(
    steps: Mapping[int, Sequence[RankStep]],
    arrivals: Mapping[int, tuple[int | None, int]],
    limits: RankThresholds,
) -> tuple[Straggler, ...]:
    """Straggling ranks (see the module's contract); ``arrivals``: (times last, of)."""
    table = common_steps(steps)
    ranks = sorted(table)
    n_steps = min((len(s) for s in table.values()), default=0)
    if len(ranks) < 2 or n_steps == 0:
        return ()
    walls = [statistics.median(table[r][k].wall_ms for r in ranks) for k in range(n_steps)]
    floors = [max(limits.straggler_floor_ms, limits.straggler_step_share * w) for w in walls]
    phases = sorted({p for r in ranks for s in table[r] for p in s.phases_ms} | {UNLABELED})
    found = []
    for rank in ranks:
        best = None
        for phase in phases:
            candidate = _straggler(rank, phase, table, ranks, floors, limits, arrivals)
            if candidate is not None and (best is None or candidate.excess_ms > best.excess_ms):
                best = candidate
        if best is not None:
            found.append(best)
    return tuple(sorted(found, key=lambda s: -s.excess_ms))


def _straggler(
    rank: int,
    phase: str,
    table: Mapping[int, list[RankStep]],
    ranks: list[int],
    floors: list[float],
    limits: RankThresholds,
    arrivals: Mapping[int, tuple[int | None, int]],
) -> Straggler | None:
    others = [r for r in ranks if r != rank]
    excess = [
        _phase_ms(table[rank][k], phase)
        - statistics.median(_phase_ms(table[r][k], phase) for r in others)
        for k in range(len(floors))
    ]
    late = sum(e > f for e, f in zip(excess, floors, strict=True))
    median_excess = statistics.median(excess)
    if median_excess <= statistics.median(floors):
        return None
    if late < limits.straggler_consistency * len(floors):
        return None
    own = [table[rank][k].comm_wait_ms for k in range(len(floors))]
    theirs = [[table[r][k].comm_wait_ms for r in others] for k in range(len(floors))]
    if any(w is None for w in own) or any(w is None for ws in theirs for w in ws):
        return None  # no matched collective to see the others wait: no claim
    own_wait = statistics.median(w or 0.0 for w in own)
    others_wait = statistics.median(statistics.median(w or 0.0 for w in ws) for ws in theirs)
    if others_wait - own_wait < limits.straggler_corroboration * median_excess:
        return None
    times_last, of = arrivals.get(rank, (None, 0))
    return Straggler(
        rank=rank, phase=phase, excess_ms=median_excess, steps_late=late, steps=len(floors),
        others_wait_ms=others_wait, own_wait_ms=own_wait, times_last=times_last, of=of,
    )  # fmt: skip
