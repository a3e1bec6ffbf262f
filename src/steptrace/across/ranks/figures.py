"""The cross-rank analysis of one job's rank traces: the typed result (``steptrace.ranks/2``).

Contract: plain frozen data, no computation. ``RanksAnalysis`` is what
``steptrace.across.ranks.analyze.analyze_ranks_traces`` returns;
``steptrace.report.model.RanksReport`` adds the findings and writes the JSON object
documented in ``docs/json-schema.md`` (section "steptrace.ranks/2"). Field names are
stable: a change that removes or renames one bumps the schema number.

Units are in the names. Times ``*_us`` on the aligned clock count from ``clocks.origin_ns``
(the reference rank's clock); ``null`` (``None``) means *not observed* or *not estimable*,
never zero. Ranks are identified by their number (``RankResult.rank``), which is also the
key of every per-rank mapping (JSON object keys are strings: ``"3"``).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from steptrace.analysis.communication.collectives import CollectiveSource
from steptrace.analysis.timeline.model import Lanes

RANKS_SCHEMA = "steptrace.ranks/2"

# How a rank's number was known: the trace's distributedInfo, a number in its file name,
# or only the order of the files given (a warning says so).
RankSource = Literal["distributedInfo", "file name", "file order"]
# Where a collective instance was read: a record_param_comms CPU op (newer Kineto: Seq,
# process group, sizes), a c10d operator (c10d::allreduce_), a gloo event on a gloo
# thread, or an NCCL/RCCL kernel alone (no CPU side linked).
# How instances were paired across ranks: by (process group, Seq), or by their order
# within the process group (and thread or stream) when no Seq was recorded.
MatchKey = Literal["seq", "order"]


class RankStep(msgspec.Struct, frozen=True, kw_only=True):
    """One rank's step: wall time, GPU, communication, and its labels (phases)."""

    name: str  # ProfilerStep#5 (or "window" when the trace has no step markers)
    number: int | None
    start_us: float  # on the aligned clock, from clocks.origin_ns (as written when unaligned)
    wall_ms: float
    gpu_busy_ms: float | None  # None: GPU not observed
    idle_ms: float | None  # GPU idle in the step; None: GPU not observed
    comm_ms: float | None  # collective time in the step (union); None: no collective seen
    # communication not overlapped by compute: GPU = communication kernels minus the union
    # of compute kernels on the same device; CPU-only (gloo) = collective time on the
    # collective's thread not covered by operators on the step's (main) thread
    exposed_comm_ms: float | None  # None: no collective recognised in this rank's trace
    comm_wait_ms: float | None  # summed wait at matched collectives in the step; None: none
    phases_ms: dict[str, float]  # each label's exclusive ms in the step, by name
    unlabeled_ms: float | None  # step time on the step's thread outside every label
    # the most allocated in the step, on the rank's device of the largest peak; None: the
    # trace recorded no memory (profile_memory off)
    peak_allocated_bytes: int | None = None


class RankResult(msgspec.Struct, frozen=True, kw_only=True):
    """One rank's trace: who it is, its clock offset, its steps."""

    rank: int
    path: str
    rank_from: RankSource
    world_size: int | None  # from distributedInfo; None when absent
    backend: str | None
    gpu_observed: bool
    # this rank's clock minus the reference rank's (subtract it from this rank's times to
    # put them on the reference clock); None when not estimable
    clock_offset_us: float | None
    collectives: int  # collective instances recognised in this trace
    steps: tuple[RankStep, ...]
    warnings: tuple[str, ...] = ()  # what loading and measuring this trace noticed


class RankClock(msgspec.Struct, frozen=True, kw_only=True):
    """How one rank's clock was put on the reference rank's."""

    rank: int
    base_time_ns: int | None  # baseTimeNanoseconds, when the trace wrote one
    origin_ns: int  # this trace's first event, absolute (base + ts) in integer ns
    offset_us: float | None  # None: no matched collective to estimate it from
    collectives_used: int  # matched collectives whose end times gave the offset
    residual_us: float | None  # median absolute deviation of the remaining end differences


class ClockAlignment(msgspec.Struct, frozen=True, kw_only=True):
    """Clock offsets from collective completions, and whether arrival order can be trusted.

    Completions of one collective are nearly simultaneous on every rank: each rank's
    offset is the median over matched collectives of (its end - the reference rank's end).
    ``residual_spread_us`` is the largest per-rank residual (median absolute deviation of
    the remaining differences); when it is too large for arrival-order claims
    (``trusted`` false, ``reason`` says why) stragglers carry ``times_last = None``, and
    ``times_last_beyond_uncertainty``: the arrivals last by more than that spread.
    """

    reference_rank: int | None  # None: a single rank or nothing matched
    origin_ns: int  # time zero of every aligned *_us figure (reference clock, absolute ns)
    offsets_applied: bool  # offsets were applied to cross-rank timing
    residual_spread_us: float | None
    trusted: bool
    reason: str  # why trusted or not, in words
    ranks: tuple[RankClock, ...]


