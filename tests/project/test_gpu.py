"""The CUDA paths, end to end on a real GPU: capture with GPU activity, synchronized A/B
timing, pinned memory, the demo and the operator script. Skipped without CUDA (conftest);
``make test-gpu`` runs them. Tiny models and short timing budgets: about a minute.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch", reason="the CUDA paths need torch")
pytest.importorskip("scipy")

import steptrace  # noqa: E402
from steptrace.analysis.measure import TraceAnalysis  # noqa: E402
from steptrace.capturing import CaptureResult, Workload  # noqa: E402
from steptrace.cli import app  # noqa: E402
from steptrace.errors import CaptureWarning  # noqa: E402
from steptrace.validate import (  # noqa: E402
    Instruments,
    Slower,
    Timed,
    TimingPlan,
    TooFewSamples,
    operator_script,
    pinned_memory_check,
)
from tests import compare_steps, gpu_workloads, workloads  # noqa: E402
from tests.capturing.test_session import state_of  # noqa: E402

H200_FP32_TFLOPS = 67.0  # NVIDIA H200 datasheet: FP32, dense
PLAN = TimingPlan(warmup=2, block_steps=5, min_blocks=6, max_blocks=60, budget_s=3)
TRANSFER_BYTES = {
    workloads.BATCH * workloads.FEATURES * 4,  # float32 inputs
    workloads.BATCH * 8,  # int64 targets
}


def train_on_cuda(
    tmp_path: Path, window: steptrace.Window, work: Workload | None = None
) -> CaptureResult:
    work = work or gpu_workloads.cuda_training()
    assert work.model is not None and work.optimizer is not None
    assert work.loss_fn is not None and work.loader is not None
    return steptrace.profile_training(
        work.model,
        work.optimizer,
        work.loss_fn,
        work.loader,
        scenario=work.scenario,
        out=tmp_path / "trace.json",
        window=window,
    )


def assert_gpu_steps(analysis: TraceAnalysis, count: int) -> None:
    """``count`` steps, each with GPU work inside its wall time."""
    assert analysis.trace.gpu_observed and analysis.trace.launch_calls > 0
    assert len(analysis.steps) == count
    for step in analysis.steps:
        assert step.gpu is not None, step.name
        assert step.gpu.kernels.count > 0
        assert 0 < step.gpu.busy_ms <= step.wall_ms + 1e-6
        assert step.gpu.launch_delay_us is not None  # kernels linked to their launch calls
    unknown = [w for w in analysis.trace.warnings if "unknown categories" in w]
    assert not unknown, unknown  # every GPU event of a current CUDA trace is understood


def test_training_capture_observes_the_gpu(tmp_path: Path) -> None:
    window = steptrace.Window(active=3)
    result = train_on_cuda(tmp_path, window)
    assert result.facts.gpu_requested and result.facts.gpu_observed
    assert len(result.facts.profiled_step_ms) == window.active
    assert len(result.facts.cold_start_ms) == window.cold_steps
    analysis = steptrace.analyze(result.trace).analysis
    first = window.wait + window.warmup
    assert [s.name for s in analysis.steps] == [
        f"ProfilerStep#{first + k}" for k in range(window.active)
    ]
    assert_gpu_steps(analysis, window.active)
    assert analysis.summary.gpu_busy_ms is not None
    name = torch.cuda.get_device_name(0)
    assert analysis.trace.devices and any(d.name == name for d in analysis.trace.devices)
    for step in analysis.steps:
        assert step.gpu is not None
        htod = [c for c in step.gpu.memcpy if c.direction == "HtoD"]
        assert htod and htod[0].count >= 2 and htod[0].pageable >= 2  # loader: pageable
        transfer = next(p for p in step.phases if p.name == "transfer")
        assert transfer.gpu_launches is not None and transfer.gpu_launches >= 2
    # the batch (inputs and targets) moves to the device inside 'transfer', every step
    batch = [c for c in analysis.copies if c.direction == "HtoD" and c.label == "transfer"]
    assert {c.bytes for c in batch} == TRANSFER_BYTES
    assert all(c.per_step == (1,) * window.active for c in batch)
    assert all(c.operator == "aten::copy_" and c.host_memory == "Pageable" for c in batch)


def test_overhead_flops_and_mfu_on_cuda(tmp_path: Path) -> None:
    work = gpu_workloads.cuda_training()
    assert work.model is not None and work.optimizer is not None
    torch.cuda.manual_seed(7)
    before, cuda_rng = state_of(work.model, work.optimizer), torch.cuda.get_rng_state()
    window = steptrace.Window(active=3, measure_overhead=True, count_flops=True)
    facts = train_on_cuda(tmp_path, window, work).facts
    assert facts.gpu_observed
    assert facts.unprofiled_step_ms is not None and len(facts.unprofiled_step_ms) == 3
    assert all(ms > 0 for ms in facts.unprofiled_step_ms)
    assert isinstance(facts.overhead_ratio, float) and facts.overhead_ratio > 0
    assert facts.overhead_ratio == pytest.approx(
        np.median(facts.profiled_step_ms) / np.median(facts.unprofiled_step_ms)
    )
    b, f, h, c = workloads.BATCH, workloads.FEATURES, workloads.HIDDEN, workloads.CLASSES
    expected = 2 * b * f * h * 2 + 2 * b * h * c * 3  # as in test_capture.test_overhead_and_flops
    assert facts.flops_per_step == expected
    achieved = expected / (np.median(facts.unprofiled_step_ms) / 1000) / 1e12
    assert facts.achieved_tflops == pytest.approx(achieved)
    if "H200" in torch.cuda.get_device_name(0):
        assert facts.peak_tflops == H200_FP32_TFLOPS
    if facts.peak_tflops is not None:
        assert facts.mfu == pytest.approx(achieved / facts.peak_tflops)
        assert 0 < facts.mfu < 1
    # the user's GPU weights, Adam state and CUDA RNG come back bit for bit
    after = state_of(work.model, work.optimizer)
    assert all(torch.equal(x, y) for x, y in zip(before, after, strict=True))
    assert torch.equal(torch.cuda.get_rng_state(), cuda_rng)


def test_inference_capture_on_cuda(tmp_path: Path) -> None:
    work = gpu_workloads.cuda_inference()
    assert work.load_model and work.request and work.inputs
    window = steptrace.Window()
    result = steptrace.profile_inference(
        work.load_model,
        work.request,
        work.inputs,
        scenario=work.scenario,
        out=tmp_path / "infer.json",
        window=window,
    )
    facts = result.facts
    assert facts.gpu_requested and facts.gpu_observed and facts.warnings == ()
    assert facts.model_load_ms is not None and facts.model_load_ms > 0
    assert len(facts.cold_start_ms) == window.cold_steps
    analysis = steptrace.analyze(result.trace).analysis
    assert_gpu_steps(analysis, window.active)
    assert all(s.phases[0].name == "request" for s in analysis.steps)
    inputs = [c for c in analysis.copies if c.direction == "HtoD" and c.label == "transfer"]
    first = window.cold_steps + window.wait + window.warmup  # the inputs of the active steps
    sizes = {x.numel() * x.element_size() for x in work.inputs[first : first + window.active]}
    assert {c.bytes for c in inputs} == sizes


def test_custom_loop_capture_on_cuda(tmp_path: Path) -> None:
    work = gpu_workloads.cuda_training()
    model, optimizer, loss_fn, loader = work.model, work.optimizer, work.loss_fn, work.loader
    assert model is not None and optimizer is not None and loss_fn is not None
    assert loader is not None
    window = steptrace.Window(active=3)
    ran = 0
    with steptrace.capture(work.scenario, out=tmp_path / "custom.json", window=window) as loop:
        for x, y in loader:
            with loop.phase("my_forward"):
                loss = loss_fn(model(x.to("cuda")), y.to("cuda"))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            loop.step()
            ran += 1
            if loop.done:
                break
    assert ran == window.profiled_steps and loop.done
    assert loop.result is not None
    assert loop.result.facts.gpu_requested and loop.result.facts.gpu_observed
    assert len(loop.result.facts.profiled_step_ms) == window.active
    analysis = steptrace.analyze(loop.result.trace).analysis
    assert_gpu_steps(analysis, window.active)
    for step in analysis.steps:
        forward = next(p for p in step.phases if p.name == "my_forward")
        assert forward.gpu_launches is not None and forward.gpu_launches > 0
        assert forward.gpu_idle_ms is not None


def test_more_gpu_work_is_slower_with_synchronized_timing() -> None:
    extra_ms = gpu_workloads.extra_work_ms()
    result = steptrace.compare(
        compare_steps.step,
        gpu_workloads.step_with_extra_gpu_work,
        make_state=gpu_workloads.make_state,
        batches=gpu_workloads.make_batches(),
        device="cuda",
        plan=PLAN,
    )
    assert result.correctness.ok, result.correctness.differences
    assert result.device == "cuda"
    assert isinstance(result, Slower), result.sentence
    assert result.ci[0] > 1 + result.band
    samples = result.samples
    assert len(samples.a) == len(samples.b) >= PLAN.min_blocks * PLAN.block_steps
    assert all(ms > 0 for ms in samples.a + samples.b)
    assert result.baseline.median == pytest.approx(float(np.median(samples.a)))
    # synchronized at step boundaries: B's step holds the matmul's GPU time, not its launch
    assert result.candidate.median - result.baseline.median >= 0.5 * extra_ms


def test_the_same_gpu_step_against_itself() -> None:
    heavy = gpu_workloads.step_with_extra_gpu_work  # GPU-bound: steady step times
    result = steptrace.compare(
        heavy,
        heavy,
        make_state=gpu_workloads.make_state,
        batches=gpu_workloads.make_batches(),
        device="cuda",
        plan=PLAN,
    )
    assert result.correctness.ok and isinstance(result, Timed), result.sentence
    assert result.ratio == pytest.approx(1, abs=0.03)
    low, high = result.ci
    assert low > 0.95 and high < 1.05  # a GPU-bound step: its ratio is known within 5%
    assert low <= 1 <= high or result.verdict == "no-detectable-difference"


def test_timing_synchronizes_once_per_step_boundary() -> None:
    calls = [0]

    def counting_sync() -> None:
        calls[0] += 1
        torch.cuda.synchronize()

    plan = TimingPlan(warmup=2, block_steps=3, min_blocks=4, max_blocks=4, budget_s=3)
    result = steptrace.compare(
        compare_steps.step,
        compare_steps.same_step,
        make_state=gpu_workloads.make_state,
        batches=gpu_workloads.make_batches(),
        device="cuda",
        plan=plan,
        instruments=Instruments(synchronize=counting_sync),
    )
    assert isinstance(result, Timed | TooFewSamples), result.sentence
    samples = result.samples
    blocks = len(samples.order)
    assert len(samples.a) == len(samples.b) == blocks * plan.block_steps
    assert len(samples.warmup_a) == len(samples.warmup_b) == plan.warmup
    # every timed run: one boundary before its first step, then one after each step
    runs = 2 + 2 * blocks  # warm-up A and B, then A and B in each block
    timed_steps = 2 * plan.warmup + 2 * blocks * plan.block_steps
    assert calls[0] == runs + timed_steps


def test_pinned_memory_check_on_cuda() -> None:
    seen: set[str] = set()

    def step(state: dict[str, Any], batch: Any) -> torch.Tensor:
        seen.update(t.device.type for t in batch)
        return compare_steps.step(state, batch)

    result = pinned_memory_check(
        step,
        make_state=gpu_workloads.make_state,
        batches=compare_steps.make_batches(),
        device="cuda",
        plan=PLAN,
    )
    assert seen == {"cuda"}  # both sides moved the host batches to the device
    assert result.correctness.ok and result.correctness.start_identical
    assert isinstance(result, Timed), result.sentence
    assert result.samples.a and result.samples.b and result.device == "cuda"


def test_demo_on_cuda(tmp_path: Path) -> None:
    args = ["demo", "--out", str(tmp_path), "--quick", "--device", "cuda"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.stderr
    (folder,) = tmp_path.iterdir()
    report = json.loads((folder / "report.json").read_text())
    assert report["analysis"]["trace"]["gpu_observed"] is True
    assert report["capture"]["gpu_requested"] and report["capture"]["gpu_observed"]
    assert report["scenario"]["device"] == "cuda"
    assert all(step["gpu"] is not None for step in report["analysis"]["steps"])
    rules = {f["rule"] for f in report["findings"]}
    # both planted problems: the slow loader, and the constant copied to the GPU each step
    assert {"input-pipeline", "repeated-copy"} <= rules
    comparisons = json.loads((folder / "comparisons.json").read_text())
    assert comparisons and all(c["device"] == "cuda" for c in comparisons)
    constant = next(c for c in comparisons if c["title"].startswith("constant"))
    assert constant["correctness"]["ok"] is True
    if "H200" in torch.cuda.get_device_name(0):
        assert report["capture"]["peak_tflops"] == H200_FP32_TFLOPS
        assert report["capture"]["mfu"] is not None


def test_operator_script_runs_on_cuda(tmp_path: Path) -> None:
    with pytest.warns(CaptureWarning, match="record_shapes was on"):
        result = train_on_cuda(tmp_path, steptrace.Window(record_shapes=True))
    analysis = steptrace.analyze(result.trace).analysis
    mm = next(o for o in analysis.operators if o.name == "aten::mm")
    assert mm.input_shapes is not None
    assert mm.gpu_launches is not None and mm.gpu_launches >= mm.calls  # cuBLAS kernels
    script = tmp_path / "mm.py"
    script.write_text(operator_script(analysis, "aten::mm", device="cuda"))
    assert "device = torch.device('cuda')" in script.read_text()
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stderr
    median = re.search(r"median ([0-9.]+) us", done.stdout)
    assert median is not None and float(median.group(1)) > 0, done.stdout
