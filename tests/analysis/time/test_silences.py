"""``cpu.unrecorded_ms``: the step's time in silences (100 µs or more in which the trace
records no work), against an integer-ns reference from the raw JSON on every shared
trace; the last, short ``ProfilerStep`` with nothing in it is partial."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptrace.analysis.context import TraceContext
from steptrace.analysis.time import cpu, phases
from steptrace.analysis.time.cpu import cpu_per_step
from steptrace.analysis.time.links import cpu_tree
from steptrace.analysis.time.steps import find_steps
from steptrace.trace.load import load_trace
from tests import reference
from tests.conftest import gpu_trace, trace_params
from tests.tables import kernel, label, op, runtime, step, table, trace

NOT_TIMED = {"trace", "overhead", "cuda_profiler_range", "cpu_instant_event"}


def whole_window(evs: list[reference.Ev]) -> tuple[str, int, int]:
    """Without step markers: from the first event to the last, the profiler's own span
    and the events no analysis reads left out."""
    timed = [e for e in evs if e.cat.lower() not in NOT_TIMED]
    return "whole", min(e.start for e in timed), max(e.end for e in timed)


@pytest.mark.parametrize("path", trace_params())
def test_unrecorded_time_is_the_steps_time_outside_every_recorded_event(path: Path) -> None:
    evs = reference.events(reference.read_exact(path))
    windows = reference.step_windows(evs) or [whole_window(evs)]
    measured = TraceContext(load_trace(path)).figure(cpu.FIGURE)
    assert len(measured) == len(windows)
    silent = reference.silences(evs, windows)
    for (name, lo, hi), got in zip(windows, measured, strict=True):
        expected_ns = reference.unrecorded_ns(silent, lo, hi)
        assert got.unrecorded_ms is not None
        assert got.unrecorded_ms * 1e6 == pytest.approx(expected_ns, abs=2), name


def test_a_trace_with_nothing_but_a_long_silence_is_all_unrecorded() -> None:
    context = TraceContext(load_trace(gpu_trace("triton")))
    (window,) = context.windows
    (step,) = context.figure(cpu.FIGURE)
    assert step.unrecorded_ms is not None
    assert step.unrecorded_ms >= 0.999 * window.wall_ms  # 13.3 s: torch.compile's first call


def test_work_on_any_thread_or_the_gpu_is_recorded_and_labels_are_not() -> None:
    t = table(
        step(1, 0, 1000),
        label("log", 0, 400),  # a label records no work: 0-100 and 350-400 are gaps in it
        op("aten::mm", 100, 100),
        runtime("cudaLaunchKernel", 200, 50, correlation=1),
        kernel("gemm", 250, 100, correlation=1),  # 250-350: the GPU busy
        op("aten::add", 500, 100, thread=1),  # another thread's operator counts
        label("gloo:all_reduce", 600, 100, thread=2),  # gloo's collective as it ran
        op("aten::sub", 800, 150),
        step(2, 1000, 200),
        op("aten::mul", 1000, 200),
    )
    context = TraceContext(trace(t))
    first, second = context.figure(cpu.FIGURE)
    # recorded: 100-350, 500-700, 800-950; gaps 0-100, 350-500, 700-800 (all 100 µs or
    # more), 950-1000 (50 µs: the host's pace between operators, not a silence)
    assert first.unrecorded_ms == pytest.approx(0.350)
    assert second.unrecorded_ms == 0.0
    (log,) = (p for p in context.figure(phases.FIGURE)[0].phases if p.name == "log")
    assert log.unrecorded_ms == pytest.approx(0.150)  # 0-100 and 350-400
    assert context.partial == (False, False)


def test_a_steps_edges_up_to_a_millisecond_each_are_the_loops_turn_not_silence() -> None:
    t = table(
        step(1, 0, 2000),  # edges: 0-600 before its first label, 1400-2000 after it ends
        label("train", 600, 800),
        op("aten::mm", 600, 300),  # 900-1400: in the label, nothing recorded: a silence
        step(2, 2030, 6000),  # the profiler's step call between the markers: 2000-2030
        op("aten::mm", 2030, 500),  # then 2530-8030: 5.5 ms after the last operator
        step(3, 8030, 1000),
        op("aten::mm", 8500, 100),  # 8030-8500 and 8600-9030 at the edges
    )
    context = TraceContext(trace(t))
    first, second, third = context.figure(cpu.FIGURE)
    assert first.unrecorded_ms == pytest.approx(0.5)  # 900-1400 only
    assert second.unrecorded_ms == pytest.approx(4.5)  # 2530-7030: its last 1 ms is the edge
    assert third.unrecorded_ms == 0.0


def test_not_given_what_is_recorded_it_is_none_not_zero() -> None:
    t = table(op("aten::mm", 0, 10))
    (only,) = cpu_per_step(t, cpu_tree(t), find_steps(t).windows)
    assert only.unrecorded_ms is None


def test_the_last_empty_profiler_step_is_partial_and_left_out() -> None:
    context = TraceContext(load_trace(gpu_trace("mi250")))
    assert [w.name for w in context.windows] == ["ProfilerStep#1", "ProfilerStep#2"]
    assert context.partial == (False, True)  # step 2: 49 µs, nothing in it
    assert [w.name for w in context.counted] == ["ProfilerStep#1"]


def test_only_the_last_step_and_only_when_empty_and_shortest() -> None:
    empty_first = table(step(1, 0, 10), step(2, 10, 5), op("aten::mm", 12, 2))
    assert TraceContext(trace(empty_first)).partial == (False, False)
    alone = table(step(1, 0, 10))
    assert TraceContext(trace(alone)).partial == (False,)
    long_silence = table(step(1, 0, 10), op("aten::mm", 2, 2), step(2, 10, 50))
    assert TraceContext(trace(long_silence)).partial == (False, False)  # a finding's
    stop = table(step(1, 0, 10), op("aten::mm", 2, 2), step(2, 10, 1))
    assert TraceContext(trace(stop)).partial == (False, True)
    labelled = table(step(1, 0, 10), op("aten::mm", 2, 2), step(2, 10, 5), label("sleep", 11, 3))
    assert TraceContext(trace(labelled)).partial == (False, False)  # a step's, work or not
