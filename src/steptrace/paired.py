"""A ratio from paired samples: the Hodges–Lehmann estimate and its exact CI.

Each pair of blocks run side by side gives one log-ratio; the ratio is the
Hodges–Lehmann estimate of their centre (the median of the pairwise means, the Walsh
averages) and its confidence interval the distribution-free one of the signed-rank test,
exact at any number of pairs (a bootstrap over a few pairs is too narrow). Plain numpy:
``validate`` decides A/B comparisons with it, and a capture measures the profiler's cost
with it (profiled blocks against bare ones).
"""

from __future__ import annotations

from functools import cache

import msgspec
import numpy as np
from numpy.typing import ArrayLike

CONFIDENCE = 0.95
MIN_PAIRS = 6  # the fewest pairs whose signed-rank CI reaches 95%


class PairedRatio(msgspec.Struct, frozen=True):
    """The ratio of paired samples and its confidence interval."""

    ratio: float
    ci: tuple[float, float]
    pairs: int
    confidence: float = CONFIDENCE


def paired_ratio(logs: ArrayLike, confidence: float = CONFIDENCE) -> PairedRatio:
    """The Hodges–Lehmann ratio of paired log-ratios, with the signed-rank CI."""
    values = np.asarray(logs, dtype=np.float64)
    n = values.size
    if n < 1:
        raise ValueError("a paired ratio needs at least one pair")
    walsh = np.sort((values[:, None] + values[None, :])[np.triu_indices(n)] / 2)
    k = signed_rank_rank(n, confidence)  # CI = [w_(k), w_(N+1-k)], 1-based
    low, high = float(np.exp(walsh[k - 1])), float(np.exp(walsh[walsh.size - k]))
    return PairedRatio(float(np.exp(np.median(walsh))), (low, high), n, confidence)


@cache
def signed_rank_rank(n: int, confidence: float = CONFIDENCE) -> int:
    """The rank ``k`` of the Walsh average that bounds a two-sided CI (at least 1).

    The exact null distribution of the signed-rank statistic T for ``n`` pairs: ``k`` is
    the largest integer with P(T < k) <= (1 - confidence) / 2. Fewer than 6 pairs cannot
    reach 95% (8 for 99%): then ``k`` is 1 and the CI is the whole range of the Walsh
    averages.
    """
    top = n * (n + 1) // 2
    counts = np.zeros(top + 1, dtype=np.float64)
    counts[0] = 1.0
    for rank in range(1, n + 1):  # each rank is in the positive set or not
        counts[rank:] = (counts[rank:] + counts[:-rank]) / 2
        counts[:rank] /= 2
    below = np.cumsum(counts)  # below[t] = P(T <= t)
    alpha = (1 - confidence) / 2
    k = int(np.searchsorted(below, alpha, side="right"))  # P(T <= k-1) <= alpha
    return max(k, 1)
