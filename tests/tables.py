"""Small ``EventTable`` fixtures written as Python values: no JSON, no loader.

``table(*rows)`` interns names, threads and shapes, and sorts rows as the loader does (start
time, longer first on ties; equal rows keep the order given), so a parent precedes what it
contains. Times are integer microseconds, so every expected figure can be worked out by
hand. CPU events run on ``(CPU_PID, thread)``, GPU work on ``(DEVICE, stream)``.

    t = table(step(1, 0, 100), op("aten::mm", 10, 20), runtime("cudaLaunchKernel", 12, 3, 1),
              kernel("gemm", 30, 40, correlation=1))
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

from steptrace.analysis.time.steps import StepWindow
from steptrace.trace.fields import FIELDS, MISSING, Value
from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable, Trace, TraceInfo

CPU_PID, DEVICE = 1, 0
HTOD = "Memcpy HtoD (Pageable -> Device)"


class Row(NamedTuple):
    """One complete event, with the columns the loader fills for its kind."""

    kind: Kind
    name: str
    start: float
    dur: float
    thread: tuple[int | str, int | str] = (CPU_PID, 0)
    correlation: int = MISSING
    device: int = MISSING
    stream: int = MISSING
    bytes: float = math.nan
    shapes: tuple[str, str] | None = None  # (input dims, input types), as JSON text
    grad: bool = False


def op(
    name: str,
    start: float,
    dur: float,
    thread: int = 0,
    *,
    shapes: str | None = None,
    types: str = "",
    grad: bool = False,
) -> Row:
    recorded = None if shapes is None else (shapes, types)
    return Row(Kind.CPU_OP, name, start, dur, (CPU_PID, thread), shapes=recorded, grad=grad)


def label(name: str, start: float, dur: float, thread: int = 0) -> Row:
    return Row(Kind.USER_ANNOTATION, name, start, dur, (CPU_PID, thread))


def step(number: int, start: float, dur: float, thread: int = 0) -> Row:
    return label(f"ProfilerStep#{number}", start, dur, thread)


def runtime(
    name: str, start: float, dur: float, correlation: int = MISSING, thread: int = 0
) -> Row:
    return Row(Kind.RUNTIME, name, start, dur, (CPU_PID, thread), correlation)


def driver(name: str, start: float, dur: float, correlation: int = MISSING, thread: int = 0) -> Row:
    return Row(Kind.DRIVER, name, start, dur, (CPU_PID, thread), correlation)


def span(start: float, dur: float) -> Row:
    """The profiler's own span around the capture."""
    return Row(Kind.PROFILER_SPAN, "PyTorch Profiler (0)", start, dur, (CPU_PID, 0))


def _gpu(
    kind: Kind, name: str, start: float, dur: float, stream: int, correlation: int, nbytes: float
) -> Row:
    return Row(kind, name, start, dur, (DEVICE, stream), correlation, DEVICE, stream, nbytes)


def kernel(name: str, start: float, dur: float, stream: int = 7, correlation: int = MISSING) -> Row:
    return _gpu(Kind.KERNEL, name, start, dur, stream, correlation, math.nan)


def memcpy(
    name: str,
    start: float,
    dur: float,
    bytes: float = math.nan,
    stream: int = 7,
    correlation: int = MISSING,
) -> Row:
    return _gpu(Kind.MEMCPY, name, start, dur, stream, correlation, bytes)


def memset(
    start: float, dur: float, stream: int = 7, correlation: int = MISSING, bytes: float = math.nan
) -> Row:
    return _gpu(Kind.MEMSET, "Memset (Device)", start, dur, stream, correlation, bytes)


