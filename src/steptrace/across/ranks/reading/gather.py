"""The per-rank stage over many ranks: each summarized by an executor, failures kept apart.

Contract: ``gather(locations, executor, done) -> Gathered``: every location's summary
(``work.summarize`` of the parts asked for, run by the executor: here, in a process pool,
on a Dask cluster; a summary of another version is a failure), in
the order the locations were given whatever order they finished in (so that the
cross-rank reduce, and the report, are the same byte for byte on every executor), and the
ranks that could not be analyzed, each with one line naming its file. Relative paths are
sent absolute (a remote Dask worker runs in another folder) and the results named as given.
``done(name)`` is called as each rank finishes (a progress display).

What happens to a job with failed ranks (``kept``): the report is made of the ranks that
remain when at least ``MIN_RANKS`` (2) do, with one warning per failed rank
(``failure_warnings``); with fewer, one ``TraceError`` naming the failed files.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from steptrace.across.ranks.matrix import DEFAULT_PARTS, RANK_DATA_VERSION, Part, RankData
from steptrace.across.ranks.reading.discover import rank_in_name
from steptrace.across.ranks.reading.executors import Executor
from steptrace.across.ranks.reading.work import RankFailure, failure, summarize
from steptrace.errors import TraceError
from steptrace.trace.read.remote import is_url

MIN_RANKS = 2  # fewer analyzed ranks than this is no job report


class Gathered(msgspec.Struct, frozen=True, kw_only=True):
    ranks: tuple[RankData, ...]  # in the order given
    failures: tuple[RankFailure, ...]  # in the order given
    total: int  # locations given


def gather(
    locations: Sequence[str],
    runner: Executor,
    done: Callable[[str], None],
    parts: Sequence[Part] = DEFAULT_PARTS,
) -> Gathered:
    """Every location summarized by ``runner``, its ``parts`` kept (see the module's
    contract)."""
    results: list[RankData | RankFailure | None] = [None] * len(locations)
    sent = [_absolute(where) for where in locations]  # workers may run elsewhere
    for index, result in runner.run(functools.partial(summarize, parts=tuple(parts)), sent):
        where = locations[index]
        if not isinstance(result, (RankData, RankFailure)):  # the machinery failed for it
            text = f"{type(result).__name__}: {result}".rstrip(": ")
            result = failure(where, f"the worker analyzing it failed ({text})")
        elif isinstance(result, RankData) and result.version != RANK_DATA_VERSION:
            result = failure(
                where,
                f"summarized by another steptrace (rank summary version {result.version}, "
                f"this one reads {RANK_DATA_VERSION}): run the same version on the workers",
            )
        results[index] = _as_given(result, sent[index], where)
        done(where.rstrip("/").rsplit("/", 1)[-1])
    return Gathered(
        ranks=tuple(r for r in results if isinstance(r, RankData)),
        failures=tuple(r for r in results if isinstance(r, RankFailure)),
        total=len(locations),
    )


def _absolute(location: str) -> str:
    """A relative path made absolute (a remote Dask worker runs in another folder); URLs and
    absolute paths as they are."""
    if is_url(location) or Path(location).is_absolute():
        return location
    return str(Path.cwd() / location)  # not resolved: a link keeps its name (and rank)


def _as_given(result: RankData | RankFailure, sent: str, given: str) -> RankData | RankFailure:
    """The result named by the location as the user gave it, not as it was sent."""
    if sent == given:
        return result
    if isinstance(result, RankFailure):
        error = given + result.error[len(sent) :] if result.error.startswith(sent) else result.error
        return RankFailure(location=given, error=error)
    origin = msgspec.structs.replace(result.origin, location=given)
    return msgspec.structs.replace(result, origin=origin)


def kept(gathered: Gathered) -> tuple[RankData, ...]:
    """The ranks to report on; ``TraceError`` when failures leave fewer than ``MIN_RANKS``."""
    lost = gathered.failures
    if not lost or len(gathered.ranks) >= MIN_RANKS:
        return gathered.ranks
    if len(lost) == 1 and gathered.total == 1:
        raise TraceError(lost[0].error)
    others = f"; and {len(lost) - 1} more rank traces failed" if len(lost) > 1 else ""
    raise TraceError(
        f"{lost[0].error}{others}: {len(gathered.ranks)} of {gathered.total} rank traces "
        f"could be analyzed, a job's report needs at least {MIN_RANKS}"
    )


def failure_warnings(gathered: Gathered) -> tuple[str, ...]:
    """One line per failed rank, naming its file (and its rank, when the name says it)."""
    lines = []
    for lost in gathered.failures:
        name = lost.location.rstrip("/").rsplit("/", 1)[-1]
        number = rank_in_name(name)
        rank = f" (rank {number}, by its file name)" if number is not None else ""
        lines.append(
            f"rank trace not analyzed{rank}: {lost.error}; the report covers the other "
            f"{len(gathered.ranks)} of {gathered.total} rank traces"
        )
    return tuple(lines)
