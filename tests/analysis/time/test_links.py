"""``cpu_tree`` and ``gpu_links``: operators nested per thread, GPU work to its launch call."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from steptrace.analysis.time.links import cpu_tree, gpu_links
from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable
from tests.tables import Row, driver, kernel, label, memcpy, memset, op, runtime, table


def name(t: EventTable, row: int) -> str | None:
    return None if row < 0 else t.name_of(row)


def test_operators_nest_through_labels_and_launches_climb_to_an_operator() -> None:
    t = table(
        op("outer", 0, 100),
        label("my_label", 5, 90),
        op("inner", 10, 40),
        runtime("cudaLaunchKernel", 20, 10, correlation=1),
        driver("cuLaunchKernel", 22, 5, correlation=2),
        op("sibling", 60, 20),
        runtime("cudaMemcpyAsync", 85, 5, correlation=3),
        runtime("cudaStreamSynchronize", 0, 10, thread=1),
        op("other_thread", 20, 50, thread=1),
    )
    tree = cpu_tree(t)
    parent_of = {
        name(t, int(r)): name(t, int(tree.ops[p]) if p >= 0 else -1)
        for r, p in zip(tree.ops, tree.op_parent, strict=True)
    }
    assert parent_of == {
        "outer": None,
        "inner": "outer",
        "sibling": "outer",
        "other_thread": None,  # another thread: not nested, however it overlaps
    }
    owner_of = {
        name(t, int(r)): name(t, int(tree.ops[o]) if o >= 0 else -1)
        for r, o in zip(tree.launches, tree.launch_owner, strict=True)
    }
    assert owner_of == {
        "cudaLaunchKernel": "inner",
        "cuLaunchKernel": "inner",  # a driver call inside the runtime call
        "cudaMemcpyAsync": "outer",
        "cudaStreamSynchronize": None,
    }


def test_only_operators_and_launch_calls_are_in_the_tree() -> None:
    t = table(label("x", 0, 10), Row(Kind.PYTHON_FUNCTION, "f", 0, 10), kernel("k", 0, 5))
    tree = cpu_tree(t)
    assert tree.ops.size == tree.launches.size == 0


def test_gpu_work_is_linked_to_its_launch_call_and_operator() -> None:
    t = table(
        op("aten::mm", 0, 20),
        runtime("cudaLaunchKernel", 5, 5, correlation=11),
        runtime("cudaMemcpyAsync", 30, 5, correlation=12),  # outside every operator
        op("aten::zero_", 40, 10),
        runtime("cudaMemsetAsync", 42, 3, correlation=13),
        kernel("gemm", 50, 10, correlation=11),
        memcpy("Memcpy HtoD (Pinned -> Device)", 60, 5, correlation=12),
        memset(70, 2, correlation=13),
        kernel("unlinked", 80, 5),
        kernel("unknown_correlation", 90, 5, correlation=99),
        Row(Kind.CUDA_SYNC, "Event Sync", 95, 1, (0, 7), correlation=11),
    )
    links = gpu_links(t, cpu_tree(t))
    found = [
        (name(t, int(r)), name(t, int(launch)), name(t, int(owner)))
        for r, launch, owner in zip(links.rows, links.launch, links.owner, strict=True)
    ]
    assert found == [
        ("gemm", "cudaLaunchKernel", "aten::mm"),
        ("Memcpy HtoD (Pinned -> Device)", "cudaMemcpyAsync", None),
        ("Memset (Device)", "cudaMemsetAsync", "aten::zero_"),
        ("unlinked", None, None),
        ("unknown_correlation", None, None),
    ]


def test_correlation_ids_are_matched_exactly_whatever_their_order() -> None:
    rows = [runtime("cudaLaunchKernel", 10 * k, 2, correlation=c) for k, c in enumerate([5, 1, 3])]
    kernels = [kernel(f"k{c}", 100 + k, 1, correlation=c) for k, c in enumerate([1, 3, 2, 5])]
    t = table(*rows, *kernels)
    links = gpu_links(t, cpu_tree(t))
    launched_at = [t.start_us[r] if r >= 0 else None for r in links.launch.tolist()]
    assert launched_at == [10, 20, None, 0]


def test_no_gpu_work_gives_empty_links() -> None:
    t = table(op("aten::mm", 0, 10), runtime("cudaLaunchKernel", 2, 2, correlation=1))
    links = gpu_links(t, cpu_tree(t))
    assert links.rows.size == links.launch.size == links.owner.size == 0


def test_gpu_work_without_any_launch_call_is_unlinked() -> None:
    t = table(kernel("a", 0, 10, correlation=1), memcpy("Memcpy DtoD (Device -> Device)", 5, 5))
    links = gpu_links(t, cpu_tree(t))
    assert links.launch.tolist() == links.owner.tolist() == [-1, -1]


def test_an_operator_and_a_call_that_start_and_end_together_the_operator_holds_the_call() -> None:
    for written in (
        [runtime("cudaLaunchKernel", 10, 5, correlation=1), op("aten::add", 10, 5)],
        [op("aten::add", 10, 5), runtime("cudaLaunchKernel", 10, 5, correlation=1)],
    ):
        t = table(op("outer", 0, 100), *written, op("aten::mul", 40, 5))
        tree = cpu_tree(t)
        owner_of = {
            name(t, int(r)): name(t, int(tree.ops[o]) if o >= 0 else -1)
            for r, o in zip(tree.launches, tree.launch_owner, strict=True)
        }
        parent_of = {
            name(t, int(r)): name(t, int(tree.ops[p]) if p >= 0 else -1)
            for r, p in zip(tree.ops, tree.op_parent, strict=True)
        }
        assert owner_of == {"cudaLaunchKernel": "aten::add"}
        assert parent_of == {"outer": None, "aten::add": "outer", "aten::mul": "outer"}
        assert list(tree.ops) == sorted(tree.ops) and list(tree.launches) == sorted(tree.launches)


_EVENT = st.tuples(st.booleans(), st.integers(0, 1), st.integers(0, 12), st.integers(0, 6))


@given(st.lists(_EVENT, max_size=40))
def test_the_tree_is_what_a_stack_walk_finds(events: list[tuple[bool, int, int, int]]) -> None:
    """Operators and calls on two threads, integer times (ties are common): each one's
    container is what a stack walk per thread finds, the events taken by start, longer
    first, operators before calls, then in table order; a call's owner is the first
    operator up its chain."""
    t = table(
        *(
            op(f"op{k}", s, d, thread=th) if is_op else runtime(f"call{k}", s, d, thread=th)
            for k, (is_op, th, s, d) in enumerate(events)
        )
    )
    is_op_row = t.kind == Kind.CPU_OP
    chosen = [r for r in range(len(t)) if t.kind[r] in (Kind.CPU_OP, Kind.RUNTIME)]
    walk = sorted(chosen, key=lambda r: (t.start_us[r], -t.dur_us[r], not is_op_row[r], r))
    container: dict[int, int] = {}
    for thread in set(t.thread_id.tolist()):
        stack: list[int] = []
        for r in (r for r in walk if t.thread_id[r] == thread):
            while stack and t.end_us[stack[-1]] <= t.start_us[r]:
                stack.pop()
            container[r] = stack[-1] if stack else -1
            stack.append(r)

    def owner(r: int) -> int:
        up = container[r]
        while up >= 0 and not is_op_row[up]:
            up = container[up]
        return up

    tree = cpu_tree(t)
    assert tree.ops.tolist() == [r for r in range(len(t)) if is_op_row[r]]
    assert tree.launches.tolist() == [r for r in range(len(t)) if t.kind[r] == Kind.RUNTIME]
    assert [int(tree.ops[p]) if p >= 0 else -1 for p in tree.op_parent] == [
        owner(r) for r in tree.ops.tolist()
    ]
    assert [int(tree.ops[p]) if p >= 0 else -1 for p in tree.launch_owner] == [
        owner(r) for r in tree.launches.tolist()
    ]
