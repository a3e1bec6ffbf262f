"""numpy helpers the analyses share."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

_T = np.generic


def distinct(values: NDArray[_T]) -> NDArray[_T]:
    """The distinct values, sorted: ``np.unique(values)`` by one sort.

    numpy 2.3+ finds the distinct integers of a plain ``np.unique`` by hashing, measured
    here 100x slower than sorting on a million spread-out ids (1.4 s against 11 ms).
    NaNs, if any, are kept each (unlike ``np.unique``): pass integers.
    """
    ordered = np.sort(values, axis=None)
    if ordered.size == 0:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]
