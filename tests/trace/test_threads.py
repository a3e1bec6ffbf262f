"""The helper thread: the same columns with it as without, and only for large tables."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

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

    def spied(batches: Any, name: str, total: int, compact: bool = False) -> object:
        gathered_by.add(threading.get_ident())
        return pop(batches, name, total, compact)

    monkeypatch.setattr(assemble, "_pop", spied)
    helped = load_trace(path, progress=False).events
    assert len(gathered_by) == 2  # this thread and the helper
    assert len(alone) > 0
    assert_same_table(alone, helped)
