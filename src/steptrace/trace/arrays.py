"""numpy helpers the analyses share."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

_T = np.generic
_INT32 = np.iinfo(np.int32)


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


def by_start_longer_first(start: NDArray[Any], dur: NDArray[Any]) -> NDArray[np.intp]:
    """The order by start, longer first, then as given: ``np.lexsort((-dur, start))``.

    A stable sort of the starts alone (runs of sorted events make it fast), then only the
    events sharing a start sorted again by duration: 5x faster than lexsort on a
    4 M-event table.
    """
    order = np.argsort(start, kind="stable")
    ordered = start[order]
    tied = ordered[1:] == ordered[:-1]
    if tied.any():
        grouped = np.flatnonzero(np.append(tied, False) | np.insert(tied, 0, False))
        rows = order[grouped]  # each group of equal starts in given order, groups by start
        order[grouped] = rows[np.lexsort((-dur[rows], start[rows]))]
    return order


def fits_int32(values: NDArray[Any]) -> bool:
    """Every value of an integer array fits in int32 (an empty one: yes)."""
    return not values.size or bool(_INT32.min <= values.min() and values.max() <= _INT32.max)
