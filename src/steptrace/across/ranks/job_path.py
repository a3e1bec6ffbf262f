"""The job's critical path per step: which rank and phase bound it, joined through the
matched collectives.

Contract: ``job_path(data, timed) -> tuple[JobStepBound, ...]``. A collective ends on
every rank when its last rank arrives, so a step's last matched collective (the latest
issued on its last rank) hands the job's path to that rank: the rank that arrived last
(``Timing.last_rank`` on the aligned clocks; else the one that waited least, the waits
being durations) bounds the step, and on that rank's own critical path
(``RankParts.critical``) the phase with the most time names what bounded it. A step
without a matched collective is bounded by the rank whose own path is longest: nothing
joins the ranks there (``via`` says which). Steps are joined by number, those every rank
has."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from steptrace.across.ranks.figures import COLLECTIVE, LONGEST, UNLABELED_PHASE, JobStepBound
from steptrace.across.ranks.matrix import RankCriticalStep, RankData
from steptrace.across.ranks.waits import Timing


def job_path(data: Mapping[int, RankData], timed: Sequence[Timing]) -> tuple[JobStepBound, ...]:
    """Per step every rank has, what bounds it (see module)."""
    paths = {r: {s.number: s for s in d.parts.critical or ()} for r, d in data.items()}
    if not paths or any(not p for p in paths.values()):
        return ()
    numbers = sorted(set.intersection(*(set(p) for p in paths.values())), key=_order)
    last = _last_collectives(data, timed)
    found = []
    for number in numbers:
        closing = last.get(number)
        if closing is not None:
            rank, via = _arrived_last(closing), COLLECTIVE
        else:
            rank = max(paths, key=lambda r: paths[r][number].length_ms)
            via, closing = LONGEST, None
        step = paths[rank][number]
        phase, on_ms = _phase(step)
        waited = sum(w for r, w in closing.wait_ns.items() if r != rank) / 1e6 if closing else None
        found.append(
            JobStepBound(
                step=step.step,
                number=number,
                rank=rank,
                phase=phase,
                phase_on_path_ms=on_ms,
                length_ms=step.length_ms,
                via=via,
                collective=closing.kind if closing else None,
                others_waited_ms=waited,
            )
        )
    return tuple(found)


def _arrived_last(t: Timing) -> int:
    """The rank that arrived last: by the aligned clocks, else the one that waited least
    (the waits are durations: no clock needed)."""
    if t.last_rank is not None:
        return t.last_rank
    return min(t.wait_ns, key=lambda r: (t.wait_ns[r], r))


def _order(number: int | None) -> int:
    return -1 if number is None else number


def _phase(step: RankCriticalStep) -> tuple[str, float]:
    if not step.phases_ms:
        return UNLABELED_PHASE, 0.0
    name = max(step.phases_ms, key=lambda p: (step.phases_ms[p], p))
    return name, step.phases_ms[name]


def _last_collectives(
    data: Mapping[int, RankData], timed: Sequence[Timing]
) -> dict[int | None, Timing]:
    """Per step number: the matched collective its last rank issued last in that step."""
    found: dict[int | None, tuple[int, Timing]] = {}
    for t in timed:
        last = _arrived_last(t)
        if last not in data:
            continue
        rank = data[last]
        issued = t.issued_ns[last]
        for step in rank.steps:
            lo = rank.clock_ns + round(step.start_us * 1000)
            hi = rank.clock_ns + round(step.end_us * 1000)
            if lo <= issued < hi:
                if step.number not in found or found[step.number][0] <= issued:
                    found[step.number] = (issued, t)
                break
    return {n: t for n, (_, t) in found.items()}
