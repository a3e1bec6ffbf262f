"""``cpu_per_step``: operator time as a union over threads, calls counted where they start."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from steptrace.analysis.spread import Spread
from steptrace.analysis.time.cpu import CpuStep, cpu_per_step
from steptrace.analysis.time.links import cpu_tree
from steptrace.analysis.time.steps import StepWindow, find_steps
from steptrace.trace.table import EventTable
from tests.strategies import GRID
from tests.tables import label, ms, op, runtime, step, table, windows


def per_step(t: EventTable, steps: tuple[StepWindow, ...] | None = None) -> tuple[CpuStep, ...]:
    return cpu_per_step(t, cpu_tree(t), steps or find_steps(t).windows)


def test_busy_is_a_union_over_threads_and_nesting() -> None:
    t = table(
        step(1, 0, 100),
        op("aten::linear", 10, 40),
        op("aten::mm", 20, 10),  # nested: no extra time
        op("aten::add", 30, 50, thread=1),  # concurrent on another thread
    )
    (cpu,) = per_step(t)
    assert cpu.busy_ms == ms(70)
    assert cpu.operators == 3
    assert cpu.operator_us == Spread(40, 10, 50)


def test_operators_belong_to_the_step_they_start_in_and_busy_is_clipped() -> None:
    t = table(step(1, 0, 100), step(2, 100, 100), op("aten::mm", 80, 40), op("aten::add", 100, 5))
    first, second = per_step(t)
    assert (first.busy_ms, second.busy_ms) == (ms(20), ms(20))
    assert (first.operators, second.operators) == (1, 1)  # the one at 100 is step 2's
    assert (first.operator_us, second.operator_us) == (Spread(40, 40, 40), Spread(5, 5, 5))


def test_labels_and_runtime_calls_are_not_operators() -> None:
    (cpu,) = per_step(table(step(1, 0, 100), label("train", 0, 90), runtime("cudaMalloc", 5, 5)))
    assert (cpu.busy_ms, cpu.operators, cpu.operator_us, cpu.grad_recording) == (0, 0, None, 0)


def test_grad_recording_counts_the_operators_autograd_recorded() -> None:
    t = table(
        step(1, 0, 100),
        op("aten::mm", 0, 10, grad=True),
        op("aten::add", 20, 10),
        op("aten::relu", 40, 10, grad=True),
    )
    (cpu,) = per_step(t)
    assert (cpu.operators, cpu.grad_recording) == (3, 2)


def test_a_zero_length_step_counts_nothing() -> None:
    t = table(op("aten::mm", 40, 20))
    first, empty, last = per_step(t, windows((0, 50), (50, 50), (50, 100)))
    assert (empty.busy_ms, empty.operators, empty.operator_us) == (0, 0, None)
    assert (first.busy_ms, first.operators, last.busy_ms, last.operators) == (ms(10), 1, ms(10), 0)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, GRID), st.integers(0, 20), st.integers(0, 2)),
        max_size=12,
    ),
    st.sets(st.integers(1, GRID - 1), max_size=3),
)
def test_busy_and_counts_match_a_cell_by_cell_reference(
    ops: list[tuple[int, int, int]], cuts: set[int]
) -> None:
    t = table(*(op(f"op{k % 2}", s, d, thread) for k, (s, d, thread) in enumerate(ops)))
    steps = windows(*pairwise([0, *sorted(cuts), GRID]))
    cells = {c for s, d, _ in ops for c in range(s, s + d)}
    for window, cpu in zip(steps, per_step(t, steps), strict=True):
        lo, hi = int(window.start_us), int(window.end_us)
        assert cpu.busy_ms == ms(len(cells & set(range(lo, hi))))
        assert cpu.operators == sum(lo <= s < hi for s, _, _ in ops)
