"""Operator and kernel tables per step: means over the steps of the calls starting in each,
checked against the integer-ns reference restricted to those calls."""

from __future__ import annotations

import pytest

from tests import reference
from tests.conftest import Case

NS = 5e-10  # in ms: half a nanosecond


def _windows(case: Case) -> list[tuple[int, int]]:
    windows = reference.counted_windows(case.evs)
    if windows:
        return [(lo, hi) for _, lo, hi in windows]
    return [(min(e.start for e in case.evs), max(e.end for e in case.evs))]


def _inside(windows: list[tuple[int, int]], t: int) -> bool:
    return any(lo <= t < hi for lo, hi in windows)


def test_operator_figures_per_step_are_step_means(analyzed: Case) -> None:
    windows = _windows(analyzed)
    n = len(windows)
    assert analyzed.result.summary.count == n  # MI250's stop marker is not counted
    expected = reference.operator_times(analyzed.evs, lambda e: _inside(windows, e.start))
    for op in analyzed.result.operators:
        calls, own, inclusive = expected.get(op.name, (0, 0, 0))
        assert op.calls_per_step == pytest.approx(calls / n, abs=1e-12), op.name
        assert op.self_ms_per_step == pytest.approx(own / n / 1e6, abs=NS), op.name
        assert op.inclusive_ms_per_step == pytest.approx(inclusive / n / 1e6, abs=NS), op.name


def test_gpu_work_launched_per_step_is_the_step_mean(analyzed: Case) -> None:
    windows = _windows(analyzed)
    if not reference.gpu_events(analyzed.evs):
        assert all(o.gpu_ms_per_step is None for o in analyzed.result.operators)
        return
    expected = reference.launched_gpu_ns(analyzed.evs, lambda e: _inside(windows, e.start))
    for op in analyzed.result.operators:
        _, total = expected.get(op.name, (0, 0))
        assert op.gpu_ms_per_step == pytest.approx(total / len(windows) / 1e6, abs=NS), op.name


def test_kernel_figures_per_step_are_means_of_what_each_step_launched(analyzed: Case) -> None:
    windows = _windows(analyzed)
    n = len(windows)
    launches = {}
    for e in analyzed.evs:
        if e.cat in ("cuda_runtime", "cuda_driver", "Runtime", "runtime"):
            correlation = (e.raw.get("args") or {}).get("correlation")
            if correlation is not None:
                launches.setdefault(correlation, e)
    lowest = min((c for c in launches if isinstance(c, int) and c >= 0), default=None)
    calls: dict[str, int] = {}
    total: dict[str, int] = {}
    for e in analyzed.evs:
        if e.cat not in reference.KERNEL_CATEGORIES:
            continue
        correlation = (e.raw.get("args") or {}).get("correlation")
        launch = launches.get(correlation)
        early = lowest is not None and isinstance(correlation, int) and 0 <= correlation < lowest
        if launch is None and early:
            continue  # launched before the trace began: no step's
        issued = launch.start if launch is not None else e.start
        if _inside(windows, issued):
            calls[e.name] = calls.get(e.name, 0) + 1
            total[e.name] = total.get(e.name, 0) + e.dur
    for k in analyzed.result.kernels:
        assert k.calls_per_step == pytest.approx(calls.get(k.name, 0) / n, abs=1e-12), k.name
        assert k.total_ms_per_step == pytest.approx(total.get(k.name, 0) / n / 1e6, abs=NS)
