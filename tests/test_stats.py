"""Statistics and timing with seeded noise and a fake clock: no timing flakiness."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy")

from steptrace.validate.stats import ratio_stats, sentence, summarize, verdict
from steptrace.validate.timing import TimingPlan, run_blocks


def noisy(median: float, n: int, seed: int, spread: float = 0.02) -> np.ndarray:
    return median * (1 + np.random.default_rng(seed).normal(0, spread, n))


def test_summary_of_known_values() -> None:
    stats = summarize([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (stats.median, stats.min, stats.max, stats.n) == (3.0, 1.0, 5.0, 5)
    assert stats.iqr == pytest.approx(2.0)
    assert stats.spread == pytest.approx(2 / 3) and stats.noise == "gross"
    assert summarize([10, 10.2, 10.4, 10.6, 10.8]).noise == "ok"
    assert summarize([10, 11, 12, 13, 14.0]).noise == "noisy"  # IQR 2 / median 12


def test_a_against_a_is_no_detectable_difference() -> None:
    for seed in range(5):
        ratio = ratio_stats(noisy(10, 200, seed), noisy(10, 200, seed + 100), seed=seed)
        assert ratio.ci[0] < 1 < ratio.ci[1]
        assert verdict(ratio, band=0.01) == "no-detectable-difference"


def test_five_percent_slower_is_detected_and_its_ci_covers_the_truth() -> None:
    ratio = ratio_stats(noisy(10, 200, 1), noisy(10.5, 200, 2), seed=0)
    assert ratio.ci[0] < 1.05 < ratio.ci[1]
    assert verdict(ratio, band=0.01) == "slower"
    assert ratio.p_value is not None and ratio.p_value < 0.01
    low, high = ratio.ci
    expected = (
        f"B is {100 * (ratio.ratio - 1):.1f}% slower "
        f"[95% CI {100 * (low - 1):.1f}%–{100 * (high - 1):.1f}%]"
    )
    assert sentence("slower", ratio, 0.01) == expected


def test_faster_and_the_noise_band() -> None:
    faster = ratio_stats(noisy(10, 200, 3), noisy(9.0, 200, 4), seed=0)
    assert verdict(faster, band=0.01) == "faster"
    assert "faster" in sentence("faster", faster, 0.01)
    tiny = ratio_stats(noisy(10, 400, 5, 0.001), noisy(10.05, 400, 6, 0.001), seed=0)
    assert tiny.ci[0] > 1  # a real 0.5% difference ...
    assert verdict(tiny, band=0.01) == "no-detectable-difference"  # ... inside the band


class FakeClock:
    """Time advances only when a step says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def spend(self, ms: float) -> None:
        self.now += ms / 1000


def test_interleaved_blocks_with_a_fake_clock() -> None:
    clock = FakeClock()
    noise = np.random.default_rng(0)
    calls = {"A": 0, "B": 0}

    def side(name: str, ms: float) -> object:
        def run(batch: int) -> None:
            calls[name] += 1
            cold = 50.0 if calls[name] == 1 else 0.0  # the first call pays a start-up cost
            clock.spend(ms + cold + noise.normal(0, 0.05))

        return run

    plan = TimingPlan(warmup=2, block_steps=4, min_blocks=6, max_blocks=30, budget_s=1e9)
    samples = run_blocks(side("A", 10.0), side("B", 10.5), [0, 1, 2], plan, clock=clock)
    assert samples.warmup_a[0] == pytest.approx(60, abs=0.5)  # cold start kept apart
    assert max(samples.a) < 11 and min(samples.b) > 10  # steady state only
    assert len(samples.a) == len(samples.b) == 4 * len(samples.order)
    assert {"AB", "BA"} <= set(samples.order)  # the order is randomized
    assert verdict(ratio_stats(samples.a, samples.b), 0.01) == "slower"
    assert samples.elapsed_s == pytest.approx(clock.now)


def test_the_time_budget_stops_the_blocks() -> None:
    clock = FakeClock()

    def run(batch: int) -> None:
        clock.spend(100.0)

    plan = TimingPlan(warmup=1, block_steps=5, min_blocks=2, max_blocks=1000, budget_s=5.0)
    samples = run_blocks(run, run, [0], plan, clock=clock)
    # each block costs 1 s (10 steps of 100 ms); the budget is checked after each block
    assert 4 <= len(samples.order) <= 6


def test_blocks_widen_the_interval_when_blocks_drift() -> None:
    """Per-block drift shared by the steps of a block: the block bootstrap must see it."""
    rng = np.random.default_rng(3)
    blocks, size = 30, 5
    drift_a = np.repeat(rng.normal(0, 0.05, blocks), size)
    drift_b = np.repeat(rng.normal(0, 0.05, blocks), size)
    a = 10 * (1 + drift_a + rng.normal(0, 0.01, blocks * size))
    b = 10 * (1 + drift_b + rng.normal(0, 0.01, blocks * size))
    by_step = ratio_stats(a, b, block=1)
    by_block = ratio_stats(a, b, block=size)
    assert (by_block.ci[1] - by_block.ci[0]) > (by_step.ci[1] - by_step.ci[0])


def test_throughput_wording() -> None:
    ratio = ratio_stats(noisy(10, 200, 1), noisy(5, 200, 2), seed=0)  # B takes half the time
    text = sentence("faster", ratio, 0.01, unit="samples/s")
    assert text.startswith("B processes 10") and "more samples per second" in text
