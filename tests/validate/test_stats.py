"""Estimators, verdicts and timing with seeded noise and a fake clock: no timing flakiness."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

pytest.importorskip("scipy")

from steptrace.paired import signed_rank_rank
from steptrace.validate.estimators import (
    Estimate,
    decide,
    interference,
    median_estimate,
    shift_estimate,
)
from steptrace.validate.stats import sentence, summarize, verdict
from steptrace.validate.timing import Sides, TimingPlan, run_blocks


def noisy(median: float, n: int, seed: int, spread: float = 0.02) -> np.ndarray:
    return median * (1 + np.random.default_rng(seed).normal(0, spread, n))


def interfered(ms: float, n: int, seed: int, share: float = 0.4) -> np.ndarray:
    """Steps of ``ms`` with small jitter, ``share`` of them held back by another process
    for a whole time slice or more: interference only ever adds time."""
    rng = np.random.default_rng(seed)
    held = rng.random(n) < share
    return ms * (1 + rng.normal(0, 0.01, n).clip(0)) + held * rng.uniform(3, 20, n)


def test_summary_of_known_values() -> None:
    stats = summarize([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (stats.median, stats.min, stats.max, stats.n) == (3.0, 1.0, 5.0, 5)
    assert stats.iqr == pytest.approx(2.0)
    assert stats.spread == pytest.approx(2 / 3) and stats.noise == "gross"
    assert summarize([10, 10.2, 10.4, 10.6, 10.8]).noise == "ok"
    assert summarize([10, 11, 12, 13, 14.0]).noise == "noisy"  # IQR 2 / median 12


def test_the_signed_rank_bound_against_every_subset() -> None:
    """The exact null distribution, recounted by listing every sign pattern."""
    for n in (1, 5, 6, 8, 10, 12):
        sums = [
            sum(r for r, s in zip(range(1, n + 1), signs, strict=True) if s)
            for signs in itertools.product((0, 1), repeat=n)
        ]
        below = [sum(t < k for t in sums) / len(sums) for k in range(max(sums) + 2)]
        for confidence in (0.95, 0.99):
            tail = (1 - confidence) / 2
            k = max([k for k, p in enumerate(below) if p <= tail], default=0)
            assert signed_rank_rank(n, confidence) == max(k, 1), (n, confidence)
    assert signed_rank_rank(10) == 9  # Hollander & Wolfe: T <= 8 rejects at 5%, n = 10


def test_median_estimator_a_against_a_and_five_percent() -> None:
    for seed in range(5):
        same = median_estimate(noisy(10, 200, seed), noisy(10, 200, seed + 100), 5)
        assert same.ci[0] < 1 < same.ci[1]
        assert verdict(same, band=0.01) == "no-detectable-difference"
    slower = median_estimate(noisy(10, 200, 1), noisy(10.5, 200, 2), 5)
    assert slower.ci[0] < 1.05 < slower.ci[1] and verdict(slower, 0.01) == "slower"
    assert slower.p_value is not None and slower.p_value < 0.01


def test_blocks_widen_the_median_interval_when_blocks_drift() -> None:
    """Per-block drift shared by the steps of a block: pairing whole blocks must see it."""
    rng = np.random.default_rng(3)
    blocks, size = 30, 5
    a = 10 * (1 + np.repeat(rng.normal(0, 0.05, blocks), size) + rng.normal(0, 0.01, 150))
    b = 10 * (1 + np.repeat(rng.normal(0, 0.05, blocks), size) + rng.normal(0, 0.01, 150))
    by_step, by_block = median_estimate(a, b, 1), median_estimate(a, b, size)
    assert (by_block.ci[1] - by_block.ci[0]) > (by_step.ci[1] - by_step.ci[0])


def test_block_minimum_estimator_under_interference() -> None:
    """40% of steps held back by 3-20 ms: the shift estimator finds +5% and +15% and
    stays silent on A/A; its interval covers the designed ratio."""
    calls = {"A/A": 0, "+5%": 0, "+15%": 0}
    covered = 0
    for seed in range(20):
        a = interfered(2.0, 60 * 5, seed)
        for kind, factor in (("A/A", 1.0), ("+5%", 1.05), ("+15%", 1.15)):
            b = interfered(2.0 * factor, 60 * 5, seed + 1000)
            shift = shift_estimate(a, b, 5)
            calls[kind] += verdict(shift, 0.01) == (
                "no-detectable-difference" if factor == 1 else "slower"
            )
            covered += shift.ci[0] <= factor <= shift.ci[1]
    assert calls == {"A/A": 20, "+5%": 20, "+15%": 20}
    assert covered >= 55  # 60 intervals of 95% each


def test_the_median_is_biased_when_longer_steps_are_held_back_more() -> None:
    """Preemption hits a longer step more often: its median moves far beyond the change,
    the blocks' fastest steps do not."""
    rng = np.random.default_rng(7)

    def steps(ms: float) -> np.ndarray:
        held = rng.random(400) < (0.2 + 4 * (ms - 2.0))  # 20% at 2 ms, 60% at 2.1 ms
        return ms + held * rng.uniform(5, 10, 400)

    a, b = steps(2.0), steps(2.1)  # +5%
    assert median_estimate(a, b, 5).ratio > 1.5  # the median sees the preemption
    assert shift_estimate(a, b, 5).ratio == pytest.approx(1.05, abs=0.01)


