"""Wait versus transfer in every matched collective, and the summary per kind and group.

Contract: ``timings(matched, offsets, trusted) -> tuple[Timing, ...]`` over the matched
collectives whose time includes the waiting on every rank (``Instance.blocking``). The
transfer is the shortest duration across the ranks (the last to arrive waits for nobody);
each rank's wait is its duration minus that, which is also the last arrival minus its own
arrival when the ends coincide, and needs no clock. Who arrived last (latest aligned
start) is only named when the clocks are trusted. ``summaries`` sums them per (kind,
process group), with the bandwidths: algbw = bytes / transfer, busbw = algbw x 2(n-1)/n
for all-reduce, x (n-1)/n for all-gather, reduce-scatter and all-to-all (nccl-tests'
convention), bytes being the median message size of the ranks (``None`` when unknown).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

import msgspec

from steptrace.across.ranks.figures import CollectiveSummary, Unmatched
from steptrace.across.ranks.matching import Matched, Queue, QueueInfo
from steptrace.analysis.communication.collectives import BUS_FACTOR, CollectiveSource, Instance


class Timing(msgspec.Struct, frozen=True):
    """One matched collective's transfer, each rank's wait, and who came last."""

    kind: str
    process_group: str
    transfer_ns: int
    wait_ns: dict[int, int]  # by rank
    issued_ns: dict[int, int]  # by rank, on its own clock: the step it belongs to
    last_rank: int | None  # latest aligned start; None when clocks are not trusted
    nbytes: int | None
    # latest aligned start by more than the clocks' uncertainty (untrusted clocks); else None
    clearly_last: int | None = None


def timings(
    matched: Sequence[Matched],
    offsets: Mapping[int, int],
    trusted: bool,
    uncertainty_ns: int | None = None,
) -> tuple[Timing, ...]:
    """Each blocking collective's transfer and waits; who came last when the clocks are
    trusted, and, when they are not, who came last by more than ``uncertainty_ns``."""
    found = []
    for m in matched:
        if not all(i.blocking for _, i in m.members):
            continue
        durations = {r: i.end_ns - i.start_ns for r, i in m.members}
        transfer = min(durations.values())
        last = clearly = None
        if all(r in offsets for r, _ in m.members):
            arrived = sorted((i.start_ns - offsets[r], -r) for r, i in m.members)
            if trusted:
                last = -arrived[-1][1]
            elif uncertainty_ns is not None and len(arrived) > 1:
                margin = arrived[-1][0] - arrived[-2][0]
                clearly = -arrived[-1][1] if margin > uncertainty_ns else None
        sizes = [i.nbytes for _, i in m.members if i.nbytes is not None]
        found.append(
            Timing(
                kind=m.kind,
                process_group=m.process_group,
                transfer_ns=transfer,
                wait_ns={r: d - transfer for r, d in durations.items()},
                issued_ns={r: i.issued_ns for r, i in m.members},
                last_rank=last,
                clearly_last=clearly,
                nbytes=int(statistics.median_low(sizes)) if len(sizes) == len(m.members) else None,
            )
        )
    return tuple(found)


def bandwidths(timing: Timing, ranks: int) -> tuple[float | None, float | None]:
    """(algbw, busbw) in GB/s (bytes per ns), or None without a size or a transfer time."""
    if timing.nbytes is None or timing.transfer_ns <= 0:
        return None, None
    algbw = timing.nbytes / timing.transfer_ns
    factor = BUS_FACTOR.get(timing.kind)
    bus = algbw * factor * (ranks - 1) / ranks if factor is not None and ranks > 0 else algbw
    return algbw, bus


def summaries(
    instances: Mapping[int, Sequence[Instance]],
    matched: Sequence[Matched],
    timed: Sequence[Timing],
    queues: Mapping[Queue, QueueInfo],
) -> tuple[CollectiveSummary, ...]:
    """One summary per (kind, process group), in the order first seen."""
    sources: dict[tuple[str, str], Counter[CollectiveSource]] = defaultdict(Counter)
    sizes: dict[tuple[str, str], int | None] = {}
    for found in instances.values():
        for i in found:
            sources[i.kind, i.process_group][i.source] += 1
            sizes.setdefault((i.kind, i.process_group), i.group_size)
    counts: Counter[tuple[str, str]] = Counter()
    keys: dict[tuple[str, str], str] = {}
    for (group, _), info in queues.items():
        for kind, n in info.kind_counts.items():
            counts[kind, group] += n
            keys.setdefault((kind, group), info.match_key)
    n_matched = Counter((m.kind, m.process_group) for m in matched)
    members = {(m.kind, m.process_group): len(m.members) for m in matched}
    sent: dict[tuple[str, str], dict[int, int]] = defaultdict(lambda: defaultdict(int))
    unsized: set[tuple[str, str]] = set()
    for m in matched:
        for r, i in m.members:
            if i.nbytes is None:
                unsized.add((m.kind, m.process_group))
            else:
                sent[m.kind, m.process_group][r] += i.nbytes
    by_key: dict[tuple[str, str], list[Timing]] = defaultdict(list)
    for t in timed:
        by_key[t.kind, t.process_group].append(t)
    return tuple(
        _summary(
            kind,
            group,
            counts[kind, group],
            n_matched[kind, group],
            by_key[kind, group],
            sizes[kind, group] or members.get((kind, group)),
            sources[kind, group],
            keys.get((kind, group), "order"),
            {} if (kind, group) in unsized else dict(sorted(sent[kind, group].items())),
        )
        for kind, group in sources
    )


def _summary(
    kind: str,
    group: str,
    count: int,
    matched: int,
    timed: list[Timing],
    size: int | None,
    sources: Counter[CollectiveSource],
    key: str,
    sent: dict[int, int],
) -> CollectiveSummary:
    waits: dict[int, int] = defaultdict(int)
    for t in timed:
        for r, w in t.wait_ns.items():
            waits[r] += w
    ranks = len(timed[0].wait_ns) if timed else 0
    bws = [bandwidths(t, size or ranks) for t in timed]
    alg = [a for a, _ in bws if a is not None]
    bus = [b for _, b in bws if b is not None]
    sized = [t.nbytes for t in timed if t.nbytes is not None]
    return CollectiveSummary(
        kind=kind,
        process_group=group,
        group_size=size,
        source=sources.most_common(1)[0][0],
        match_key="seq" if key == "seq" else "order",
        count=count,
        matched=matched,
        transfer_ms=sum(t.transfer_ns for t in timed) / 1e6,
        wait_ms={r: w / 1e6 for r, w in sorted(waits.items())},
        bytes_per_instance=int(statistics.median_low(sized)) if sized else None,
        algbw_gbps=statistics.median(alg) if alg else None,
        busbw_gbps=statistics.median(bus) if bus else None,
        bytes_by_rank=sent,
    )


def unmatched_total(unmatched: Sequence[Unmatched]) -> int:
    return sum(u.instances for u in unmatched)