class CollectiveSummary(msgspec.Struct, frozen=True, kw_only=True):
    """Collectives of one kind in one process group, over the ranks given."""

    kind: str  # all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv, ...
    process_group: str  # the trace's name for it ("0", a hash); "default" when unnamed
    group_size: int | None  # ranks in the group, when the trace says
    source: CollectiveSource
    match_key: MatchKey
    count: int  # instances seen (the most any rank recorded)
    matched: int  # instances found on every rank of the group given
    transfer_ms: float  # summed over matched instances: the shortest duration across ranks
    wait_ms: dict[int, float]  # per rank: summed duration minus transfer over matched instances
    bytes_per_instance: int | None  # median message size (In msg nelems x dtype); None: unknown
    algbw_gbps: float | None  # bytes / transfer, median over matched instances; None: no sizes
    busbw_gbps: float | None  # algbw x 2(n-1)/n (all-reduce), x (n-1)/n (gather, scatter)
    bytes_by_rank: dict[int, int]  # per rank: bytes over matched instances (empty: unknown)


class Unmatched(msgspec.Struct, frozen=True, kw_only=True):
    """Collective instances that could not be matched across ranks, for one reason."""

    kind: str
    process_group: str
    reason: str  # in words: missing on some ranks, group larger than the ranks given, ...
    instances: int  # how many instances (counted once per rank that recorded them)
    ranks: tuple[int, ...]  # the ranks that recorded them
    first_key: str  # the first one's key: "seq 17" or "#17" (its position)


class Straggler(msgspec.Struct, frozen=True, kw_only=True):
    """A rank that spends more time than the others in one phase, step after step."""

    rank: int
    phase: str  # the label (or "unlabeled") whose time exceeds the others'
    excess_ms: float  # per step, median over steps: its time minus the others' median
    steps_late: int  # steps in which the excess passed the floor
    steps: int  # steps compared
    others_wait_ms: float  # per step, median: the other ranks' median collective wait
    own_wait_ms: float  # per step, median: its own collective wait
    times_last: int | None  # matched collectives it arrived at last; None: clocks untrusted
    of: int  # matched collectives it took part in
    # Clocks untrusted: the collectives it arrived at last by more than their uncertainty
    # (``ClockAlignment.residual_spread_us``), on the estimated offsets; None otherwise.
    times_last_beyond_uncertainty: int | None = None


class RankLanes(msgspec.Struct, frozen=True, kw_only=True):
    """One rank's steps on the timeline, kept compact (``analyze.TIMELINE_RANKS`` at most)."""

    rank: int
    lanes: Lanes  # times from each step's own start; RankStep.start_us places it


BoundBy = Literal["collective", "longest"]
COLLECTIVE: BoundBy = "collective"
LONGEST: BoundBy = "longest"
UNLABELED_PHASE = "(unlabeled)"


class JobStepBound(msgspec.Struct, frozen=True):
    """One step of the job: the rank and phase on its critical path at the step's end."""

    step: str
    number: int | None
    rank: int
    phase: str  # the rank's phase with the most time on its path; UNLABELED_PHASE: none
    phase_on_path_ms: float
    length_ms: float  # the rank's own path in that step
    via: BoundBy  # the last collective's last arrival, or the longest path (nothing joined)
    collective: str | None  # that collective's kind
    others_waited_ms: float | None  # the other ranks' summed wait at it


class RanksAnalysis(msgspec.Struct, frozen=True, kw_only=True):
    """Every cross-rank figure of one job; findings are added by ``RanksReport``."""

    schema: str = RANKS_SCHEMA
    world_size: int | None  # as the traces say (None: none says)
    ranks: tuple[RankResult, ...]  # sorted by rank
    clocks: ClockAlignment
    collectives: tuple[CollectiveSummary, ...]
    unmatched: tuple[Unmatched, ...]
    stragglers: tuple[Straggler, ...]  # most excess first
    warnings: tuple[str, ...]
    lanes: tuple[RankLanes, ...] = ()  # the stragglers' ranks first, then the lowest
    # the job's critical path per step (``job_path``); None: not asked (--critical-path)
    critical_path: tuple[JobStepBound, ...] | None = None
