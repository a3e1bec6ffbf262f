"""``operator_stats``: self time without nested operators, recursion counted once, GPU work."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from steptrace.analysis.time.links import cpu_tree, gpu_links
from steptrace.analysis.time.operators import OperatorStat, operator_stats
from steptrace.trace.table import EventTable
from tests.tables import kernel, label, memcpy, ms, op, runtime, table

Figures = tuple[str, int, float, float, float | None, int | None]


def stats(t: EventTable, *, gpu: bool = True) -> tuple[OperatorStat, ...]:
    tree = cpu_tree(t)
    return operator_stats(t, tree, gpu_links(t, tree) if gpu else None)


def figures(found: tuple[OperatorStat, ...]) -> list[Figures]:
    return [(s.name, s.calls, s.self_ms, s.inclusive_ms, s.gpu_ms, s.gpu_launches) for s in found]


def example() -> EventTable:
    return table(
        op("aten::linear", 0, 100),
        op("aten::mm", 10, 50),
        runtime("cudaLaunchKernel", 20, 10, correlation=1),  # stays in aten::mm's self time
        op("aten::add", 70, 20),
        runtime("cudaLaunchKernel", 75, 5, correlation=2),
        kernel("gemm", 110, 30, correlation=1),
        kernel("add_kernel", 120, 8, stream=8, correlation=2),
        op("aten::copy_", 200, 10),
        runtime("cudaMemcpyAsync", 202, 3, correlation=3),
        memcpy("Memcpy HtoD (Pageable -> Device)", 230, 4, correlation=3),
        kernel("unlinked", 250, 10),
        runtime("cudaLaunchKernel", 300, 5, correlation=4),  # outside every operator
        kernel("orphan", 310, 5, correlation=4),
    )


def test_self_inclusive_and_the_gpu_work_each_operator_launched() -> None:
    assert figures(stats(example())) == [
        ("aten::mm", 1, ms(50), ms(50), ms(30), 1),
        ("aten::linear", 1, ms(30), ms(100), 0, 0),
        ("aten::add", 1, ms(20), ms(20), ms(8), 1),
        ("aten::copy_", 1, ms(10), ms(10), ms(4), 1),
    ]


def test_without_links_gpu_figures_are_none() -> None:
    assert [(s.gpu_ms, s.gpu_launches) for s in stats(example(), gpu=False)] == [(None, None)] * 4


def test_a_recursive_call_is_not_counted_twice() -> None:
    direct = table(op("f", 0, 100), op("f", 10, 80), op("g", 20, 10))
    assert figures(stats(direct, gpu=False)) == [
        ("f", 2, ms(90), ms(100), None, None),
        ("g", 1, ms(10), ms(10), None, None),
    ]
    through_another = table(op("f", 0, 100), op("g", 10, 80), op("f", 20, 30))
    assert figures(stats(through_another, gpu=False)) == [
        ("f", 2, ms(50), ms(100), None, None),  # equal self time: by name
        ("g", 1, ms(50), ms(80), None, None),
    ]


def test_calls_on_two_threads_are_not_recursion() -> None:
    t = table(op("f", 0, 50), op("f", 10, 50, thread=1))
    ((name, calls, own, inclusive, _, _),) = figures(stats(t))
    assert (name, calls, own, inclusive) == ("f", 2, ms(100), ms(100))


def test_labels_do_not_take_self_time() -> None:
    t = table(op("outer", 0, 100), label("my_label", 10, 80), op("inner", 20, 30))
    assert [(s.name, s.self_ms) for s in stats(t)] == [("outer", ms(70)), ("inner", ms(30))]


def test_a_child_running_past_its_parent_is_clipped() -> None:
    t = table(op("a", 0, 10), op("b", 8, 4))
    assert [(s.name, s.self_ms, s.inclusive_ms) for s in stats(t)] == [
        ("a", ms(8), ms(10)),
        ("b", ms(4), ms(4)),
    ]


def test_the_most_frequent_input_shapes_and_their_types() -> None:
    small, large = "[[2, 3], [3, 4]]", "[[5, 5]]"
    types = '["float", "float"]'
    t = table(
        op("aten::mm", 0, 10, shapes=large, types='["float"]'),
        op("aten::mm", 20, 10, shapes=small, types=types),
        op("aten::mm", 40, 10, shapes=small, types=types),
        op("aten::add", 60, 5),
        op("aten::relu", 70, 1, shapes="[[1]]"),  # shapes recorded, types not
    )
    found = {s.name: (s.input_shapes, s.input_types) for s in stats(t)}
    assert found == {
        "aten::mm": (small, types),
        "aten::add": (None, None),
        "aten::relu": ("[[1]]", None),
    }


def test_no_operators() -> None:
    assert stats(table(label("x", 0, 10), kernel("k", 0, 5))) == ()


@st.composite
def nested_ops(draw: st.DrawFn) -> list[tuple[str, int, int]]:
    """Properly nested operators of positive length on one thread, named f, g or h."""
    out: list[tuple[str, int, int]] = []

    def grow(lo: int, hi: int, depth: int) -> None:
        if hi - lo < 1 or depth > 5:
            return
        a = draw(st.integers(lo, hi - 1))
        b = draw(st.integers(a + 1, hi))
        out.append((draw(st.sampled_from("fgh")), a, b))
        if draw(st.booleans()):
            grow(a, b, depth + 1)
        if draw(st.booleans()):
            grow(b, hi, depth + 1)

    grow(0, 60, 0)
    return out


@settings(max_examples=150, deadline=None)
@given(nested_ops())
def test_self_and_inclusive_match_a_cell_by_cell_reference(ops: list[tuple[str, int, int]]) -> None:
    order = sorted(ops, key=lambda x: (x[1], -(x[2] - x[1])))  # the loader's order
    own: dict[str, int] = {}
    covered: dict[str, set[int]] = {}
    for cell in range(60):
        open_ = [name for name, s, e in order if s <= cell < e]
        if open_:
            own[open_[-1]] = own.get(open_[-1], 0) + 1  # the innermost owns the cell
        for name in open_:
            covered.setdefault(name, set()).add(cell)
    found = stats(table(*(op(name, s, e - s) for name, s, e in ops)))
    assert {s.name: s.self_ms for s in found} == {n: ms(own.get(n, 0)) for n in covered}
    assert {s.name: s.inclusive_ms for s in found} == {n: ms(len(c)) for n, c in covered.items()}
    assert {s.name: s.calls for s in found} == {n: [o[0] for o in ops].count(n) for n in covered}
    assert [s.self_ms for s in found] == sorted((s.self_ms for s in found), reverse=True)