def table(*rows: Row) -> EventTable:
    """The event table of ``rows``, sorted and interned as the loader builds it."""
    ordered = sorted(rows, key=lambda r: (r.start, -r.dur))  # stable: ties keep given order
    names: dict[str, int] = {}
    threads: dict[tuple[int | str, int | str], int] = {}
    texts: dict[str, int] = {}

    def text_ids(values: list[str | None]) -> np.ndarray[Any, np.dtype[np.int32]]:
        ids = [MISSING if v is None else texts.setdefault(v, len(texts)) for v in values]
        return np.array(ids, dtype=np.int32)

    start = np.array([r.start for r in ordered], dtype=np.float64)
    dur = np.array([r.dur for r in ordered], dtype=np.float64)
    columns = {
        "correlation": np.array([r.correlation for r in ordered], dtype=np.int64),
        "device": np.array([r.device for r in ordered], dtype=np.int64),
        "stream": np.array([r.stream for r in ordered], dtype=np.int64),
        "bytes": np.array([r.bytes for r in ordered], dtype=np.float64),
        "records_grad": np.array([r.grad for r in ordered], dtype=np.bool_),
        "input_dims": text_ids([r.shapes[0] if r.shapes else None for r in ordered]),
        "input_types": text_ids([r.shapes[1] or None if r.shapes else None for r in ordered]),
    }
    return EventTable(
        kind=np.array([int(r.kind) for r in ordered], dtype=np.int8),
        name_id=np.array([names.setdefault(r.name, len(names)) for r in ordered], np.int32),
        names=tuple(names),
        thread_id=np.array([threads.setdefault(r.thread, len(threads)) for r in ordered], np.int32),
        threads=tuple(threads),
        start_us=start,
        dur_us=dur,
        end_us=start + dur,
        columns=columns,
        texts=tuple(texts),
    )


def assert_same_table(a: EventTable, b: EventTable) -> None:
    """Every column equal, dtypes included (NaN equal to NaN), sparse ones too; texts by value."""
    assert len(a) == len(b)
    for field in a.__struct_fields__:
        x, y = getattr(a, field), getattr(b, field)
        if field == "columns":
            assert x.keys() == y.keys()
            for name in x:
                _same_column(a, b, x[name], y[name], name)
        elif field == "sparse":
            assert x.keys() == y.keys()
            for name in x:
                assert np.array_equal(x[name].rows, y[name].rows), name
                _same_column(a, b, x[name].values, y[name].values, name)
        elif field == "texts":
            continue  # compared through the columns that use them
        elif isinstance(x, np.ndarray):
            _same_column(a, b, x, y, field)
        else:
            assert x == y, field


def _same_column(a: EventTable, b: EventTable, x: Any, y: Any, name: str) -> None:
    assert x.dtype == y.dtype, name
    if name in TEXT_COLUMNS:  # ids may differ where texts were interned in another order
        x, y = [a.text(int(i)) for i in x], [b.text(int(i)) for i in y]
        assert x == y, name
        return
    assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name


TEXT_COLUMNS = frozenset(f.column for f in FIELDS if f.value in (Value.TEXT, Value.JSON))


def trace(events: EventTable, **info: Any) -> Trace:
    """A ``Trace`` around ``events``; ``info`` overrides any ``TraceInfo`` field."""
    defaults: dict[str, Any] = {
        "path": Path("unit.json"),
        "size_bytes": 0,
        "events_total": len(events),
        "devices": None,
        "distributed": None,
        "base_time_ns": None,
        "time_unit": "us",
        "options": {},
        "memory_events": 0,
        "fwdbwd_flows": 0,
    }
    return Trace(TraceInfo(**{**defaults, **info}), events)


def windows(*bounds: tuple[float, float], thread: int = 0) -> tuple[StepWindow, ...]:
    """Step windows ``[lo, hi]`` numbered from 1, without a table."""
    return tuple(
        StepWindow(f"ProfilerStep#{k}", k, thread, float(lo), float(hi))
        for k, (lo, hi) in enumerate(bounds, start=1)
    )


def ms(us: float) -> Any:
    """A figure in milliseconds, compared with float tolerance: ``ms(30)`` is 0.030."""
    return pytest.approx(us / 1000, abs=1e-12)
