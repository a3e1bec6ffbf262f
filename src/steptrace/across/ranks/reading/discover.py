"""Which rank each trace is, and whether the traces are one job.

Contract: ``identify(origins) -> Identified``: one rank number per trace (each a
``RankOrigin``: where it was read, its file name, its ``distributedInfo``), from (first
match) its ``distributedInfo.rank``, a rank number in its file name (``rank-3``, ``rank3``,
``_rank_3``, ``worker3``), or the order the files were given, after the numbers the other
traces say (a warning names them). Ranks missing from the world size (8 said, 6 given)
are warned about; a rank given twice, ranks of different world sizes or backends
(different jobs), or a rank beyond the world size raise ``TraceError``: nothing sensible
can be compared then.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import count, islice

import msgspec

from steptrace.across.ranks.figures import RankSource
from steptrace.across.ranks.reading.said import differing
from steptrace.errors import TraceError
from steptrace.trace.table import Distributed, TraceInfo

_RANK_IN_NAME = re.compile(r"(?:rank|worker)[-_]?(\d{1,6})(?!\d)", re.IGNORECASE)


class RankOrigin(msgspec.Struct, frozen=True, kw_only=True):
    """Where a rank trace was read and what it says about its rank: all ``identify`` needs."""

    location: str  # as given: a path, or a URL (s3://..., memory://...)
    name: str  # the file name, where a rank number may be
    distributed: Distributed | None

    @classmethod
    def of(cls, info: TraceInfo, location: str | None = None) -> RankOrigin:
        where = location if location is not None else str(info.path)
        name = where.rstrip("/").rsplit("/", 1)[-1] if location is not None else info.path.name
        return cls(location=where, name=name, distributed=info.distributed)


class RankIdentity(msgspec.Struct, frozen=True):
    rank: int
    source: RankSource
    index: int  # the trace's position in the list given


class Identified(msgspec.Struct, frozen=True):
    ranks: tuple[RankIdentity, ...]  # in the order given
    world_size: int | None
    backend: str | None
    warnings: tuple[str, ...]


def rank_in_name(name: str) -> int | None:
    """The last ``rank<N>`` / ``worker<N>`` number in a file name, if any."""
    found = _RANK_IN_NAME.findall(name)
    return int(found[-1]) if found else None


def identify(infos: Sequence[RankOrigin]) -> Identified:
    """Rank numbers for the traces of one job (see the module's contract)."""
    if not infos:
        raise TraceError("no rank traces given")
    warnings: list[str] = []
    world, backend = _job(infos)
    by_info = [i.distributed.rank if i.distributed else None for i in infos]
    by_name = [rank_in_name(i.name) for i in infos]
    said: list[tuple[int, RankSource] | None] = [
        (r, "distributedInfo") if r is not None else (n, "file name") if n is not None else None
        for r, n in zip(by_info, by_name, strict=True)
    ]
    taken = {number for number, _ in filter(None, said)}
    free = (number for number in count() if number not in taken)  # for the others, in order
    identities = [
        RankIdentity(*known, k) if known is not None else RankIdentity(next(free), "file order", k)
        for k, known in enumerate(said)
    ]
    if any(i.source == "file name" for i in identities):
        warnings.append(
            "some traces have no distributedInfo: their rank was read from the file name"
        )
    unnamed = [i for i in identities if i.source == "file order"]
    if len(unnamed) == len(identities):
        warnings.append(
            "the traces do not say their rank (no distributedInfo, no rank number in the "
            f"file name): ranks were numbered in the order given, 0 to {len(infos) - 1}"
        )
    elif unnamed:
        named = ", ".join(f"{infos[i.index].name} -> {i.rank}" for i in unnamed[:3])
        more = f" and {len(unnamed) - 3} more" if len(unnamed) > 3 else ""
        warnings.append(
            f"{len(unnamed)} of {len(infos)} traces do not say their rank (no "
            "distributedInfo, no rank number in the file name): numbered in the order given, "
            f"after the ranks the others say ({named}{more})"
        )
    _check_duplicates(identities, infos)
    warnings += _missing(identities, world, infos)
    return Identified(tuple(identities), world, backend, tuple(warnings))


def _job(infos: Sequence[RankOrigin]) -> tuple[int | None, str | None]:
    said = [i.distributed for i in infos if i.distributed]
    worlds = {d.world_size for d in said if d.world_size}
    backends = {d.backend for d in said if d.backend}
    problem = differing(worlds, "world size") or differing(backends, "backend")
    if problem:
        raise TraceError(f"the traces are not one job: {problem} (give the traces of one run)")
    return (next(iter(worlds)) if worlds else None), (next(iter(backends)) if backends else None)


def _check_duplicates(ranks: list[RankIdentity], infos: Sequence[RankOrigin]) -> None:
    seen: dict[int, int] = {}
    for identity in ranks:
        if identity.rank in seen:
            first, second = infos[seen[identity.rank]].location, infos[identity.index].location
            raise TraceError(
                f"rank {identity.rank} is given twice ({first} and {second}, by "
                f"{identity.source}): give one trace per rank"
            )
        seen[identity.rank] = identity.index


def _missing(
    ranks: list[RankIdentity], world: int | None, infos: Sequence[RankOrigin]
) -> list[str]:
    if world is None:
        return []
    numbers = sorted(r.rank for r in ranks)
    beyond = [r for r in numbers if r >= world]
    if beyond:
        raise TraceError(
            f"rank {beyond[0]} is beyond the world size {world} the traces give "
            f"({infos[0].name}): not one job"
        )
    # the first ten absent numbers, found without listing the world (its size is the
    # trace's word: 10**9 must not take the machine's memory)
    absent = world - len(numbers)
    if not absent:
        return []
    given = set(numbers)
    first = list(islice((r for r in range(world) if r not in given), 10))
    shown = ", ".join(map(str, first)) + (f" and {absent - 10} more" if absent > 10 else "")
    return [
        f"world size {world}, {len(numbers)} rank traces given: ranks {shown} are missing; "
        "collectives of groups that include them cannot be matched"
    ]
