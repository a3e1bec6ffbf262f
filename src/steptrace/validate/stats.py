"""Statistics of an A/B timing: per-side summaries, the ratio's bootstrap CI, a rank test.

Pure numpy and scipy.stats; nothing here touches a clock. The verdict has a noise band:
a difference is only called when the whole 95% confidence interval of the ratio B/A lies
beyond ``band`` (default 1%), so that A against itself almost never looks different.
"""

from __future__ import annotations

from typing import Literal

import msgspec
import numpy as np
from numpy.typing import ArrayLike

Verdict = Literal["faster", "slower", "no-detectable-difference", "outputs-differ"]
NOISY, GROSS = 0.10, 0.25  # IQR / median, as torch.utils.benchmark warns
CONFIDENCE = 0.95


class SideStats(msgspec.Struct, frozen=True):
    """One side's steady-state samples and their dispersion (ms)."""

    n: int
    median: float
    iqr: float
    min: float
    max: float
    spread: float  # IQR / median
    noise: Literal["ok", "noisy", "gross"]


class RatioStats(msgspec.Struct, frozen=True):
    ratio: float  # median(B) / median(A): below 1, B takes less time
    ci: tuple[float, float]
    p_value: float | None  # Wilcoxon signed-rank on the paired differences


def summarize(samples: ArrayLike) -> SideStats:
    values = np.asarray(samples, dtype=np.float64)
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    spread = float((q3 - q1) / median) if median > 0 else float("inf")
    noise: Literal["ok", "noisy", "gross"] = (
        "gross" if spread > GROSS else "noisy" if spread > NOISY else "ok"
    )
    return SideStats(
        n=int(values.size), median=float(median), iqr=float(q3 - q1),
        min=float(values.min()), max=float(values.max()), spread=spread, noise=noise,
    )  # fmt: skip


def ratio_stats(a: ArrayLike, b: ArrayLike, *, seed: int = 0, resamples: int = 2000) -> RatioStats:
    """Ratio of medians B/A with a paired percentile bootstrap CI, and a paired rank test."""
    from scipy import stats

    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    ratio = float(np.median(y) / np.median(x))

    def statistic(first: np.ndarray, second: np.ndarray, axis: int) -> np.ndarray:
        result: np.ndarray = np.median(second, axis=axis) / np.median(first, axis=axis)
        return result

    result = stats.bootstrap(
        (x, y), statistic, paired=True, vectorized=True, n_resamples=resamples,
        confidence_level=CONFIDENCE, method="percentile", rng=np.random.default_rng(seed),
    )  # fmt: skip
    differences = y - x
    p_value = None
    if np.count_nonzero(differences) >= 6:
        p_value = float(stats.wilcoxon(differences).pvalue)
    low, high = result.confidence_interval
    return RatioStats(ratio=ratio, ci=(float(low), float(high)), p_value=p_value)


def verdict(ratio: RatioStats, band: float) -> Verdict:
    """Faster or slower only when the whole CI is beyond the noise band."""
    low, high = ratio.ci
    if low > 1 + band:
        return "slower"
    if high < 1 - band:
        return "faster"
    return "no-detectable-difference"


def sentence(outcome: Verdict, ratio: RatioStats | None, band: float) -> str:
    """The verdict in words, with its interval."""
    if outcome == "outputs-differ" or ratio is None:
        return "B's outputs differ from A's beyond tolerance: no speed verdict is given."
    low, high = ratio.ci
    if outcome == "faster":
        return (
            f"B is {100 * (1 - ratio.ratio):.1f}% faster "
            f"[95% CI {100 * (1 - high):.1f}%–{100 * (1 - low):.1f}%]"
        )
    if outcome == "slower":
        return (
            f"B is {100 * (ratio.ratio - 1):.1f}% slower "
            f"[95% CI {100 * (low - 1):.1f}%–{100 * (high - 1):.1f}%]"
        )
    width = 100 * max(abs(1 - low), abs(high - 1))
    return (
        f"No difference detectable at this noise (CI within ±{width:.1f}%, "
        f"noise band ±{100 * band:.0f}%)"
    )
