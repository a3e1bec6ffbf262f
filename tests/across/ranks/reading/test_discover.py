"""Which rank each trace is, and when traces are not one job."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptrace.across.ranks.reading.discover import RankOrigin, identify, rank_in_name
from steptrace.errors import TraceError
from steptrace.trace.table import Distributed, TraceInfo


def info(
    name: str, rank: int | None = None, world: int | None = None, backend: str = "nccl"
) -> RankOrigin:
    dist = Distributed(rank, world, backend) if rank is not None or world is not None else None
    return RankOrigin.of(
        TraceInfo(
            path=Path(name),
            size_bytes=0,
            events_total=0,
            devices=None,
            distributed=dist,
            base_time_ns=None,
            time_unit=None,
            options={},
            memory_events=0,
            fwdbwd_flows=0,
        )
    )


@pytest.mark.parametrize(
    ("name", "rank"),
    [
        ("rank-3.json", 3),
        ("trace_rank3.pt.trace.json.gz", 3),
        ("job_rank_12.json", 12),
        ("worker7.json", 7),
        ("Rank02.json", 2),
        ("sampled_128rank_rank1_x.json.gz", 1),
        ("trace.json", None),
        ("ranking.json", None),
    ],
)
def test_rank_numbers_in_file_names(name: str, rank: int | None) -> None:
    assert rank_in_name(name) == rank


def test_distributed_info_comes_first() -> None:
    found = identify([info("rank-5.json", rank=1, world=2), info("rank-9.json", rank=0, world=2)])
    assert [(r.rank, r.source) for r in found.ranks] == [
        (1, "distributedInfo"),
        (0, "distributedInfo"),
    ]
    assert found.world_size == 2 and found.warnings == ()


def test_file_names_then_file_order_with_a_warning() -> None:
    named = identify([info("a_rank1.json"), info("a_rank0.json")])
    assert [(r.rank, r.source) for r in named.ranks] == [(1, "file name"), (0, "file name")]
    ordered = identify([info("a.json"), info("b.json")])
    assert [(r.rank, r.source) for r in ordered.ranks] == [(0, "file order"), (1, "file order")]
    assert "order given" in ordered.warnings[0]


def test_a_trace_without_its_rank_does_not_renumber_the_others() -> None:
    """Each trace keeps the rank it says; one that says none takes the first number left."""
    found = identify(
        [info(f"rank{k}.json", rank=k, world=12) for k in (0, 1, 10, 2)] + [info("last.json")]
    )
    assert [(r.rank, r.source) for r in found.ranks] == [
        (0, "distributedInfo"),
        (1, "distributedInfo"),
        (10, "distributedInfo"),
        (2, "distributedInfo"),
        (3, "file order"),
    ]
    assert "1 of 5 traces do not say their rank" in found.warnings[0]
    assert "last.json -> 3" in found.warnings[0]
    mixed = identify([info("b.json"), info("x_rank0.json"), info("a.json", rank=1)])
    assert [(r.rank, r.source) for r in mixed.ranks] == [
        (2, "file order"),
        (0, "file name"),
        (1, "distributedInfo"),
    ]


def test_a_huge_world_size_is_counted_not_listed() -> None:
    """The world size is the trace's word: 10**9 must not build a billion-number set."""
    found = identify([info(f"r{k}.json", rank=k, world=10**9) for k in (0, 2)])
    (warning,) = found.warnings
    assert "ranks 1, 3, 4, 5, 6, 7, 8, 9, 10, 11 and 999999988 more are missing" in warning


def test_missing_ranks_are_warned_about() -> None:
    found = identify([info(f"r{k}.json", rank=k, world=8) for k in range(6)])
    (warning,) = found.warnings
    assert "world size 8, 6 rank traces given: ranks 6, 7 are missing" in warning


@pytest.mark.parametrize(
    ("infos", "message"),
    [
        ([info("a.json", 0, 2), info("b.json", 0, 2)], "rank 0 is given twice"),
        ([info("a.json", 0, 2), info("b.json", 1, 4)], "world sizes [2, 4] differ"),
        ([info("a.json", 0, 2, "nccl"), info("b.json", 1, 2, "gloo")], "backends"),
        ([info("a.json", 0, 2), info("b.json", 3, 2)], "beyond the world size 2"),
        ([info("x_rank1.json"), info("y_rank1.json")], "rank 1 is given twice"),
        ([], "no rank traces given"),
    ],
)
def test_what_cannot_be_one_job_is_a_one_line_error(infos: list[TraceInfo], message: str) -> None:
    with pytest.raises(TraceError, match=message.replace("[", r"\[").replace("]", r"\]")):
        identify(infos)


def test_rank_thresholds_are_overridden_by_name_and_validated() -> None:
    from steptrace.across.ranks.rank_thresholds import RankThresholds

    changed = RankThresholds().replace(["straggler_floor_ms=2.5", "clock_residual_us = 50"])
    assert (changed.straggler_floor_ms, changed.clock_residual_us) == (2.5, 50.0)
    for bad in (["nope=1"], ["straggler_floor_ms"], ["straggler_floor_ms=-1"], ["x=nan"]):
        with pytest.raises(ValueError):
            RankThresholds().replace(bad)
