"""The helper thread: the same columns with it as without, and only for large tables."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import msgspec
import pytest

from steptrace.analysis.measure import measure
from steptrace.trace import columns, memory, threads
from steptrace.trace.load import load_trace
from tests.conftest import trace_params
from tests.tables import assert_same_table

measure_module = sys.modules[measure.__module__]  # the module, not the function it exports


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
    monkeypatch.setattr(memory, "TRIM_ROWS", 0)
    gathered_by: set[int] = set()
    pop = columns.ColumnBuilder._pop

    def spied(self: columns.ColumnBuilder, name: str) -> object:
        gathered_by.add(threading.get_ident())
        return pop(self, name)

    monkeypatch.setattr(columns.ColumnBuilder, "_pop", spied)
    helped = load_trace(path, progress=False).events
    assert len(gathered_by) == 2  # this thread and the helper
    assert len(alone) > 0
    assert_same_table(alone, helped)


@pytest.mark.parametrize("path", trace_params())
def test_figures_measured_on_two_threads_are_the_same(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every real trace's analysis with the operator tree, then some figures, measured by
    the helper thread (forced here: the shared traces are below ``LARGE_ROWS``) encodes to
    the same bytes as the one measured in one thread."""
    trace = load_trace(path, progress=False)
    alone = msgspec.json.encode(measure(trace))
    monkeypatch.setattr(threads, "LARGE_ROWS", 0)
    measured_by: dict[str, int] = {}

    def spied(name: str) -> None:
        function = getattr(measure_module, name)

        def call(*args: Any) -> Any:
            measured_by[name] = threading.get_ident()
            return function(*args)

        monkeypatch.setattr(measure_module, name, call)

    for name in ("cpu_tree", "gpu_per_step", "phases_per_step", "cpu_per_step"):
        spied(name)
    helped = msgspec.json.encode(measure(trace))
    here = threading.get_ident()
    assert measured_by["gpu_per_step"] == measured_by["cpu_per_step"] == here
    assert measured_by["cpu_tree"] == measured_by["phases_per_step"] != here  # the helper
    assert helped == alone
