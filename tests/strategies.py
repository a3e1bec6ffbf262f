"""Hypothesis strategies shared by the property tests."""

from __future__ import annotations

from hypothesis import strategies as st

GRID = 60  # small integer timelines: the reference can check every unit cell


@st.composite
def spans(draw: st.DrawFn, max_size: int = 12) -> list[tuple[int, int]]:
    """Unsorted, possibly overlapping, nested or empty integer intervals on [0, GRID]."""
    pairs = draw(st.lists(st.tuples(st.integers(0, GRID), st.integers(0, GRID)), max_size=max_size))
    return [(min(a, b), max(a, b)) for a, b in pairs]
