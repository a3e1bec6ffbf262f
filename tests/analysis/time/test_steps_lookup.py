"""Which step holds each time, and each step's members: against the plain per-step loop.

``step_of`` bisects disjoint windows and ``indices_by_step`` groups by one sort; the
references below pass over every window (or step) and every time, as the definitions say.
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from steptrace.analysis.time.steps import StepWindow, indices_by_step, step_of
from tests.strategies import GRID, spans


def _windows(pairs: list[tuple[int, int]], disjoint: bool) -> tuple[StepWindow, ...]:
    if disjoint:  # consecutive pieces of the grid, in a shuffled order
        cuts = sorted({a for a, _ in pairs} | {0, GRID})
        pairs = list(itertools.pairwise(cuts))[::-1]
    return tuple(StepWindow(f"s{k}", k, -1, float(a), float(b)) for k, (a, b) in enumerate(pairs))


def _reference(windows: tuple[StepWindow, ...], times: np.ndarray) -> list[int]:
    """The latest-begun window holding each time (ties: the later in the tuple), else -1."""
    found = []
    for t in times.tolist():
        holding = [k for k, w in enumerate(windows) if w.start_us <= t < w.end_us]
        found.append(max(holding, key=lambda k: (windows[k].start_us, k)) if holding else -1)
    return found


times_on_grid = st.lists(
    st.one_of(st.integers(-2, GRID + 2).map(float), st.just(float("nan"))), max_size=30
)


@given(spans(), st.booleans(), times_on_grid)
def test_step_of_is_the_latest_begun_window_holding_each_time(
    pairs: list[tuple[int, int]], disjoint: bool, times: list[float]
) -> None:
    windows = _windows(pairs, disjoint)
    at = np.array(times, dtype=np.float64)
    assert step_of(windows, at).tolist() == _reference(windows, at)


@given(st.lists(st.integers(-1, 6), max_size=60), st.integers(0, 8))
def test_indices_by_step_are_each_steps_members_in_order(owner: list[int], count: int) -> None:
    array = np.array(owner, dtype=np.int64)
    groups = indices_by_step(array, count)
    assert len(groups) == count
    for k, group in enumerate(groups):
        assert group.tolist() == np.flatnonzero(array == k).tolist()


def test_a_single_time_gets_a_single_step() -> None:
    steps = (StepWindow("s0", 0, -1, 0.0, 3.0), StepWindow("s1", 1, -1, 3.0, 6.0))
    assert step_of(steps, np.float64(4.0)).shape == ()
    assert int(step_of(steps, np.float64(4.0))) == 1
    assert int(step_of(steps, np.array(7.0))) == -1
