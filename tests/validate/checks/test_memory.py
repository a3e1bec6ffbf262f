"""Memory findings and checks on live CPU captures whose memory is known by construction
(``tests.memory_workloads``): a planted leak found at its size, a planted temporary named
by its label, activation checkpointing supported where it helps and not where it cannot."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="capture needs torch (installed by make test)")
pytestmark = pytest.mark.slow  # live captures and checks: about 40 s

import steptrace  # noqa: E402
from steptrace.analysis.memory.usage import DeviceMemory  # noqa: E402
from steptrace.validate.checks.memory import checkpoint_peaks, growth  # noqa: E402
from tests import memory_workloads as work  # noqa: E402

WINDOW = steptrace.Window(wait=1, warmup=2, active=4, profile_memory=True)


def captured(model: torch.nn.Module, tmp_path: Path, batch: int = 16) -> steptrace.Report:
    w = work.workload(model, batch)
    result = steptrace.profile_training(
        w.model,
        w.optimizer,
        w.loss_fn,
        w.loader,
        scenario=w.scenario,
        out=tmp_path / "trace.json",
        window=WINDOW,
    )
    return steptrace.analyze(result.trace)


def cpu_memory(report: steptrace.Report) -> DeviceMemory:
    assert report.analysis.memory is not None
    (cpu,) = [d for d in report.analysis.memory.devices if d.device == "cpu"]
    return cpu


def test_a_planted_leak_is_found_at_its_size_and_none_without_it(tmp_path: Path) -> None:
    leak = 2**20
    leaking = captured(work.Leaky(leak), tmp_path / "leak")
    assert cpu_memory(leaking).growth_bytes_per_step == pytest.approx(leak, rel=0.1)
    (found,) = [f for f in leaking.findings if f.rule == "memory-growth"]
    assert found.basis == "memory peak"
    assert found.evidence.values()["growth_bytes_per_step"] == pytest.approx(leak, rel=0.1)
    healthy = captured(work.Leaky(0), tmp_path / "healthy")
    assert abs(cpu_memory(healthy).growth_bytes_per_step) < 0.1 * leak
    assert not [f for f in healthy.findings if f.rule == "memory-growth"]


def test_a_planted_temporary_puts_the_peak_in_its_label(tmp_path: Path) -> None:
    report = captured(work.BigTemporary(), tmp_path)
    for s in cpu_memory(report).steps:
        assert s.peak_label == "big_temporary"
        top = s.held.by_label[0]  # what the step allocated and still held at its peak
        assert top.name == "big_temporary" and top.bytes >= work.BIG_TEMPORARY_BYTES
        assert s.held.alive_from_start_bytes + s.held.allocated_in_step_bytes == (
            s.peak_allocated_bytes
        )


def test_the_growth_check_measures_the_leak_outside_the_profiler() -> None:
    leak = 2**20
    model = work.Leaky(leak)
    batches = list(work.loader(16))[:4]
    found = growth(work.train_step, lambda: work.state_of(model), batches, torch.device("cpu"), 6)
    assert found.median_bytes == pytest.approx(leak, rel=0.1)
    quiet = growth(
        work.train_step, lambda: work.state_of(work.Leaky(0)), batches, torch.device("cpu"), 6
    )
    assert abs(quiet.median_bytes) < 0.1 * leak


def test_activation_checkpointing_lowers_the_peak_only_where_activations_hold_it() -> None:
    cpu = torch.device("cpu")
    deep = work.deep_blocks()
    found = checkpoint_peaks(
        work.train_step, lambda: work.state_of(deep), list(work.loader(1024, 3)), cpu
    )
    assert found.correctness.ok and found.block == "1"  # the first of four equal blocks
    assert found.peak_a_bytes is not None and found.peak_b_bytes is not None
    assert found.peak_b_bytes < 0.95 * found.peak_a_bytes
    wide = work.wide_layers()
    flat = checkpoint_peaks(
        work.train_step, lambda: work.state_of(wide), list(work.loader(2, 3)), cpu
    )
    assert flat.correctness.ok
    assert flat.peak_a_bytes is not None and flat.peak_b_bytes is not None
    assert flat.peak_b_bytes >= 0.98 * flat.peak_a_bytes


def test_investigate_with_memory_supports_a_planted_leak(tmp_path: Path) -> None:
    """``steptrace investigate --memory`` on a leak of 1 MiB per step: the growth found in
    the trace, then measured outside the profiler by its check."""
    from click.testing import CliRunner

    from steptrace.cli import app

    out = tmp_path / "leak.json"
    result = CliRunner().invoke(
        app,
        [
            "investigate",
            "tests/memory_workloads.py:leaky_workload",
            "--memory",
            "--out",
            str(out),
            "--budget",
            "20",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    import json

    report = json.loads(result.stdout)
    growth_found = [f for f in report["findings"] if f["rule"] == "memory-growth"]
    assert growth_found and growth_found[0]["basis"] == "memory peak"
    (check,) = [c for c in report["checks"] if c["rule"] == "memory-growth"]
    assert check["outcome"] == "supported", check["sentence"]
    measured = {f["name"]: f["value"] for f in check["measured"]}
    assert measured["growth_bytes_per_step"] == pytest.approx(2**20, rel=0.1)


def test_the_capture_s_inventory_says_what_holds_the_peak(tmp_path: Path) -> None:
    """The peak in the optimizer step (a 16 MiB scratch tensor): every gradient and the
    batch are alive there, known to the byte from the model and the loader."""
    w = work.scratch_workload(batch=16)
    result = steptrace.profile_training(
        w.model,
        w.optimizer,
        w.loss_fn,
        w.loader,
        scenario=w.scenario,
        out=tmp_path / "trace.json",
        window=WINDOW,
    )
    gradients = sum(p.numel() * p.element_size() for p in w.model.parameters())
    x, y = next(iter(w.loader))
    report = steptrace.analyze(result.trace)
    assert report.capture is not None and report.capture.inventory is None  # not in reports
    for s in cpu_memory(report).steps:
        held = {h.name: h.bytes for h in s.held.by_category}
        assert held["gradient"] == gradients
        assert held["batch"] == x.nbytes + y.nbytes
        assert held["activations and temporaries"] >= work.ScratchSGD.SCRATCH_BYTES
        assert sum(held.values()) == s.held.allocated_in_step_bytes  # closes to the byte
        assert s.held.from_start_by_category == ()  # a CPU level counts from the start
    assert any("listing the gradients" in w for w in result.facts.warnings)
