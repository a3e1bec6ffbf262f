"""Matching instances across ranks: by Seq, by order, and every failure with its reason."""

from __future__ import annotations

from steptrace.across.ranks.matching import match
from steptrace.analysis.communication.collectives import Instance, kind_of


def inst(
    kind: str = "all_reduce",
    seq: int | None = None,
    t: int = 0,
    group: str = "0",
    source: str = "record_param_comms",
    size: int | None = None,
    nbytes: int | None = None,
) -> Instance:
    return Instance(
        kind=kind,
        process_group=group,
        seq=seq,
        lane="",
        source=source,  # type: ignore[arg-type]
        issued_ns=t,
        start_ns=t,
        end_ns=t + 10,
        blocking=True,
        nbytes=nbytes,
        group_size=size,
        group_ranks=None,
    )


def test_kinds_of_every_vocabulary() -> None:
    names = [
        "allreduce",
        "all_reduce",
        "AllReduce",
        "_allgather_base",
        "AllGather",
        "reduce_scatter_tensor",
        "ReduceScatter",
        "alltoall_base",
        "all_to_all",
        "SendRecv",
        "broadcast",
        "barrier",
    ]
    assert [kind_of(n) for n in names] == [
        "all_reduce",
        "all_reduce",
        "all_reduce",
        "all_gather",
        "all_gather",
        "reduce_scatter",
        "reduce_scatter",
        "all_to_all",
        "all_to_all",
        "send_recv",
        "broadcast",
        "barrier",
    ]


def test_seq_pairs_calls_recorded_in_different_orders() -> None:
    found = match(
        {0: [inst(seq=1, t=0), inst(seq=2, t=5)], 1: [inst(seq=2, t=1), inst(seq=1, t=7)]}, 2
    )
    assert sorted(m.key for m in found.matched) == ["seq 1", "seq 2"]
    assert found.unmatched == ()


def test_order_pairs_calls_without_seq_and_counts_that_differ_are_said() -> None:
    found = match({0: [inst(t=0), inst(t=5), inst(t=9)], 1: [inst(t=1), inst(t=6)]}, 2)
    assert [m.key for m in found.matched] == ["#0", "#1"]
    (lost,) = found.unmatched
    assert lost.reason.startswith("counts differ per rank (rank 0: 3, rank 1: 2)")
    assert (lost.instances, lost.ranks, lost.first_key) == (1, (0,), "#2")


def test_different_kinds_at_one_position_are_not_matched() -> None:
    found = match({0: [inst("all_reduce")], 1: [inst("broadcast")]}, 2)
    assert found.matched == ()
    assert {(u.kind, u.reason, u.instances) for u in found.unmatched} == {
        ("all_reduce", "different kinds at the same position", 1),
        ("broadcast", "different kinds at the same position", 1),
    }


def test_a_group_larger_than_the_ranks_given() -> None:
    found = match({0: [inst(size=128)], 1: [inst(size=128)]}, 128)
    assert found.matched == ()
    (lost,) = found.unmatched
    assert lost.reason == "group larger than the ranks given (128 ranks in the group, 2 given)"
    assert lost.instances == 2 and lost.ranks == (0, 1)


def test_gloo_events_queue_apart_from_named_groups() -> None:
    found = match(
        {r: [inst(group="default", source="gloo", t=1), inst(seq=1, t=2)] for r in range(3)}, 3
    )
    assert sorted((m.process_group, m.key) for m in found.matched) == [
        ("0", "seq 1"),
        ("default", "#0"),
    ]


def test_a_pairing_by_order_that_lost_its_place_shows_in_the_sizes() -> None:
    rank0 = [inst(nbytes=4), inst(nbytes=8), inst(nbytes=16)]
    rank1 = [inst(nbytes=4), inst(nbytes=16)]  # the second call is missing on rank 1
    found = match({0: rank0, 1: rank1}, 2)
    assert [m.key for m in found.matched] == ["#0"]
    assert {(u.reason, u.instances, u.first_key) for u in found.unmatched} == {
        ("different sizes at the same position", 2, "#1"),
        (
            "counts differ per rank (rank 0: 3, rank 1: 2): calls past the shortest are unpaired",
            1,
            "#2",
        ),
    }
    uneven = match({0: [inst("all_to_all", nbytes=4)], 1: [inst("all_to_all", nbytes=9)]}, 2)
    assert len(uneven.matched) == 1  # an all-to-all may send different sizes
