"""``phases_per_step``: labels per step, exclusive pieces on the timeline, never twice."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steptrace.analysis.time.parts import part_of
from steptrace.analysis.time.phases import (
    Phase,
    StepPhases,
    label_rows,
    phases_per_step,
)
from steptrace.analysis.time.steps import StepWindow, find_steps
from steptrace.trace import intervals as iv
from steptrace.trace.table import EventTable
from tests.strategies import GRID, spans
from tests.tables import kernel, label, ms, op, step, table, windows

DATALOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def busy(*pairs: tuple[float, float]) -> iv.Intervals:
    return iv.union(np.array([p[0] for p in pairs], float), np.array([p[1] for p in pairs], float))


def phases(
    t: EventTable,
    steps: tuple[StepWindow, ...] | None = None,
    gpu: iv.Intervals | None = None,
    launches: list[float] | None = None,
) -> tuple[StepPhases, ...]:
    starts = None if launches is None else np.array(launches, dtype=float)
    return phases_per_step(t, steps or find_steps(t).windows, gpu, starts)


def named(step_phases: StepPhases) -> dict[str, Phase]:
    return {p.name: p for p in step_phases.phases}


def test_label_rows_are_user_labels_without_step_markers() -> None:
    t = table(step(1, 0, 100), label("train", 10, 50), op("aten::mm", 20, 5), kernel("k", 30, 5))
    assert [t.name_of(r) for r in label_rows(t)] == ["train"]


def test_nested_labels_are_not_counted_twice() -> None:
    t = table(
        step(1, 0, 100),
        label("train", 10, 80),
        label("forward", 10, 30),
        label("backward", 40, 40),
    )
    (result,) = phases(t)
    assert [p.name for p in result.phases] == ["train", "forward", "backward"]
    found = named(result)
    assert [found[n].exclusive_ms for n in ("train", "forward", "backward")] == [
        ms(10),
        ms(30),
        ms(40),
    ]
    assert [found[n].inclusive_ms for n in ("train", "forward", "backward")] == [
        ms(80),
        ms(30),
        ms(40),
    ]
    assert found["train"].share == pytest.approx(0.1)
    assert found["backward"].share == pytest.approx(0.4)
    assert result.unlabeled_ms == ms(20)
    assert all(p.calls == 1 for p in result.phases)


def test_without_gpu_the_gpu_figures_are_none() -> None:
    (result,) = phases(table(step(1, 0, 100), label("train", 10, 80)))
    (train,) = result.phases
    assert (train.gpu_idle_ms, train.gpu_idle_exclusive_ms, train.gpu_launches) == (None,) * 3
    assert result.reading is None


def test_repeated_label_counts_calls_and_adds_its_spans() -> None:
    (result,) = phases(table(step(1, 0, 100), label("fwd", 10, 10), label("fwd", 30, 20)))
    (fwd,) = result.phases
    assert (fwd.calls, fwd.inclusive_ms, fwd.exclusive_ms) == (2, ms(30), ms(30))
    assert result.unlabeled_ms == ms(70)


def test_overlapping_labels_share_the_time_once() -> None:
    # a [10, 50] and b [30, 70] on one thread: b is innermost from 30 on
    (result,) = phases(table(step(1, 0, 100), label("a", 10, 40), label("b", 30, 40)))
    found = named(result)
    assert (found["a"].exclusive_ms, found["b"].exclusive_ms) == (ms(20), ms(40))
    assert (found["a"].inclusive_ms, found["b"].inclusive_ms) == (ms(40), ms(40))
    assert result.unlabeled_ms == ms(40)


def test_labels_of_other_threads_do_not_nest_and_are_not_unlabeled_time() -> None:
    t = table(step(1, 0, 100), label("load", 0, 50, thread=1), label("train", 20, 60))
    (result,) = phases(t)
    found = named(result)
    assert (found["load"].exclusive_ms, found["train"].exclusive_ms) == (ms(50), ms(60))
    assert result.unlabeled_ms == ms(40)  # step thread only: [0, 20] and [80, 100]


def test_one_label_on_two_threads_at_once_is_a_union() -> None:
    t = table(step(1, 0, 100), label("worker", 0, 40, thread=1), label("worker", 20, 40, thread=2))
    ((worker,),) = (r.phases for r in phases(t))
    assert (worker.calls, worker.inclusive_ms, worker.exclusive_ms) == (2, ms(60), ms(60))


def test_a_label_crossing_a_step_boundary_is_split() -> None:
    t = table(
        step(1, 0, 100),
        step(2, 100, 100),
        label("outer", 60, 80),
        label("inner", 90, 20),
    )
    first, second = phases(t)
    for result in (first, second):
        assert [p.name for p in result.phases] == ["outer", "inner"]
        found = named(result)
        assert (found["outer"].inclusive_ms, found["outer"].exclusive_ms) == (ms(40), ms(30))
        assert (found["inner"].inclusive_ms, found["inner"].exclusive_ms) == (ms(10), ms(10))
        assert found["outer"].calls == found["inner"].calls == 1
    assert (first.unlabeled_ms, second.unlabeled_ms) == (ms(60), ms(60))


def test_labels_are_listed_in_the_order_they_first_appear() -> None:
    t = table(step(1, 0, 100), label("b", 10, 10), label("a", 30, 10), label("b", 50, 10))
    (result,) = phases(t)
    assert [p.name for p in result.phases] == ["b", "a"]


def test_gpu_idle_inclusive_exclusive_and_launches() -> None:
    # fwd [20, 60] > inner [40, 55]; GPU busy [0, 30] and [50, 60]
    t = table(step(1, 0, 100), label("fwd", 20, 40), label("inner", 40, 15))
    (result,) = phases(t, gpu=busy((0, 30), (50, 60)), launches=[5, 25, 45, 61, 70])
    found = named(result)
    assert found["fwd"].gpu_idle_ms == ms(20)  # idle in [30, 50]
    assert found["fwd"].gpu_idle_exclusive_ms == ms(10)  # own [20, 40] + [55, 60]: idle 30-40
    assert found["inner"].gpu_idle_ms == ms(10)
    assert found["inner"].gpu_idle_exclusive_ms == ms(10)
    assert (found["fwd"].gpu_launches, found["inner"].gpu_launches) == (2, 1)


def test_launches_are_counted_in_half_open_spans() -> None:
    (result,) = phases(table(step(1, 0, 100), label("fwd", 20, 40)), gpu=busy(), launches=[20, 60])
    assert named(result)["fwd"].gpu_launches == 1  # at its start, not at its end


def test_zero_length_labels_inside_the_step_are_listed() -> None:
    (result,) = phases(table(step(1, 0, 100), label("mark", 0, 0), label("mid", 50, 0)))
    assert [(p.name, p.calls, p.inclusive_ms, p.exclusive_ms) for p in result.phases] == [
        ("mark", 1, 0, 0),
        ("mid", 1, 0, 0),
    ]
    assert result.unlabeled_ms == ms(100)


def test_gpu_busy_outside_the_step_does_not_hide_idle_time() -> None:
    t = table(step(1, 0, 100), step(2, 100, 100), label("tail", 80, 40))
    first, second = phases(t, gpu=busy((100, 110)), launches=[])
    assert named(first)["tail"].gpu_idle_ms == ms(20)
    assert named(second)["tail"].gpu_idle_ms == ms(10)
    assert named(first)["tail"].gpu_launches == 0


def test_reading_is_the_union_of_the_data_read_labels() -> None:
    t = table(
        step(1, 0, 100),
        label(DATALOADER, 0, 30),
        label("read_batch", 20, 25),  # [20, 45], crossing the DataLoader's label
        label("decode", 35, 5),  # inside read_batch: still reading
        label("train", 50, 50),
    )
    (result,) = phases(t, gpu=busy((20, 100)), launches=[])
    assert result.reading is not None
    assert result.reading.ms == ms(45)  # [0, 45]
    assert result.reading.gpu_idle_ms == ms(20)
    assert result.reading.labels == (DATALOADER, "read_batch")


@pytest.mark.parametrize(
    ("name", "reads"),
    [
        (DATALOADER, True),
        ("read_batch", True),
        ("data_load", True),
        ("Dataload", True),
        ("load_batch", True),
        ("next_batch", True),
        ("fetch_inputs", True),
        ("data_read", True),
        ("[pl][profile][_TrainingEpochLoop].train_dataloader_next", True),
        ("train", False),
        ("loader", False),
        ("forward", False),
    ],
)
def test_data_read_names(name: str, reads: bool) -> None:
    assert (part_of(name) == "data_read") is reads


def test_each_label_says_which_part_it_was_read_as() -> None:
    t = table(
        step(1, 0, 100),
        label("data_read", 0, 20),
        label("model", 20, 30),
        label("optimizer_step", 50, 10),
    )
    (result,) = phases(t, gpu=busy((30, 100)), launches=[])
    assert {p.name: p.part for p in result.phases} == {
        "data_read": "data_read",
        "model": None,
        "optimizer_step": "optimizer_step",
    }
    assert result.reading is not None and result.reading.labels == ("data_read",)
    assert result.reading.ms == ms(20) and result.reading.gpu_idle_ms == ms(20)


def test_operators_recorded_by_autograd_are_counted_where_they_start() -> None:
    t = table(
        step(1, 0, 100),
        label("request", 0, 100),
        label("transfer", 0, 10),
        op("aten::to", 2, 3, grad=True),  # the harness moves the batch in grad mode
        label("forward", 10, 80),
        op("aten::linear", 20, 10),  # under inference_mode: no sequence number
        op("aten::relu", 40, 10, thread=1, grad=True),  # another thread, while forward ran
        op("aten::add", 95, 2, grad=True),  # after forward
    )
    (result,) = phases(t)
    counted = {p.name: p.grad_recording for p in result.phases}
    assert counted == {"request": 3, "transfer": 1, "forward": 1}


def test_recorded_operators_count_once_per_part() -> None:
    """Nested labels of one part (DDP's forward inside the user's): the outermost counts the
    operators, so that the part's labels add up; siblings each count their own."""
    t = table(
        step(1, 0, 100),
        label("forward", 0, 40),
        label("DistributedDataParallel.forward", 5, 30),
        op("aten::linear", 10, 5, grad=True),
        label("model_forward", 50, 40),  # a second forward, beside the first
        op("aten::linear", 60, 5, grad=True),
        op("aten::relu", 70, 5, grad=True),
    )
    (result,) = phases(t)
    counted = {p.name: p.grad_recording for p in result.phases}
    assert counted == {"forward": 1, "DistributedDataParallel.forward": 0, "model_forward": 2}


