"""A real torch.profiler capture on the CPU, analyzed: labels, steps and timings survive."""

from __future__ import annotations

from pathlib import Path

import pytest

import steptrace
from tests import reference

torch = pytest.importorskip("torch", reason="capture tests need torch (installed by make test)")


def record(trace: Path, *, active: int, with_shapes: bool) -> None:
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = [(torch.randn(16, 32), torch.randint(0, 4, (16,))) for _ in range(2 + active)]
    iterator = iter(batches)
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=1, warmup=1, active=active, repeat=1),
        record_shapes=with_shapes,
        on_trace_ready=lambda p: p.export_chrome_trace(str(trace)),
    ) as prof:
        for _ in range(2 + active):
            with record_function("read_batch"):
                x, y = next(iterator)
            with record_function("train"):
                optimizer.zero_grad()
                with record_function("forward"):
                    loss = torch.nn.functional.cross_entropy(model(x), y)
                loss.backward()
                optimizer.step()
            prof.step()


def test_cpu_capture_is_analyzed_step_by_step(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    record(trace, active=3, with_shapes=True)
    result = steptrace.analyze(trace).analysis
    windows = reference.step_windows(reference.events(reference.read_exact(trace)))
    assert len(result.steps) == len(windows) == 3
    for step, (name, lo, hi) in zip(result.steps, windows, strict=True):
        assert step.name == name
        assert step.wall_ms == pytest.approx((hi - lo) / 1e6, abs=1e-12)
        names = [p.name for p in step.phases]
        assert names[:2] == ["read_batch", "train"] and "forward" in names
        # nested labels are never summed twice: exclusive times fit inside the step
        assert sum(p.exclusive_ms for p in step.phases) <= step.wall_ms + 1e-9
        assert step.gpu is None
    assert not result.trace.gpu_observed
    assert result.trace.options.get("record_shapes") == "1"
    addmm = next(o for o in result.operators if o.name == "aten::addmm")
    assert addmm.calls == 3 * 2
    assert addmm.input_shapes is not None and "16, 32" in addmm.input_shapes
