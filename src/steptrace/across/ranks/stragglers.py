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

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from steptrace.across.ranks.figures import RankStep, Straggler
from steptrace.across.ranks.rank_thresholds import RankThresholds

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
    arrivals: Mapping[int, tuple[int | None, int, int | None]],
    limits: RankThresholds,
) -> tuple[Straggler, ...]:
    """Straggling ranks (see the module's contract); ``arrivals``: (times last, of, times
    last beyond the clocks' uncertainty)."""
    table = common_steps(steps)
    ranks = sorted(table)
    n_steps = min((len(s) for s in table.values()), default=0)
    if len(ranks) < 2 or n_steps == 0:
        return ()
    rows = [table[r][:n_steps] for r in ranks]
    walls = np.median(np.array([[s.wall_ms for s in row] for row in rows]), axis=0)
    floors = np.maximum(limits.straggler_floor_ms, limits.straggler_step_share * walls)
    waits = np.array(
        [[np.nan if s.comm_wait_ms is None else s.comm_wait_ms for s in row] for row in rows]
    )
    phases = sorted({p for row in rows for s in row for p in s.phases_ms} | {UNLABELED})
    times = {p: np.array([[_phase_ms(s, p) for s in row] for row in rows]) for p in phases}
    found = []
    for k, rank in enumerate(ranks):
        best = None
        for phase in phases:
            candidate = _straggler(k, rank, times[phase], waits, floors, limits)
            if candidate is not None and (best is None or candidate[1] > best[1]):
                best = (phase, *candidate)
        if best is not None:
            phase, excess, late, own, others = best
            times_last, of, beyond = arrivals.get(rank, (None, 0, None))
            found.append(
                Straggler(
                    rank=rank,
                    phase=phase,
                    excess_ms=excess,
                    steps_late=late,
                    steps=n_steps,
                    others_wait_ms=others,
                    own_wait_ms=own,
                    times_last=times_last,
                    times_last_beyond_uncertainty=beyond,
                    of=of,
                )
            )
    return tuple(sorted(found, key=lambda s: -s.excess_ms))


def _straggler(
    k: int,
    rank: int,
    times: NDArray[np.float64],
    waits: NDArray[np.float64],
    floors: NDArray[np.float64],
    limits: RankThresholds,
) -> tuple[float, int, float, float] | None:
    """(excess, steps late, own wait, others' wait) of row ``k`` in one phase, or None."""
    others = np.delete(np.arange(times.shape[0]), k)
    excess = times[k] - np.median(times[others], axis=0)
    late = int((excess > floors).sum())
    median_excess = float(np.median(excess))
    if median_excess <= float(np.median(floors)):
        return None
    if late < limits.straggler_consistency * floors.size:
        return None
    if np.isnan(waits[k]).any() or np.isnan(waits[others]).any():
        return None  # no matched collective to see the others wait: no claim
    own_wait = float(np.median(waits[k]))
    others_wait = float(np.median(np.median(waits[others], axis=0)))
    if others_wait - own_wait < limits.straggler_corroboration * median_excess:
        return None
    return median_excess, late, own_wait, others_wait
