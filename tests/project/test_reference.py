"""The reference's shortcuts are the plain definitions they replace."""

from __future__ import annotations

from hypothesis import given, settings

from tests import reference, strategies


@settings(max_examples=200, deadline=None)
@given(strategies.spans(max_size=20))
def test_innermost_is_the_last_open_event_of_a_full_scan(spans: list[tuple[int, int]]) -> None:
    ops = sorted(
        (reference.Ev(f"op{k}", "cpu_op", ("1", "1"), a, b, {}) for k, (a, b) in enumerate(spans)),
        key=lambda e: (e.start, -e.dur),
    )  # opening order, as ``reference.events`` sorts them
    for t in range(-1, strategies.GRID + 2):
        around = [o for o in ops if o.start <= t < o.end]
        assert reference.innermost(ops, t) is (around[-1] if around else None)
