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


def ratio_stats(
    a: ArrayLike, b: ArrayLike, *, block: int = 1, seed: int = 0, resamples: int = 2000
) -> RatioStats:
    """Ratio of medians B/A, with a CI from a bootstrap over whole blocks, and a rank test.

    Samples come in blocks of ``block`` steps run back to back under the same conditions;
    A's block ``k`` and B's block ``k`` ran next to each other. Resampling whole block
    pairs keeps both facts: resampling single steps would treat correlated steps as
    independent and give an interval too narrow for drifting timings.
    """
    from scipy import stats

    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    if block < 1 or x.size != y.size or x.size % block:
        block = 1
    xs, ys = x.reshape(-1, block), y.reshape(-1, block)
    ratio = float(np.median(y) / np.median(x))

    def statistic(picked: np.ndarray, axis: int) -> np.ndarray:
        index = picked.astype(np.intp)  # resampled block numbers
        first = xs[index].reshape(*index.shape[:-1], -1)
        second = ys[index].reshape(*index.shape[:-1], -1)
        result: np.ndarray = np.median(second, axis=-1) / np.median(first, axis=-1)
        return result

    result = stats.bootstrap(
        (np.arange(xs.shape[0], dtype=np.float64),), statistic, vectorized=True,
        n_resamples=resamples, confidence_level=CONFIDENCE, method="percentile",
        rng=np.random.default_rng(seed),
    )  # fmt: skip
    differences = np.median(ys, axis=1) - np.median(xs, axis=1)  # one pair per block
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


def sentence(outcome: Verdict, ratio: RatioStats | None, band: float, unit: str = "ms/step") -> str:
    """The verdict in words, with its interval (as throughput when the unit is samples/s)."""
    if outcome == "outputs-differ" or ratio is None:
        return "B's outputs differ from A's beyond tolerance: no speed verdict is given."
    low, high = ratio.ci
    if unit == "samples/s" and outcome != "no-detectable-difference":
        gain = 1 / ratio.ratio - 1
        bounds = sorted(abs(1 / r - 1) for r in (low, high))
        word = "more" if gain > 0 else "fewer"
        return (
            f"B processes {100 * abs(gain):.1f}% {word} samples per second "
            f"[95% CI {100 * bounds[0]:.1f}%–{100 * bounds[1]:.1f}%]"
        )
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
