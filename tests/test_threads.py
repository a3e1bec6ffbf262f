"""The helper thread: the same columns with it as without, and only for large tables."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import msgspec
import pytest

from steptrace.analysis import context, copies, cpu, gpu, phases
from steptrace.analysis.measure import measure
from steptrace.trace import assemble, heap, threads
from steptrace.trace.load import load_trace
from tests.conftest import trace_params
from tests.tables import assert_same_table


def _where() -> int:
    return threading.get_ident()


def test_small_tables_stay_in_the_calling_thread() -> None:
    with threads.helper_for(threads.LARGE_ROWS - 1) as helper:
        here = helper.submit(_where)
        failed = helper.submit(divmod, 1, 0)
    assert here.result() == threading.get_ident()
    with pytest.raises(ZeroDivisionError):  # at result(), as from the helper thread
        failed.result()


def test_large_tables_get_a_helper_thread() -> None:
    with threads.helper_for(threads.LARGE_ROWS) as helper:
        elsewhere = helper.submit(_where)
        failed = helper.submit(divmod, 1, 0)
    assert elsewhere.result() != threading.get_ident()
    with pytest.raises(ZeroDivisionError):
        failed.result()


@pytest.mark.parametrize("path", trace_params())
def test_a_table_built_with_the_helper_is_the_same(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every real trace's table with half its columns gathered by the helper thread (forced
    here: the shared traces are below ``LARGE_ROWS``), the memory given back from both
    threads, equals the one built in one thread."""
    alone = load_trace(path, progress=False).events
    monkeypatch.setattr(threads, "LARGE_ROWS", 0)
    monkeypatch.setattr(heap, "TRIM_ROWS", 0)
    gathered_by: set[int] = set()
    pop = assemble._pop

    def spied(batches: Any, name: str, total: int) -> object:
        gathered_by.add(threading.get_ident())
        return pop(batches, name, total)

    monkeypatch.setattr(assemble, "_pop", spied)
    helped = load_trace(path, progress=False).events
    assert len(gathered_by) == 2  # this thread and the helper
    assert len(alone) > 0
    assert_same_table(alone, helped)


@pytest.mark.parametrize("path", trace_params())
def test_figures_measured_on_two_threads_are_the_same(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every real trace's analysis with the operator tree, then the figures that read only
    the links, computed by the helper thread (forced here: the shared traces are below
    ``LARGE_ROWS``) encodes to the same bytes as the one computed in one thread
    (``analysis.compose``'s policy)."""
    trace = load_trace(path, progress=False)
    alone = msgspec.json.encode(measure(trace))
    monkeypatch.setattr(threads, "LARGE_ROWS", 0)
    measured_by: dict[str, int] = {}

    def spied(module: Any, name: str) -> None:
        function = getattr(module, name)

        def call(*args: Any) -> Any:
            measured_by[name] = threading.get_ident()
            return function(*args)

        monkeypatch.setattr(module, name, call)

    spied(context, "cpu_tree")
    spied(gpu, "gpu_per_step")
    spied(phases, "phases_per_step")
    spied(copies, "copy_patterns")
    spied(cpu, "cpu_per_step")
    helped = msgspec.json.encode(measure(trace))
    here = threading.get_ident()
    assert measured_by["gpu_per_step"] == measured_by["phases_per_step"] == here
    assert measured_by["cpu_per_step"] == here
    assert measured_by["cpu_tree"] == measured_by["copy_patterns"] != here  # the helper
    assert helped == alone
