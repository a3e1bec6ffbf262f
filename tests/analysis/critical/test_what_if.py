"""What-if on every real trace's critical-path graph: the replay gives the trace's own
times, and a target made faster never gains more than its time on the path allows."""

from __future__ import annotations

import numpy as np
import pytest

from steptrace.analysis.context import TraceContext
from steptrace.analysis.critical.path import Walked, critical_path, walked
from steptrace.analysis.critical.what_if import predict, target_slices
from steptrace.analysis.critical.what_if_table import _defaults, _on_path
from steptrace.trace.load import load_trace
from tests.conftest import Case

ROUNDING_NS = 1000  # a scaled slice is rounded to the nanosecond: far under this


@pytest.fixture(scope="module")
def found(analyzed: Case) -> tuple[TraceContext, Walked]:
    context = TraceContext(load_trace(analyzed.path))
    return context, walked(context)


def test_the_replay_without_change_gives_the_paths_own_length(
    found: tuple[TraceContext, Walked],
) -> None:
    _, w = found
    nothing = np.zeros(len(w.graph), dtype=bool)
    for start, (lane, end) in zip(w.starts_ns, w.ends, strict=True):
        assert predict(w.graph, start, lane, end, nothing, 1.0) == end - start
        everything = ~nothing
        assert predict(w.graph, start, lane, end, everything, 1.0) == end - start


@pytest.mark.parametrize("speedup", [2.0, 1e6])
def test_no_target_gains_more_than_its_time_on_the_path(
    found: tuple[TraceContext, Walked], speedup: float
) -> None:
    context, w = found
    for name in [*_defaults(context, w.graph, list(w.paths)), "kind:wait", "aten::mm"]:
        chosen = target_slices(w.graph, context.events, name)
        for path, start, (lane, end) in zip(w.paths, w.starts_ns, w.ends, strict=True):
            predicted = predict(w.graph, start, lane, end, chosen, speedup)
            gain = end - start - predicted
            assert 0 <= gain <= _on_path(path, chosen) * (1 - 1 / speedup) + ROUNDING_NS, name
            faster = predict(w.graph, start, lane, end, chosen, speedup * 2)
            assert faster <= predicted + ROUNDING_NS  # faster never predicts slower


def test_the_table_lists_the_largest_parts_and_the_users_targets(analyzed: Case) -> None:
    context = TraceContext(load_trace(analyzed.path), what_if=(("no such event", 3.0),))
    table = critical_path(context).what_if
    assert table[0].target == "no such event" and table[0].speedup == 3.0
    assert table[0].on_path_ms == 0 and table[0].step_ms == table[0].length_ms
    for row in table:
        gain = row.length_ms - row.step_ms
        assert -1e-9 <= gain <= row.on_path_ms * (1 - 1 / row.speedup) + ROUNDING_NS / 1e6
    defaults = [r for r in table[1:] if r.target.startswith("kind:")]
    assert defaults, "the path's largest kinds of work are always targets"
