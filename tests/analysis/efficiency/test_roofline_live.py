"""The roofline on a live CPU capture: a matrix product's achieved FLOP/s from the trace is
the product's own, timed around each recorded call, and it is held to the CPU's roofs
measured at capture."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="capture needs torch (installed by make test)")

import steptrace  # noqa: E402
from steptrace.capturing.measured.peaks import measure_cpu_peaks  # noqa: E402

N = 1024  # 2.1 GFLOP a product: tens of ms, so the profiler's µs per call do not count
CALLS = 3  # products per step


def _alone(a: torch.Tensor, b: torch.Tensor, times: int) -> list[float]:
    """Seconds per product, each timed alone on the wall clock."""
    taken = []
    for _ in range(times):
        start = time.perf_counter()
        torch.mm(a, b)
        taken.append(time.perf_counter() - start)
    return taken


@pytest.fixture
def one_thread() -> Iterator[None]:
    """One intra-op thread: on a small shared machine, another process then slows the
    product only when it takes every core, so the timings compared agree."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.usefixtures("one_thread")
def test_a_matmul_s_achieved_flops_from_the_trace_are_its_own(tmp_path: Path) -> None:
    """The trace's FLOP/s against the same products timed here, each on the wall clock
    around its call: a shared machine slows both alike (timing other calls, before or
    after, would meet other loads)."""
    a, b = torch.randn(N, N), torch.randn(N, N)
    scenario = steptrace.Scenario(question="How close to the CPU's roof is a matmul?")
    window = steptrace.Window(wait=0, warmup=1, active=3, record_shapes=True)
    recorded: list[float] = []
    with steptrace.capture(scenario, out=tmp_path / "trace.json", window=window) as run:
        while not run.done:
            taken = _alone(a, b, CALLS)
            if run.recording:
                recorded += taken
            run.step()
    assert run.result is not None
    report = steptrace.analyze(run.result.trace)
    (row,) = [r for r in report.analysis.roofline if r.operator == "aten::mm"]
    assert row.calls == 3 * CALLS == len(recorded)
    assert row.flops_per_call == 2 * N**3 and row.gpu_ms is None
    # the trace's figure is the calls' FLOPs over their summed time: the same here
    timed_tflops = 2 * N**3 * len(recorded) / sum(recorded) / 1e12
    assert row.achieved_tflops == pytest.approx(timed_tflops, rel=0.10)
    peaks = report.capture.peaks if report.capture else None
    assert peaks is not None and peaks.matmul_size == 1024 and "1 threads" in peaks.device
    assert row.peak_tflops == peaks.matmul_tflops and row.peak_tbps == peaks.copy_tbps
    assert row.intensity is not None and row.achieved_tflops is not None
    attainable = min(row.peak_tflops, row.intensity * row.peak_tbps)
    assert row.roofline_pct == pytest.approx(100 * row.achieved_tflops / attainable)
    assert row.bound == "compute"  # 1024³ products: 170 FLOP per byte


def test_the_peaks_are_the_best_of_their_runs() -> None:
    ticks = iter([0.0, 0.5, 1.0, 1.2, 2.0, 2.4, 0.0, 0.1, 1.0, 1.05, 2.0, 2.2])
    peaks = measure_cpu_peaks(size=64, copy_bytes=4096, repeats=3, clock=lambda: next(ticks))
    assert peaks.matmul_tflops == pytest.approx(2 * 64**3 / 0.2 / 1e12)
    assert peaks.copy_tbps == pytest.approx(2 * 4096 / 0.05 / 1e12)
    assert peaks.device.startswith("cpu (") and peaks.matmul_dtype == "float32"


def test_no_peaks_are_measured_without_shapes(tmp_path: Path) -> None:
    scenario = steptrace.Scenario(question="q?")
    window = steptrace.Window(wait=0, warmup=0, active=1)
    with steptrace.capture(scenario, out=tmp_path / "trace.json", window=window) as run:
        while not run.done:
            torch.ones(4).sum()
            run.step()
    assert run.result is not None and run.result.facts.peaks is None
