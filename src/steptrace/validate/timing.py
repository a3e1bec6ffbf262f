"""Timing A and B outside the profiler, interleaved in randomized blocks.

Each block runs A then B or B then A (a seeded coin), ``block_steps`` steps each, each
step timed from one step boundary to the next: on CUDA the device is synchronized at
step boundaries only, never between the operations inside a step. Warm-up steps are
timed and kept apart (cold start). Blocks continue until the ratio's confidence interval
is narrow enough, the time budget is spent, or ``max_blocks`` is reached.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

import msgspec
import numpy as np

from steptrace.validate.stats import ratio_stats

Step = Callable[[Any, Any], Any]
Clock = Callable[[], float]
Sync = Callable[[], None]


class Samples(msgspec.Struct, frozen=True):
    warmup_a: tuple[float, ...]
    warmup_b: tuple[float, ...]
    a: tuple[float, ...]  # steady-state ms per step
    b: tuple[float, ...]
    order: tuple[str, ...]  # which side went first in each block ("AB" or "BA")
    elapsed_s: float


class TimingPlan(msgspec.Struct, frozen=True, kw_only=True):
    """How A and B are timed, and in which unit the verdict speaks."""

    warmup: int = 3
    block_steps: int = 5
    min_blocks: int = 6
    max_blocks: int = 200
    precision: float = 0.01  # stop when the CI half-width is within this of the ratio
    budget_s: float = 20.0
    seed: int = 0  # the blocks' order, the starting RNG state of both sides, the bootstrap
    band: float = 0.01  # a difference is only called beyond this noise band (±1%)
    loop_repeats: int = 3  # whole-loop runs per side, when a loop is given
    unit: Literal["ms/step", "samples/s"] = "ms/step"
    batch_size: int | None = None  # for samples/s; None: read from the first batch


class CheckPlan(msgspec.Struct, frozen=True, kw_only=True):
    """How correctness is checked before any timing: steps run, tolerances, and whether a
    difference may be accepted (then the verdict is still given, with the difference shown)."""

    steps: int = 3
    rtol: float | None = None  # None: torch.testing's default for the dtype
    atol: float | None = None
    accept_difference: bool = False


class Instruments(msgspec.Struct, frozen=True):
    """The clock and the device synchronizer (None: the device's own), injectable for tests."""

    clock: Clock = time.perf_counter
    synchronize: Sync | None = None


def run_blocks(
    step_a: Callable[[Any], Any],
    step_b: Callable[[Any], Any],
    batches: Sequence[Any],
    plan: TimingPlan,
    *,
    clock: Clock = time.perf_counter,
    synchronize: Sync = lambda: None,
) -> Samples:
    """Time both sides (each already bound to its own state) on the same batches."""
    coin = np.random.default_rng(plan.seed)
    feed_a, feed_b = itertools.cycle(batches), itertools.cycle(batches)
    started = clock()
    warmup_a = _timed(step_a, feed_a, plan.warmup, clock, synchronize)
    warmup_b = _timed(step_b, feed_b, plan.warmup, clock, synchronize)
    a: list[float] = []
    b: list[float] = []
    order: list[str] = []
    for block in range(plan.max_blocks):
        first_a = bool(coin.integers(2))
        sides = [("A", step_a, feed_a, a), ("B", step_b, feed_b, b)]
        for _, step, feed, into in sides if first_a else reversed(sides):
            into += _timed(step, feed, plan.block_steps, clock, synchronize)
        order.append("AB" if first_a else "BA")
        elapsed = clock() - started
        if elapsed >= plan.budget_s and block >= 1:  # the budget wins over min_blocks
            break
        if block + 1 >= plan.min_blocks and _enough(a, b, plan, elapsed, block):
            break
    return Samples(
        tuple(warmup_a), tuple(warmup_b), tuple(a), tuple(b), tuple(order), clock() - started
    )


def _timed(
    step: Callable[[Any], Any], feed: Iterator[Any], count: int, clock: Clock, synchronize: Sync
) -> list[float]:
    times = []
    synchronize()
    last = clock()
    for _ in range(count):
        step(next(feed))
        synchronize()  # a step boundary: the device's work for this step is done
        now = clock()
        times.append((now - last) * 1000)
        last = now
    return times


def _enough(a: list[float], b: list[float], plan: TimingPlan, elapsed: float, block: int) -> bool:
    if elapsed >= plan.budget_s:
        return True
    if block % 3 or min(np.median(a), np.median(b)) <= 0:  # every third block; a zero
        return False  # median (a clock too coarse) is refused by the caller, not divided by
    stats = ratio_stats(a, b, block=plan.block_steps, resamples=500, seed=plan.seed)
    low, high = stats.ci
    return (high - low) / 2 <= plan.precision * stats.ratio
