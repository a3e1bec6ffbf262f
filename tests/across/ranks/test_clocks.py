"""Clock offsets from collective ends, on hand-built matched collectives (integer ns)."""

from __future__ import annotations

from steptrace.across.ranks.clocks import align, median_ns
from steptrace.across.ranks.matching import Matched
from steptrace.analysis.communication.collectives import Instance


def call(start: int, end: int) -> Instance:
    return Instance(
        kind="all_reduce",
        process_group="0",
        seq=None,
        lane="",
        source="record_param_comms",
        issued_ns=start,
        start_ns=start,
        end_ns=end,
        blocking=True,
        nbytes=None,
        group_size=None,
        group_ranks=None,
    )


def job(shift: dict[int, int], jitter: dict[int, list[int]], n: int = 5) -> list[Matched]:
    """``n`` collectives 1 ms long, ending together, read on each rank's shifted clock."""
    found = []
    for k in range(n):
        t = k * 10_000_000
        members = tuple(
            (r, call(t + s + jitter[r][k], t + 1_000_000 + s + jitter[r][k]))
            for r, s in shift.items()
        )
        found.append(Matched("all_reduce", "0", f"#{k}", members))
    return found


def test_median_in_integer_ns() -> None:
    assert median_ns([3, 1, 2]) == 2
    assert median_ns([1, 2, 3, 10]) == 2  # (2 + 3) // 2
    assert median_ns([2**62 + 1, 2**62 + 3]) == 2**62 + 2  # no float on the way


def test_offsets_are_found_relative_to_the_consensus_rank() -> None:
    shift = {0: -25_000_000, 1: 0, 2: 0, 3: 0}
    jitter = {r: [0, 3, 1, 4, 2] for r in shift}
    clocks, offsets = align(job(shift, jitter), {r: (None, 0) for r in shift}, 200.0)
    assert clocks.reference_rank == 1
    assert offsets == {0: -25_000_000, 1: 0, 2: 0, 3: 0}
    assert clocks.trusted and clocks.residual_spread_us == 0.0


def test_noise_alone_gives_no_offset_and_wide_noise_is_not_trusted() -> None:
    shift = {0: 0, 1: 0, 2: 0}
    noisy = {0: [0] * 5, 1: [300_000, -400_000, 500_000, -200_000, 100_000], 2: [0] * 5}
    clocks, offsets = align(job(shift, noisy), {r: (None, 0) for r in shift}, 200.0)
    assert offsets[1] == 0  # the median (100 µs) is within three deviations of zero
    assert not clocks.trusted and "more than 200 µs" in clocks.reason


def test_one_rank_or_nothing_matched_is_never_trusted() -> None:
    clocks, offsets = align([], {0: (None, 0), 1: (None, 0)}, 200.0)
    assert offsets == {} and clocks.reference_rank is None and not clocks.trusted
    assert "no collective was matched" in clocks.reason


def test_ranks_of_one_host_read_its_one_clock_whatever_their_collective_ends_say() -> None:
    """A loaded machine: the ends disagree by hundreds of µs, which the collectives alone
    cannot tell from clocks apart; the traces naming one host settle it: no offset, and
    arrival order is read on that clock."""
    shift = {0: 0, 1: 0, 2: 0}
    noisy = {0: [0] * 5, 1: [300_000, -400_000, 500_000, -200_000, 100_000], 2: [0] * 5}
    origins = {r: (None, 0) for r in shift}
    alone, _ = align(job(shift, noisy), origins, 200.0)
    assert not alone.trusted
    clocks, offsets = align(job(shift, noisy), origins, 200.0, dict.fromkeys(shift, "node-a"))
    assert clocks.trusted and offsets == {0: 0, 1: 0, 2: 0}
    assert "one host" in clocks.reason and "load, not its clock" in clocks.reason
    assert clocks.residual_spread_us == alone.residual_spread_us  # the same ends, measured


def test_one_host_name_over_a_moved_clock_is_not_believed() -> None:
    """A trace whose times were moved 25 ms (1 ms collectives) cannot share the others'
    clock: it would end collectives before they began; its offset is estimated."""
    shift = {0: 0, 1: 0, 2: 25_000_000}
    jitter = {r: [0, 3, 1, 4, 2] for r in shift}
    hosts = dict.fromkeys(shift, "node-a")
    clocks, offsets = align(job(shift, jitter), {r: (None, 0) for r in shift}, 200.0, hosts)
    assert offsets == {0: 0, 1: 0, 2: 25_000_000}
    assert clocks.trusted and "one host" not in clocks.reason


def test_ranks_of_one_host_share_one_offset_the_median_of_theirs() -> None:
    shift = {0: 0, 1: 0, 2: 7_000_000, 3: 7_200_000}  # rank 3's own estimate is 0.2 ms off
    jitter = {r: [0, 3, 1, 4, 2] for r in shift}
    hosts = {0: "node-a", 1: "node-a", 2: "node-b", 3: "node-b"}
    _, alone = align(job(shift, jitter), {r: (None, 0) for r in shift}, 200.0)
    assert alone[2] != alone[3]
    clocks, offsets = align(job(shift, jitter), {r: (None, 0) for r in shift}, 200.0, hosts)
    assert offsets == {0: 0, 1: 0, 2: 7_100_000, 3: 7_100_000}
    assert "one host" not in clocks.reason