def test_the_whole_window_has_no_unlabeled_time() -> None:
    (result,) = phases(table(op("aten::mm", 0, 100), label("train", 10, 50)))
    assert result.unlabeled_ms is None
    assert named(result)["train"].share == pytest.approx(0.5)


def test_a_zero_length_step_has_zero_figures() -> None:
    t = table(step(1, 0, 50), step(2, 50, 0), label("x", 40, 20))
    first, empty = phases(t, steps=windows((0, 50), (50, 50)))
    assert named(first)["x"].exclusive_ms == ms(10)
    (x,) = empty.phases
    assert (x.inclusive_ms, x.exclusive_ms, x.share) == (0, 0, 0)
    assert empty.unlabeled_ms == 0


@st.composite
def nested_labels(draw: st.DrawFn) -> list[tuple[str, int, int]]:
    """Properly nested labels of positive length on [0, GRID], named a, b or c."""
    out: list[tuple[str, int, int]] = []

    def grow(lo: int, hi: int, depth: int) -> None:
        if hi - lo < 1 or depth > 4:
            return
        a = draw(st.integers(lo, hi - 1))
        b = draw(st.integers(a + 1, hi))
        out.append((draw(st.sampled_from("abc")), a, b))
        if draw(st.booleans()):
            grow(a, b, depth + 1)
        if draw(st.booleans()):
            grow(b, hi, depth + 1)

    grow(0, GRID, 0)
    return out