def test_interference_decides_which_estimator_speaks() -> None:
    quiet = interference(noisy(10, 100, 1), noisy(10, 100, 2), 5)
    assert not quiet.detected and max(quiet.slowed_a, quiet.slowed_b) == 0
    loaded = interference(interfered(2.0, 100, 1), interfered(2.0, 100, 2), 5)
    assert loaded.detected and loaded.slowed_a > 0.2
    deciding, other, _ = decide(noisy(10, 100, 1), noisy(10.5, 100, 2), 5)
    assert (deciding.estimator, other.estimator) == ("median", "block-minimum")
    deciding, other, _ = decide(interfered(2.0, 100, 1), interfered(2.1, 100, 2), 5)
    assert (deciding.estimator, other.estimator) == ("block-minimum", "median")
    assert "held back" in loaded.sentence()


def estimate(ratio: float, low: float, high: float) -> Estimate:
    return Estimate("median", ratio, (low, high), None, 10)


def test_the_sentence_says_how_many_times_and_what_share() -> None:
    faster = sentence("faster", estimate(0.339, 0.33, 0.35), 0.01)
    assert faster == "B is 2.95× faster: it takes 33.9% of A's time per step [95% CI 33.0%–35.0%]"
    slower = sentence("slower", estimate(1.05, 1.03, 1.07), 0.01)
    assert slower.startswith("B is 1.05× slower: it takes 105.0% of A's time per step")
    rate = sentence("faster", estimate(0.5, 0.45, 0.55), 0.01, unit="samples/s")
    assert rate.startswith("B is 2× faster: it processes 200.0% of A's samples per second")
    assert "[95% CI 181.8%–222.2%]" in rate
    none = sentence("no-detectable-difference", estimate(1.0, 0.98, 1.03), 0.01)
    assert none.startswith("No difference detectable: B takes 98.0%–103.0% of A's time")
    assert "faster" not in none and "±1%" in none
    tiny = estimate(1.005, 1.002, 1.008)  # a real 0.5% difference, inside the band
    assert verdict(tiny, 0.01) == "no-detectable-difference"


class FakeClock:
    """Time advances only when a step says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def spend(self, ms: float) -> None:
        self.now += ms / 1000


def sides(first: Callable[[Any], None], second: Callable[[Any], None]) -> Sides:
    return Sides(first, second, [0, 1, 2], [0, 1, 2])


def test_interleaved_blocks_with_a_fake_clock() -> None:
    clock = FakeClock()
    noise = np.random.default_rng(0)
    calls = {"A": 0, "B": 0}

    def side(name: str, ms: float) -> Callable[[Any], None]:
        def run(batch: int) -> None:
            calls[name] += 1
            cold = 50.0 if calls[name] == 1 else 0.0  # the first call pays a start-up cost
            clock.spend(ms + cold + noise.normal(0, 0.05))

        return run

    plan = TimingPlan(warmup=2, block_steps=4, min_blocks=6, max_blocks=30, budget_s=1e9)
    samples = run_blocks(sides(side("A", 10.0), side("B", 10.5)), plan, clock=clock)
    assert samples.warmup_a[0] == pytest.approx(60, abs=0.5)  # cold start kept apart
    assert max(samples.a) < 11 and min(samples.b) > 10  # steady state only
    assert len(samples.a) == len(samples.b) == 4 * len(samples.order)
    assert samples.block_steps == 4 and samples.stopped in ("precise", "max-blocks")
    assert {"AB", "BA"} <= set(samples.order)  # the order is randomized
    deciding, _, _ = decide(samples.a, samples.b, samples.block_steps)
    assert verdict(deciding, 0.01) == "slower"
    assert samples.elapsed_s == pytest.approx(clock.now)


@pytest.mark.parametrize(
    ("step_ms", "budget_s"), [(100.0, 5.0), (100.0, 2.0), (30.0, 0.5), (0.5, 0.5), (250.0, 4.0)]
)
def test_the_budget_is_an_upper_bound(step_ms: float, budget_s: float) -> None:
    clock = FakeClock()

    def run(batch: int) -> None:
        clock.spend(step_ms)

    plan = TimingPlan(warmup=3, block_steps=5, min_blocks=6, max_blocks=1000, budget_s=budget_s)
    samples = run_blocks(sides(run, run), plan, clock=clock, pair_s=2 * step_ms / 1000)
    assert samples.elapsed_s <= budget_s + 1e-9
    assert len(samples.order) >= 6  # each of these budgets fits six blocks of one step
    assert samples.stopped in ("budget", "precise")  # equal steps can be precise early
    if 2 * 5 * 6 * step_ms / 1000 > budget_s:
        assert samples.block_steps < 5  # blocks shrink so that six fit


def test_a_budget_too_small_times_nothing_and_says_so() -> None:
    clock = FakeClock()

    def run(batch: int) -> None:
        clock.spend(500.0)

    plan = TimingPlan(budget_s=0.5)
    samples = run_blocks(sides(run, run), plan, clock=clock, pair_s=1.0)
    assert samples.stopped == "too-few-samples" and samples.elapsed_s == 0
    assert samples.a == () and samples.warmup_a == ()
    unknown = run_blocks(sides(run, run), plan, clock=clock, pair_s=None)  # one step each
    assert unknown.stopped == "too-few-samples" and len(unknown.warmup_a) == 1
