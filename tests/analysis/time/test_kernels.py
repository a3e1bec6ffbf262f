"""``kernel_stats``: exact calls, total, mean, min and max per kernel name."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from steptrace.analysis.time.kernels import KernelStat, kernel_stats
from tests.tables import kernel as k
from tests.tables import memcpy, memset, ms, op, runtime, table


def test_every_figure_per_name_sorted_by_total() -> None:
    t = table(
        k("relu", 0, 5),
        k("gemm", 10, 10),
        k("gemm", 30, 30, stream=8),
        k("relu", 40, 5),
        k("gemm", 70, 20),
    )
    assert kernel_stats(t) == (
        KernelStat("gemm", calls=3, total_ms=0.06, mean_us=20, min_us=10, max_us=30),
        KernelStat("relu", calls=2, total_ms=0.01, mean_us=5, min_us=5, max_us=5),
    )


def test_total_is_a_sum_of_durations_even_on_concurrent_streams() -> None:
    (gemm,) = kernel_stats(table(k("gemm", 0, 10), k("gemm", 0, 10, stream=8)))
    assert (gemm.calls, gemm.total_ms) == (2, 0.02)


def test_ties_are_sorted_by_name() -> None:
    t = table(k("b", 0, 10), k("a", 20, 4), k("a", 30, 6), k("c", 40, 1))
    assert [s.name for s in kernel_stats(t)] == ["a", "b", "c"]


def test_sub_microsecond_durations_are_exact() -> None:
    (stat,) = kernel_stats(table(k("tiny", 0, 0.25), k("tiny", 1, 1.25), k("tiny", 3, 0)))
    assert (stat.min_us, stat.max_us, stat.mean_us) == (0, 1.25, 0.5)


def test_only_kernels_count() -> None:
    t = table(
        memcpy("Memcpy HtoD (Pageable -> Device)", 0, 10),
        memset(10, 10),
        runtime("gemm", 0, 3),
        op("gemm", 0, 4),
    )
    assert kernel_stats(t) == ()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcd"), st.integers(0, 1000)), max_size=30))
def test_stats_match_a_plain_python_table(kernels: list[tuple[str, int]]) -> None:
    durations: dict[str, list[int]] = {}
    for name, dur in kernels:
        durations.setdefault(name, []).append(dur)
    t = table(*(k(name, 10 * i, dur) for i, (name, dur) in enumerate(kernels)))
    found = {s.name: s for s in kernel_stats(t)}
    assert set(found) == set(durations)
    for name, values in durations.items():
        stat = found[name]
        assert (stat.calls, stat.min_us, stat.max_us) == (len(values), min(values), max(values))
        assert stat.total_ms == ms(sum(values))
        assert stat.mean_us == sum(values) / len(values)
    totals = [s.total_ms for s in kernel_stats(t)]
    assert totals == sorted(totals, reverse=True)
