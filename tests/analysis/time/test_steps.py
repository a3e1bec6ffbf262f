"""``find_steps``: ProfilerStep labels in time order, else one window over every event."""

from __future__ import annotations

import pytest

from steptrace.analysis.time.steps import WHOLE_WINDOW, find_steps
from steptrace.trace.kinds import Kind
from tests.tables import CPU_PID, Row, kernel, label, op, span, step, table


def test_markers_give_the_steps_in_time_order() -> None:
    t = table(step(2, 100, 50, thread=3), op("aten::mm", 0, 500), step(1, 10, 90, thread=3))
    steps = find_steps(t)
    assert steps.from_markers
    assert [(w.name, w.number, w.start_us, w.end_us) for w in steps.windows] == [
        ("ProfilerStep#1", 1, 10, 100),
        ("ProfilerStep#2", 2, 100, 150),
    ]
    assert [t.threads[w.thread] for w in steps.windows] == [(CPU_PID, 3)] * 2
    assert [w.wall_ms for w in steps.windows] == pytest.approx([0.09, 0.05])


def test_the_step_number_is_read_from_the_name() -> None:
    (window,) = find_steps(table(step(123456, 0, 10))).windows
    assert window.number == 123456


def test_without_markers_one_window_spans_every_event_but_the_profiler_span() -> None:
    t = table(span(0, 1000), op("aten::add", 10, 5), kernel("k", 30, 20), label("x", 12, 2))
    steps = find_steps(t)
    assert not steps.from_markers
    (window,) = steps.windows
    assert (window.name, window.number, window.thread) == (WHOLE_WINDOW, None, -1)
    assert (window.start_us, window.end_us) == (10, 50)


def test_a_trace_of_profiler_spans_only_is_their_window() -> None:
    (window,) = find_steps(table(span(5, 10), span(8, 20))).windows
    assert (window.start_us, window.end_us) == (5, 28)


@pytest.mark.parametrize(
    "row",
    [
        Row(Kind.GPU_USER_ANNOTATION, "ProfilerStep#1", 0, 100, (0, 7)),  # GPU side
        Row(Kind.CPU_OP, "ProfilerStep#1", 0, 100),
        label("ProfilerStep#1x", 0, 100),
        label("ProfilerStep#", 0, 100),
        label("MyProfilerStep#1", 0, 100),
    ],
    ids=["gpu-annotation", "cpu-op", "suffix", "no-number", "prefix"],
)
def test_only_cpu_side_profiler_step_labels_are_markers(row: Row) -> None:
    steps = find_steps(table(row, op("aten::mm", 20, 200)))
    assert not steps.from_markers
    (window,) = steps.windows
    assert (window.start_us, window.end_us) == (0, 220)


def test_a_zero_length_step_is_kept() -> None:
    steps = find_steps(table(step(1, 0, 50), step(2, 50, 0), step(3, 60, 30)))
    assert [(w.number, w.start_us, w.end_us) for w in steps.windows] == [
        (1, 0, 50),
        (2, 50, 50),
        (3, 60, 90),
    ]
    assert steps.windows[1].wall_ms == 0
