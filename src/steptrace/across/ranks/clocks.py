"""Clock offsets between ranks, from the ends of matched collectives.

Contract: ``align(matched, origins) -> ClockAlignment``. A rank's absolute time is its
``baseTimeNanoseconds`` (when written) plus its ``ts`` (older traces write epoch
microseconds in ``ts`` and no base); ranks on different hosts are only as aligned as their
clocks. The reference is the consensus clock: the rank whose offset from the lowest rank is
the median of all ranks' (the lowest rank itself with two ranks), so that one shifted
rank, even rank 0, is the one shown shifted. The ranks of one collective finish it nearly
together, so each rank's offset is the median over the matched blocking collectives it
shares with the reference rank of (its end - the reference's end), in integer nanoseconds,
moved into the bounds causality sets when they are consistent (no rank ends a collective
before every rank has started it: offset >= its start - the reference's end, and
<= its end - the reference's start, over every collective); an offset the data cannot tell
from zero (zero within those bounds, the median within three deviations of zero) is zero:
ranks on one host are not shifted by the noise of their collective ends. A rank's aligned
time is its time minus its offset. The residual of a rank is the median
absolute deviation of its remaining differences; the spread is the largest residual.
Arrival order is trusted only when that spread is under the threshold: the
``ClockAlignment.reason`` says why or why not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from steptrace.across.ranks.figures import ClockAlignment, RankClock
from steptrace.across.ranks.matching import Matched


def median_ns(values: Sequence[int]) -> int:
    """The median in integer nanoseconds (the mean of the middle two, floored)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) // 2


def align(
    matched: Sequence[Matched],
    origins: Mapping[int, tuple[int | None, int]],
    residual_limit_us: float,
    hosts: Mapping[int, str | None] | None = None,
) -> tuple[ClockAlignment, dict[int, int]]:
    """Offsets (ns, by rank; absent: not estimable) and what they are worth.

    ``origins``: per rank, its ``baseTimeNanoseconds`` (or None) and the absolute ns of its
    first event; ``hosts``: per rank, the host its trace names (``host_name``), if any.
    """
    blocking = [m for m in matched if all(i.blocking for _, i in m.members)]
    ranks = sorted(origins)
    having = sorted({r for m in blocking for r, _ in m.members})
    reference = having[0] if having else None
    differences, bounds = _differences(blocking, ranks, reference)
    first = {r: median_ns(d) for r, d in differences.items() if d}
    if len(first) > 2:  # the reference: the rank of the median offset, the consensus clock
        middle = median_ns(list(first.values()))
        reference = min(first, key=lambda r: (abs(first[r] - middle), r))
        differences, bounds = _differences(blocking, ranks, reference)
    offsets = {r: _estimate(d, bounds[r]) for r, d in differences.items() if d}
    named = hosts or {}
    shared = _shared_clocks(offsets, named, reference) and _causal(blocking, named)
    if shared and reference is not None:
        offsets = _by_host(offsets, named, reference)
    residuals = {r: _mad(d, offsets[r]) for r, d in differences.items() if d and r != reference}
    spread_ns = max(residuals.values()) if residuals else None
    one_host = shared and len({named.get(r) for r in ranks}) == 1
    trusted, reason = _verdict(ranks, reference, offsets, spread_ns, residual_limit_us)
    if one_host and not any(r not in offsets for r in ranks):
        trusted, reason = True, _ONE_HOST + _disagree(spread_ns)
    aligned_origins = [o - offsets.get(r, 0) for r, (_, o) in origins.items()]
    clocks = ClockAlignment(
        reference_rank=reference,
        origin_ns=min(aligned_origins) if aligned_origins else 0,
        offsets_applied=bool(offsets),
        residual_spread_us=None if spread_ns is None else spread_ns / 1000,
        trusted=trusted,
        reason=reason,
        ranks=tuple(
            RankClock(
                rank=r,
                base_time_ns=origins[r][0],
                origin_ns=origins[r][1],
                offset_us=offsets[r] / 1000 if r in offsets else None,
                collectives_used=len(differences[r]),
                residual_us=residuals[r] / 1000 if r in residuals else None,
            )
            for r in ranks
        ),
    )
    return clocks, offsets


