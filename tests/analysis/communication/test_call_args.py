"""The column-wise readers of collective calls agree with the one-value-at-a-time rule."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from steptrace.analysis.communication.call_args import first_of_each, nanoseconds_at

CLOCK_NS = 1_700_000_000_000_000_000  # an epoch clock: beyond float64's exact integers


@given(st.lists(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False), max_size=50))
def test_nanoseconds_are_rounded_as_round_rounds_them(us: list[float]) -> None:
    expected = [CLOCK_NS + round(x * 1000) for x in us]
    assert nanoseconds_at(np.array(us, dtype=np.float64), CLOCK_NS) == expected


def test_ties_go_to_even_as_round_does() -> None:
    us = np.array([0.0005, 0.0015, 0.0025, -0.0005])  # x 1000: 0.5, 1.5, 2.5, -0.5
    assert nanoseconds_at(us, 0) == [round(x * 1000) for x in us.tolist()]


def test_values_beyond_int64_stay_exact_python_integers() -> None:
    huge = np.array([1e17, 3.5])  # 1e20 ns: beyond int64
    assert nanoseconds_at(huge, 7) == [7 + round(1e17 * 1000), 7 + round(3.5 * 1000)]


def test_a_nan_is_refused_as_round_refuses_it() -> None:
    with pytest.raises(ValueError):
        nanoseconds_at(np.array([1.0, math.nan]), 0)


def test_groups_laid_end_to_end_start_where_the_ones_before_end() -> None:
    assert first_of_each([[4], [1, 2, 3], [9, 9]]).tolist() == [0, 1, 4]
