"""The numpy helpers give numpy's own answers, faster where the input allows."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from steptrace.trace.arrays import distinct, in_order

_FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)


@given(st.lists(_FLOATS, max_size=40), st.booleans())
def test_in_order_is_numpy_sort(values: list[float], presorted: bool) -> None:
    array = np.array(sorted(v for v in values if v == v) if presorted else values, np.float64)
    found = in_order(array)
    assert np.array_equal(found, np.sort(array), equal_nan=True)
    assert found is not array  # a new array, as np.sort's: the caller may change it


@given(st.lists(st.integers(-(2**40), 2**40), max_size=40))
def test_distinct_of_ordered_values_is_numpy_unique(values: list[int]) -> None:
    array = np.sort(np.array(values, dtype=np.int64))  # the path that skips the sort
    assert distinct(array).tolist() == np.unique(array).tolist()
