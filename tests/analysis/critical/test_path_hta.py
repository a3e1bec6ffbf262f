"""The critical path beside Holistic Trace Analysis's on its own end-to-end test.

The fixture (tests/fixtures/hta_critical_path, MIT) is HTA's input trace and the events its
golden marks critical. HTA's path is a longest path where the time between top-level
operators and inside blocking calls weighs nothing; steptrace's follows what each piece
waited for last, that time included. They agree on the length and on the copies; where
they differ (the last kernels before a device synchronization), the raw events say which
bound the end: the CPU reached the synchronization after those kernels had ended.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from steptrace.analysis.context import TraceContext
from steptrace.analysis.critical.path import StepPath, critical_path
from steptrace.trace.load import load_trace
from tests.paths import FIXTURES

HERE = FIXTURES / "hta_critical_path"
GPU = {"kernel", "gpu_memcpy", "gpu_memset"}


@pytest.fixture(scope="module")
def ours() -> StepPath:
    trace = load_trace(HERE / "simple_add_trace.json.gz")
    (step,) = critical_path(TraceContext(trace)).steps
    return step


@pytest.fixture(scope="module")
def raw() -> list[dict[str, Any]]:
    with gzip.open(HERE / "simple_add_trace.json.gz", "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


@pytest.fixture(scope="module")
def hta() -> list[dict[str, Any]]:
    with gzip.open(HERE / "simple_add_critical.json.gz", "rt") as f:
        found: list[dict[str, Any]] = json.load(f)["critical_events"]
    return found


def _origin_us(raw: list[dict[str, Any]]) -> float:
    return min(e["ts"] for e in raw)  # the table's origin: its first event (the profiler's span)


def _on_ours(ours: StepPath, event: dict[str, Any], origin: float) -> bool:
    lo, hi = event["ts"] - origin, event["ts"] + event["dur"] - origin
    return any(
        s.kind == "gpu" and s.name == event["name"] and s.start_us < hi and s.end_us > lo
        for s in ours.segments
    )


def test_the_length_is_within_one_percent_of_htas(
    ours: StepPath, hta: list[dict[str, Any]]
) -> None:
    hta_ms = (max(e["ts"] + e["dur"] for e in hta) - min(e["ts"] for e in hta)) / 1000
    assert ours.length_ms == pytest.approx(hta_ms, rel=0.01)


def test_htas_critical_gpu_time_lies_on_ours(
    ours: StepPath, hta: list[dict[str, Any]], raw: list[dict[str, Any]]
) -> None:
    origin = _origin_us(raw)
    gpu = [e for e in hta if e["cat"] in GPU]
    on = [e for e in gpu if _on_ours(ours, e, origin)]
    copies = [e for e in gpu if e["cat"] == "gpu_memcpy"]
    assert all(_on_ours(ours, e, origin) for e in copies)  # every copy: 16 of them
    assert sum(e["dur"] for e in on) >= 0.9 * sum(e["dur"] for e in gpu)


def test_where_ours_leaves_htas_kernels_the_cpu_arrived_last(
    ours: StepPath, hta: list[dict[str, Any]], raw: list[dict[str, Any]]
) -> None:
    origin = _origin_us(raw)
    off = [e for e in hta if e["cat"] in GPU and not _on_ours(ours, e, origin)]
    syncs = [e for e in raw if e["name"] == "cudaDeviceSynchronize"]
    for kernel in off:
        end = kernel["ts"] + kernel["dur"]
        waited_by = min((s for s in syncs if s["ts"] + s["dur"] >= end), key=lambda s: s["ts"])
        assert waited_by["ts"] > end  # the CPU called it after the kernel had ended
        called = [s for s in ours.segments if s.name == "cudaDeviceSynchronize"]
        assert any(abs(s.start_us - (waited_by["ts"] - origin)) < 1 for s in called)
