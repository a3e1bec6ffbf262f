"""The same collective call on every rank of its group: instances matched across ranks.

Contract: ``match(instances, world_size) -> Matching``. Instances are queued per rank by
process group (gloo events and kernels found alone queue apart: their own group, ``gloo``
or a stream); within a queue they pair by ``Seq`` when every instance has one, else by
their order (the order a process group numbers its calls in). A call is matched when
every member of its group recorded it, with one kind. Every other instance is reported
(``Unmatched``, counted once per rank that recorded it) with its reason: the group is
larger than the ranks given, it is missing on some ranks, the ranks' counts differ,
different kinds sit at the same position, or different sizes of a collective whose message
has one size on every rank (all-reduce, broadcast, all-gather, reduce-scatter, reduce): a
pairing by order that lost its place. Nothing is dropped silently.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence

import msgspec

from steptrace.across.ranks.figures import MatchKey, Unmatched
from steptrace.analysis.communication.collectives import Instance

Queue = tuple[str, str]  # (process group, lane class)


class Matched(msgspec.Struct, frozen=True):
    """One collective call found on every member of its group."""

    kind: str
    process_group: str
    key: str  # "seq 17" or "#17"
    members: tuple[tuple[int, Instance], ...]  # (rank, its instance), by rank


class QueueInfo(msgspec.Struct, frozen=True):
    kind_counts: dict[str, int]  # per kind: the most instances one rank recorded
    match_key: MatchKey


class Matching(msgspec.Struct, frozen=True):
    matched: tuple[Matched, ...]
    unmatched: tuple[Unmatched, ...]
    queues: dict[Queue, QueueInfo]


def queue_of(instance: Instance) -> Queue:
    if instance.source == "gloo":
        return (instance.process_group, "gloo")
    if instance.source == "nccl_kernel":
        return (instance.process_group, instance.lane)
    return (instance.process_group, "")


def match(instances: Mapping[int, Sequence[Instance]], world_size: int | None) -> Matching:
    """Pair every rank's instances (see the module's contract)."""
    queued: dict[Queue, dict[int, list[Instance]]] = defaultdict(lambda: defaultdict(list))
    for rank, found in instances.items():
        for instance in found:
            queued[queue_of(instance)][rank].append(instance)
    matched: list[Matched] = []
    lost = _Lost()
    infos: dict[Queue, QueueInfo] = {}
    for queue, per_rank in queued.items():
        members = _members(per_rank, world_size, set(instances))
        infos[queue] = _info(per_rank)
        if isinstance(members, str):  # the group cannot be matched at all
            for rank, found in per_rank.items():
                for k, instance in enumerate(found):
                    lost.add(instance, rank, members, _key(instance, k, "order"))
            continue
        matched += _match_queue(queue, per_rank, members, infos[queue].match_key, lost)
    return Matching(tuple(matched), lost.entries(), infos)


def _info(per_rank: Mapping[int, list[Instance]]) -> QueueInfo:
    counts: dict[str, int] = {}
    for found in per_rank.values():
        for kind, n in Counter(i.kind for i in found).items():
            counts[kind] = max(counts.get(kind, 0), n)
    every = [i for found in per_rank.values() for i in found]
    key: MatchKey = "seq" if all(i.seq is not None for i in every) else "order"
    return QueueInfo(counts, key)


def _members(
    per_rank: Mapping[int, list[Instance]], world: int | None, given: set[int]
) -> tuple[int, ...] | str:
    """The group's ranks, or why its calls cannot be matched."""
    every = [i for found in per_rank.values() for i in found]
    listed = next((i.group_ranks for i in every if i.group_ranks), None)
    size = next((i.group_size for i in every if i.group_size), None)
    if listed is not None:
        expected = set(listed)
    elif size is not None and world is not None and size < world:
        if len(per_rank) < size:
            return (
                f"group larger than the ranks given ({size} ranks in the group, "
                f"{len(per_rank)} recorded it)"
            )
        return tuple(sorted(per_rank))
    elif world:  # the world's ranks, never listed: its size is the trace's word (10**9)
        present = {rank for rank in given if 0 <= rank < world}
        if len(present) < world:
            return (
                f"group larger than the ranks given ({world} ranks in the group, "
                f"{len(present)} given)"
            )
        return tuple(sorted(present))
    else:
        expected = set(given)
    present = expected & given
    if len(present) < len(expected):
        return (
            f"group larger than the ranks given ({len(expected)} ranks in the group, "
            f"{len(present)} given)"
        )
    return tuple(sorted(present))


def _match_queue(
    queue: Queue,
    per_rank: Mapping[int, list[Instance]],
    members: tuple[int, ...],
    how: MatchKey,
    lost: _Lost,
) -> list[Matched]:
    keyed: dict[str, dict[int, Instance]] = defaultdict(dict)
    for rank, found in per_rank.items():
        if rank not in members:
            for k, instance in enumerate(found):
                key = _key(instance, k, how)
                lost.add(instance, rank, "recorded by a rank outside its group", key)
            continue
        for k, instance in enumerate(found):
            keyed[_key(instance, k, how)][rank] = instance
    counts = {r: len(per_rank.get(r, ())) for r in members}
    differ = len(set(counts.values())) > 1
    matched = []
    for key, on in keyed.items():
        kinds = {i.kind for i in on.values()}
        if len(on) < len(members):
            reason = "missing on some ranks of the group"
            if how == "order" and differ:
                shown = ", ".join(f"rank {r}: {n}" for r, n in sorted(counts.items()))
                reason = f"counts differ per rank ({shown}): calls past the shortest are unpaired"
            for rank, instance in on.items():
                lost.add(instance, rank, reason, key)
        elif len(kinds) > 1:
            for rank, instance in on.items():
                lost.add(instance, rank, "different kinds at the same position", key)
        elif _sizes_differ(kinds, on.values()):
            for rank, instance in on.items():
                lost.add(instance, rank, "different sizes at the same position", key)
        else:
            members_found = tuple(sorted(on.items()))
            matched.append(Matched(kinds.pop(), queue[0], key, members_found))
    return matched


# Collectives whose message has one size on every rank: a difference means the pairing is wrong.
_SAME_SIZE = frozenset({"all_reduce", "broadcast", "all_gather", "reduce_scatter", "reduce"})


def _sizes_differ(kinds: set[str], found: Iterable[Instance]) -> bool:
    sizes = [i.nbytes for i in found]
    known = {n for n in sizes if n is not None}
    return bool(kinds & _SAME_SIZE) and None not in sizes and len(known) > 1


def _key(instance: Instance, position: int, how: MatchKey) -> str:
    return f"seq {instance.seq}" if how == "seq" else f"#{position}"


class _Lost:
    """Unmatched instances, gathered by (kind, group, reason)."""

    def __init__(self) -> None:
        self._by: dict[tuple[str, str, str], tuple[int, set[int], str]] = {}

    def add(self, instance: Instance, rank: int, reason: str, key: str) -> None:
        at = (instance.kind, instance.process_group, reason)
        count, ranks, first = self._by.get(at, (0, set(), key))
        ranks.add(rank)
        self._by[at] = (count + 1, ranks, first)

    def entries(self) -> tuple[Unmatched, ...]:
        return tuple(
            Unmatched(
                kind=kind,
                process_group=group,
                reason=reason,
                instances=count,
                ranks=tuple(sorted(ranks)),
                first_key=first,
            )
            for (kind, group, reason), (count, ranks, first) in self._by.items()
        )
