"""How much slower or faster B is than A: two estimators, and which one decides.

Samples come in blocks: A's block ``k`` and B's block ``k`` ran next to each other, each
``block`` steps back to back. Each block pair gives one paired log-ratio; the ratio B/A is
their Hodges–Lehmann estimate (the median of the pairwise means), its 95% CI the
distribution-free one of the signed-rank test (exact at any number of pairs, where a
bootstrap over a few blocks is too narrow). Pairing blocks run next to each other cancels
slow drift; whole blocks, not steps, are the unit, since the steps of a block share their
conditions. Two estimators differ in what a block contributes:

- ``median``: the block's median step. Right on a quiet machine, where noise is
  symmetric and small; it speaks for the typical step.
- ``block-minimum``: the block's fastest step. Another process taking the CPU, a page
  fault or an interrupt only ever *adds* time to a step, while a deterministic change
  moves every step: the fastest step of a short block is the one interference spared.
  Under load the median is not only noisy but biased (a step 15% longer is preempted
  more often: its median ratio read 1.6-1.8 in our calibration), this one is not.

``interference`` measures how much time the machine added: the share of steps slower
than 1.5× the fastest step of their block. Above ``INTERFERED`` on either side, the
block-minimum estimator decides, at 99% confidence (blocks side by side share their
conditions less well on a loaded machine: calibrated, a 95% interval called one A/A in
ten); otherwise the median does, at 95%.
"""

from __future__ import annotations

from typing import Literal

import msgspec
import numpy as np
from numpy.typing import ArrayLike, NDArray

from steptrace.paired import CONFIDENCE, MIN_PAIRS, paired_ratio

EstimatorName = Literal["median", "block-minimum"]
CONFIDENCE_INTERFERED = 0.99
SLOWED = 1.5  # a step this much slower than its block's fastest was held back
INTERFERED = 0.10  # share of such steps beyond which the block minima decide


class Estimate(msgspec.Struct, frozen=True):
    """One estimator's ratio B/A (below 1: B takes less time) and its CI."""

    estimator: EstimatorName
    ratio: float
    ci: tuple[float, float]
    p_value: float | None  # Wilcoxon signed-rank on the paired block values
    pairs: int  # block pairs it used
    confidence: float = CONFIDENCE  # of ``ci``


class Interference(msgspec.Struct, frozen=True):
    """What the machine added to the steps: the share of steps held back, per side."""

    slowed_a: float  # share of A's steps slower than 1.5x the fastest of their block
    slowed_b: float
    detected: bool  # above INTERFERED on either side: the block minima decide

    def sentence(self) -> str:
        worst = max(self.slowed_a, self.slowed_b)
        return (
            f"interference: {100 * worst:.0f}% of steps were held back (slower than "
            f"{SLOWED:g}x the fastest step of their block)"
        )


def blocks_of(values: ArrayLike, block: int) -> NDArray[np.float64]:
    """Samples as rows of one block each (one row per step when they do not divide)."""
    x = np.asarray(values, dtype=np.float64)
    size = block if block >= 1 and x.size % block == 0 else 1
    return x.reshape(-1, size)


def interference(a: ArrayLike, b: ArrayLike, block: int) -> Interference:
    shares = []
    for values in (a, b):
        rows = blocks_of(values, block)
        fastest = rows.min(axis=1, keepdims=True)
        shares.append(float(np.mean(rows > SLOWED * fastest)) if rows.shape[1] > 1 else 0.0)
    return Interference(shares[0], shares[1], max(shares) > INTERFERED)


def median_estimate(
    a: ArrayLike, b: ArrayLike, block: int, confidence: float = CONFIDENCE
) -> Estimate:
    """Hodges–Lehmann ratio of the block pairs' median steps, with the signed-rank CI."""
    xs, ys = _paired(a, b, block)
    logs = np.log(np.median(ys, axis=1) / np.median(xs, axis=1))
    return _hodges_lehmann("median", logs, confidence)


def shift_estimate(
    a: ArrayLike, b: ArrayLike, block: int, confidence: float = CONFIDENCE
) -> Estimate:
    """Hodges–Lehmann ratio of the block pairs' fastest steps, with the signed-rank CI."""
    xs, ys = _paired(a, b, block)
    logs = np.log(ys.min(axis=1) / xs.min(axis=1))
    return _hodges_lehmann("block-minimum", logs, confidence)


def _hodges_lehmann(name: EstimatorName, logs: NDArray[np.float64], confidence: float) -> Estimate:
    found = paired_ratio(logs, confidence)
    return Estimate(name, found.ratio, found.ci, _p_value(logs), found.pairs, confidence)


def decide(a: ArrayLike, b: ArrayLike, block: int) -> tuple[Estimate, Estimate, Interference]:
    """(the estimate that decides, the other one, the interference measured)."""
    measured = interference(a, b, block)
    if measured.detected:
        shift = shift_estimate(a, b, block, CONFIDENCE_INTERFERED)
        return shift, median_estimate(a, b, block), measured
    return median_estimate(a, b, block), shift_estimate(a, b, block), measured


def _paired(a: ArrayLike, b: ArrayLike, block: int) -> tuple[NDArray[np.float64], ...]:
    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.size != y.size or x.size < 1:
        raise ValueError("A and B need the same number of samples, at least one")
    if block < 1 or x.size % block:
        block = 1
    return x.reshape(-1, block), y.reshape(-1, block)


def _p_value(paired: NDArray[np.float64]) -> float | None:
    from scipy import stats

    if np.count_nonzero(paired) < MIN_PAIRS:
        return None
    return float(stats.wilcoxon(paired).pvalue)
