"""The verdict of an A/B timing: per-side summaries, the noise band, the verdict in words.

Pure numpy; nothing here touches a clock. The ratio B/A and its confidence interval come
from ``estimators``. A difference is only called when the whole 95% CI of the ratio lies
beyond ``band`` (default 1%), so that A against itself almost never looks different.
"""

from __future__ import annotations

from typing import Literal

import msgspec
import numpy as np
from numpy.typing import ArrayLike

from steptrace.validate.estimators import Estimate

Verdict = Literal[
    "faster", "slower", "no-detectable-difference", "outputs-differ", "too-few-samples"
]
NOISY, GROSS = 0.10, 0.25  # IQR / median, as torch.utils.benchmark warns


class SideStats(msgspec.Struct, frozen=True):
    """One side's steady-state samples and their dispersion (ms)."""

    n: int
    median: float
    iqr: float
    min: float
    max: float
    spread: float  # IQR / median
    noise: Literal["ok", "noisy", "gross"]


def summarize(samples: ArrayLike) -> SideStats:
    values = np.asarray(samples, dtype=np.float64)
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    spread = float((q3 - q1) / median) if median > 0 else float("inf")
    noise: Literal["ok", "noisy", "gross"] = (
        "gross" if spread > GROSS else "noisy" if spread > NOISY else "ok"
    )
    return SideStats(
        n=int(values.size),
        median=float(median),
        iqr=float(q3 - q1),
        min=float(values.min()),
        max=float(values.max()),
        spread=spread,
        noise=noise,
    )


def verdict(estimate: Estimate, band: float) -> Verdict:
    """Faster or slower only when the whole CI is beyond the noise band."""
    low, high = estimate.ci
    if low > 1 + band:
        return "slower"
    if high < 1 - band:
        return "faster"
    return "no-detectable-difference"


def sentence(
    outcome: Verdict, estimate: Estimate | None, band: float, unit: str = "ms/step"
) -> str:
    """The verdict in words: how many times faster or slower, and B's share of A's time.

    "B is 66% faster" is read both as "takes 66% less time" and as "does 66% more work
    per second"; the sentence says both figures instead: ``2.95x faster: it takes 33.9% of
    A's time per step``, with the CI on the same figure.
    """
    if outcome == "outputs-differ":
        return "B's outputs differ from A's beyond tolerance: no speed verdict is given."
    if outcome == "too-few-samples" or estimate is None:
        return "No verdict: too few timed steps for a confidence interval."
    low, high = estimate.ci
    band_text = f"a difference is called beyond ±{100 * band:g}%"
    if unit == "samples/s":
        share, bounds, what = 1 / estimate.ratio, (1 / high, 1 / low), "of A's samples per second"
        verb = "processes"
    else:
        share, bounds, what = estimate.ratio, (low, high), "of A's time per step"
        verb = "takes"
    level = f"{100 * estimate.confidence:g}% CI"
    interval = f"[{level} {_share(bounds[0])}–{_share(bounds[1])}]"
    if outcome == "no-detectable-difference":
        return (
            f"No difference detectable: B {verb} {_share(bounds[0])}–{_share(bounds[1])} {what} "
            f"({level}; {band_text})"
        )
    if outcome == "faster":
        times = f"{1 / estimate.ratio:.3g}× faster"
    else:
        times = f"{estimate.ratio:.3g}× slower"
    return f"B is {times}: it {verb} {_share(share)} {what} {interval}"


def _share(value: float) -> str:
    return f"{100 * value:.1f}%"
