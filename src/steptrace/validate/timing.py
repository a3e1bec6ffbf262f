"""Timing A and B outside the profiler, interleaved in randomized blocks, within a budget.

Each block runs A then B or B then A (a seeded coin), ``block_steps`` steps each, each
step timed from one step boundary to the next: on CUDA the device is synchronized at
step boundaries only, never between the operations inside a step. Warm-up steps are
timed and kept apart (cold start).

The budget is an upper bound on the timing: the time of one A step plus one B step
(``pair_s``), known from the correctness steps and then from the warm-up, sizes the blocks
so that ``min_blocks`` fit, and no block starts that would end past the budget. When
not even ``MIN_PAIRS`` blocks of one step fit, nothing is timed and the samples say so
(``stopped == "too-few-samples"``). Blocks
otherwise continue until the deciding estimator's CI is narrow enough, the budget is
spent, or ``max_blocks`` have run.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Literal

import msgspec
import numpy as np

from steptrace.paired import MIN_PAIRS
from steptrace.process.clocks import wall_of
from steptrace.validate.estimators import decide
from steptrace.validate.inputs import Batch, Output

BoundStep = Callable[[Batch], Output]  # a side's step on its own state: batch -> outputs
Clock = Callable[[], float]
Sync = Callable[[], None]
BeforeBlock = Callable[[str], None]  # called with "A" or "B" before that side's steps run
Stop = Literal["precise", "budget", "max-blocks", "too-few-samples"]
WARMUP_SHARE = 0.2  # warm-up steps beyond the first take at most this share of the budget


class Samples(msgspec.Struct, frozen=True, kw_only=True):
    warmup_a: tuple[float, ...]
    warmup_b: tuple[float, ...]
    a: tuple[float, ...]  # steady-state ms per step
    b: tuple[float, ...]
    order: tuple[str, ...]  # which side went first in each block ("AB" or "BA")
    elapsed_s: float
    block_steps: int = 0  # steps per side in each block, as sized for the budget
    stopped: Stop = "max-blocks"  # why the blocks stopped


class TimingPlan(msgspec.Struct, frozen=True, kw_only=True):
    """How A and B are timed, and in which unit the verdict speaks."""

    warmup: int = 3
    block_steps: int = 5  # at most: fewer when the budget needs it
    min_blocks: int = 6
    max_blocks: int = 200
    precision: float = 0.01  # stop when the CI half-width is within this of the ratio
    budget_s: float = 20.0  # the comparison's upper bound, correctness steps included
    seed: int = 0  # the blocks' order and the starting RNG state of both sides
    band: float = 0.01  # a difference is only called beyond this noise band (±1%)
    loop_repeats: int = 3  # whole-loop runs per side, when a loop is given
    unit: Literal["ms/step", "samples/s"] = "ms/step"
    batch_size: int | None = None  # for samples/s; None: read from the first batch
    # intra-op threads on the CPU: "fit" (at most the cores other processes leave free),
    # "as-is" (torch's setting), or a number (validate.threads says why)
    threads: int | Literal["fit", "as-is"] = "fit"


class CheckPlan(msgspec.Struct, frozen=True, kw_only=True):
    """How correctness is checked before any timing: steps run, tolerances, and whether a
    difference may be accepted (then the verdict is still given, with the difference shown)."""

    steps: int = 3
    rtol: float | None = None  # None: torch.testing's default for the dtype
    atol: float | None = None
    accept_difference: bool = False


class Instruments(msgspec.Struct, frozen=True):
    """The clock and the device synchronizer (None: the device's own), injectable for tests.

    The device's own clock: on the CPU, the wall clock less the time the timing thread
    waited for a CPU (``steptrace.process.clocks.RunningClock``: other processes' share removed);
    on a GPU, the wall clock.

    ``before_block`` is called with the side's name before each run of that side's steps
    (every warm-up step and every block), outside the timed interval: a check can switch
    something on for one side there (the profiler for A) without timing the switch.
    """

    clock: Clock | None = None
    synchronize: Sync | None = None
    before_block: BeforeBlock | None = None


class Sides(msgspec.Struct, frozen=True):
    """Both steps, each bound to its own state, and the batches each one reads."""

    step_a: BoundStep
    step_b: BoundStep
    batches_a: Sequence[Batch]
    batches_b: Sequence[Batch]


def run_blocks(
    sides: Sides,
    plan: TimingPlan,
    *,
    clock: Clock = time.perf_counter,
    synchronize: Sync = lambda: None,
    pair_s: float | None = None,
    before_block: BeforeBlock = lambda side: None,
) -> Samples:
    """Time both sides within ``plan.budget_s``; ``pair_s``: an A step plus a B step (s);
    ``before_block(side)`` runs before each side's steps, untimed."""
    coin = np.random.default_rng(plan.seed)
    feed_a, feed_b = itertools.cycle(sides.batches_a), itertools.cycle(sides.batches_b)
    wall = wall_of(clock)  # the budget is wall time; steps are timed on ``clock``
    started = wall()
    timed: dict[str, list[float]] = {"A": [], "B": [], "warm A": [], "warm B": []}
    order: list[str] = []

    def result(stopped: Stop, block: int = 0) -> Samples:
        return Samples(
            warmup_a=tuple(timed["warm A"]),
            warmup_b=tuple(timed["warm B"]),
            a=tuple(timed["A"]),
            b=tuple(timed["B"]),
            order=tuple(order),
            elapsed_s=wall() - started,
            block_steps=block,
            stopped=stopped,
        )

    if pair_s is not None and not _fits(plan.budget_s, pair_s, 1 + MIN_PAIRS):
        return result("too-few-samples")
    for i in range(max(plan.warmup, 1)):
        began = wall()
        if i and pair_s is not None and began - started + pair_s > WARMUP_SHARE * plan.budget_s:
            break
        before_block("A")
        timed["warm A"] += _timed(sides.step_a, feed_a, 1, clock, synchronize)
        before_block("B")
        timed["warm B"] += _timed(sides.step_b, feed_b, 1, clock, synchronize)
        warm = wall() - began
        pair_s = warm if pair_s is None else min(pair_s, warm)  # one slow step sizes nothing
    assert pair_s is not None  # at least one warm-up step ran
    pair_s = max(pair_s, 1e-9)  # a clock too coarse reads 0: refused after the timing
    left = plan.budget_s - (wall() - started)
    least = max(plan.min_blocks, MIN_PAIRS)  # fewer blocks give no confidence interval
    block = min(plan.block_steps, math.floor(left / (pair_s * least)))
    if block < 1:
        if not _fits(left, pair_s, MIN_PAIRS):
            return result("too-few-samples")
        block = 1
    for count in range(1, plan.max_blocks + 1):
        began = wall()
        if not _fits(plan.budget_s - (began - started), pair_s, 1, block):
            return result("budget", block)
        first_a = bool(coin.integers(2))
        pairs = [("A", sides.step_a, feed_a), ("B", sides.step_b, feed_b)]
        for name, step, feed in pairs if first_a else reversed(pairs):
            before_block(name)
            timed[name] += _timed(step, feed, block, clock, synchronize)
        order.append("AB" if first_a else "BA")
        pair_s = max((wall() - began) / block, 1e-9)  # on the wall, as the budget is
        due = count >= least and (count - least) % 3 == 0
        if due and _precise(timed, block, plan):  # every third block from min_blocks on
            return result("precise", block)
    return result("max-blocks", block)


def _fits(seconds: float, pair_s: float, blocks: int, block: int = 1) -> bool:
    """Do ``blocks`` blocks of ``block`` steps per side fit in ``seconds``?"""
    return block * blocks * pair_s <= seconds


def _timed(
    step: BoundStep, feed: Iterator[Batch], count: int, clock: Clock, synchronize: Sync
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


def _precise(timed: dict[str, list[float]], block: int, plan: TimingPlan) -> bool:
    a, b = timed["A"], timed["B"]
    if min(np.median(a), np.median(b)) <= 0:  # a clock too coarse: refused by the caller
        return False
    deciding, _, _ = decide(a, b, block)
    low, high = deciding.ci
    return (high - low) / 2 <= plan.precision * deciding.ratio