def reference(
    labels: list[tuple[str, int, int]], lo: int, hi: int, busy_cells: set[int]
) -> tuple[dict[str, tuple[int, int, int, int, int]], int]:
    """Per name (calls, inclusive, exclusive, idle, exclusive idle) and unlabeled, by cell."""
    order = sorted(labels, key=lambda x: (x[1], -(x[2] - x[1])))  # the loader's order
    figures: dict[str, list[int]] = {}
    unlabeled = 0
    for name, s, e in order:
        if s < hi and e > lo:
            figures.setdefault(name, [0] * 5)[0] += 1
    for cell in range(lo, hi):
        open_ = [name for name, s, e in order if s <= cell < e]
        if not open_:
            unlabeled += 1
            continue
        idle = cell not in busy_cells
        for name in set(open_):
            figures[name][1] += 1
            figures[name][3] += idle
        figures[open_[-1]][2] += 1  # the innermost: the last opened still open
        figures[open_[-1]][4] += idle
    return {n: (c, i, x, d, xd) for n, (c, i, x, d, xd) in figures.items()}, unlabeled


@settings(max_examples=150, deadline=None)
@given(nested_labels(), st.sets(st.integers(1, GRID - 1), max_size=2), spans())
def test_phases_match_a_cell_by_cell_reference(
    labels: list[tuple[str, int, int]], cuts: set[int], gpu: list[tuple[int, int]]
) -> None:
    bounds = [0, *sorted(cuts), GRID]
    steps = windows(*pairwise(bounds))
    t = table(*(label(name, s, e - s) for name, s, e in labels))
    busy_cells = {k for s, e in gpu for k in range(s, e)}
    results = phases(t, steps, busy(*gpu) if gpu else iv.empty(), launches=[])
    for window, result in zip(steps, results, strict=True):
        expected, unlabeled = reference(
            labels, int(window.start_us), int(window.end_us), busy_cells
        )
        found = {
            p.name: (
                p.calls,
                p.inclusive_ms,
                p.exclusive_ms,
                p.gpu_idle_ms,
                p.gpu_idle_exclusive_ms,
            )
            for p in result.phases
        }
        assert found == {n: (c, *(ms(v) for v in rest)) for n, (c, *rest) in expected.items()}
        assert result.unlabeled_ms == ms(unlabeled)