def _differences(
    blocking: Sequence[Matched], ranks: Sequence[int], reference: int | None
) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Per rank: its end minus the reference's, per collective; and the causal bounds."""
    differences: dict[int, list[int]] = {r: [] for r in ranks}
    bounds: dict[int, list[int]] = {r: [-(2**63), 2**63] for r in ranks}
    for m in blocking:
        on = dict(m.members)
        if reference in on:
            ref = on[reference]
            for r, i in on.items():
                differences[r].append(i.end_ns - ref.end_ns)
                # no rank ends a collective before every rank has started it
                bounds[r][0] = max(bounds[r][0], i.start_ns - ref.end_ns)
                bounds[r][1] = min(bounds[r][1], i.end_ns - ref.start_ns)
    return differences, bounds


def _estimate(differences: list[int], bounds: list[int]) -> int:
    """The median of the end differences; zero when the data cannot tell it from zero (zero
    within the causal bounds and the median within three deviations of it); else moved into
    the bounds when they are consistent."""
    offset = median_ns(differences)
    lo, hi = bounds
    if lo <= 0 <= hi and abs(offset) <= _NOT_SIGNIFICANT * _mad(differences, offset):
        return 0
    return min(max(offset, lo), hi) if lo <= hi else offset


_NOT_SIGNIFICANT = 3  # deviations: an offset this close to zero is not told from it
_CAUSAL_SLACK_NS = 10_000  # timestamps' jitter allowed when one clock is checked
_ONE_HOST = (
    "every rank's trace names one host (host_name): one clock, read as it is, no offset applied"
)


def _shared_clocks(
    offsets: Mapping[int, int], hosts: Mapping[int, str | None], reference: int | None
) -> bool:
    """Whether every rank's host is known, so that the ranks of one host share its clock."""
    return reference is not None and bool(offsets) and all(hosts.get(r) for r in offsets)


def _by_host(
    offsets: Mapping[int, int], hosts: Mapping[int, str | None], reference: int
) -> dict[int, int]:
    """One offset per host, the median of its ranks' (zero on the reference's host): the
    processes of one host read one clock, so that their own offsets are only noise."""
    of_host: dict[str | None, list[int]] = {}
    for r, offset in offsets.items():
        of_host.setdefault(hosts[r], []).append(offset)
    host_offset = {h: median_ns(found) for h, found in of_host.items()}
    host_offset[hosts[reference]] = 0
    return {r: host_offset[hosts[r]] for r in offsets}


def _causal(blocking: Sequence[Matched], hosts: Mapping[int, str | None]) -> bool:
    """Whether each host's clock, read as it is, keeps every collective causal among its
    ranks: none ends one before every other has started it (else the names lie: several
    machines under one name, or a trace whose times were moved)."""
    for m in blocking:
        groups: dict[str | None, list[tuple[int, int]]] = {}
        for r, i in m.members:
            groups.setdefault(hosts.get(r), []).append((i.start_ns, i.end_ns))
        for spans in groups.values():
            if min(e for _, e in spans) + _CAUSAL_SLACK_NS < max(s for s, _ in spans):
                return False
    return True


def _disagree(spread_ns: int | None) -> str:
    if spread_ns is None:
        return ""
    return (
        f"; collective ends disagree by {spread_ns / 1000:.0f} µs (median absolute "
        "deviation, worst rank): the machine's load, not its clock"
    )


def _mad(differences: list[int], offset: int) -> int:
    return median_ns([abs(d - offset) for d in differences])


def _verdict(
    ranks: list[int],
    reference: int | None,
    offsets: Mapping[int, int],
    spread_ns: int | None,
    limit_us: float,
) -> tuple[bool, str]:
    if len(ranks) < 2:
        return False, "one rank: no clocks to compare"
    if reference is None:
        return False, "no collective was matched across ranks: the clocks cannot be compared"
    unknown = [r for r in ranks if r not in offsets]
    if unknown:
        listed = ", ".join(map(str, unknown[:10]))
        return False, f"ranks {listed} share no matched collective with rank {reference}"
    if spread_ns is None or spread_ns > limit_us * 1000:
        shown = "unknown" if spread_ns is None else f"{spread_ns / 1000:.0f} µs"
        return False, (
            f"after alignment, collective ends still disagree by {shown} (median absolute "
            f"deviation, worst rank), more than {limit_us:.0f} µs: arrival order is not "
            "claimed"
        )
    return True, (
        f"offsets from collective ends; residual {spread_ns / 1000:.1f} µs (worst rank), "
        f"under {limit_us:.0f} µs"
    )
