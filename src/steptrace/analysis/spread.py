"""Small summaries shared by the analyses: median / min / max of per-step figures."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np


class Spread(msgspec.Struct, frozen=True):
    """Median, min and max of a figure over steps (or over events)."""

    median: float
    min: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float] | np.ndarray) -> Spread | None:
        """The spread of ``values``; ``None`` when there are none."""
        array = np.asarray(values, dtype=np.float64)
        if array.size == 0:
            return None
        return cls(float(np.median(array)), float(array.min()), float(array.max()))
