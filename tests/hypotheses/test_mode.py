"""Rules ``inference-autograd``, ``precision`` and ``gpu-not-observed`` on hand-built analyses."""

from __future__ import annotations

from typing import Any

import pytest

from steptrace.analysis.measure import TraceAnalysis
from steptrace.hypotheses import Case, Figure, Finding, Thresholds, Where
from steptrace.hypotheses.rules.mode import gpu_not_observed, inference_autograd, precision
from steptrace.scenario import CaptureFacts, Scenario
from tests.analyses import THREAD, analysis, cpu, device, gpu_step, kernel, operator, steps

NAMES = ("ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3")
INFERENCE = Scenario(question="How fast is one request?", kind="inference")


def autograd(data: TraceAnalysis, scenario: Scenario | None = INFERENCE) -> list[Finding]:
    return inference_autograd(Case(data, scenario=scenario), Thresholds())


def fp32(data: TraceAnalysis, **limits: Any) -> list[Finding]:
    return precision(Case(data), Thresholds(**limits))


def not_observed(data: TraceAnalysis, scenario: Scenario | None = None) -> list[Finding]:
    return gpu_not_observed(Case(data, scenario=scenario), Thresholds())


# -- inference-autograd -----------------------------------------------------------------------
def serving(*, recorded: int = 0, flows: int = 0, ops: tuple[str, ...] = ()) -> TraceAnalysis:
    """Three CPU steps; ``recorded`` operators recorded by autograd in each."""
    return analysis(
        steps(10.0, 10.0, 10.0, cpu=cpu(5.0, operators=40, grad_recording=recorded)),
        operators=[operator("aten::linear"), *(operator(name) for name in ops)],
        fwdbwd_flows=flows,
    )


def test_inference_autograd_on_recorded_operators() -> None:
    (found,) = autograd(serving(recorded=4))
    assert found.rule == "inference-autograd"
    assert found.evidence.figures == (
        Figure("grad_recording_operators", 12, "count"),  # 4 in each of 3 steps
        Figure("backward_operators", (), "names"),
        Figure("fwdbwd_flows", 0, "count"),
        Figure("training_only_operators", (), "names"),
    )
    assert (found.severity, found.level) == (0.1, "medium")
    assert found.evidence.where == Where(NAMES, (1000.0, 31000.0), THREAD, None)
    assert found.observation == (
        "The scenario says inference, but 12 operators were recorded by autograd."
    )


def test_inference_autograd_on_training_only_operators() -> None:
    (found,) = autograd(serving(ops=("aten::dropout", "aten::bernoulli_")))
    assert found.evidence.values()["training_only_operators"] == (
        "aten::dropout",
        "aten::bernoulli_",
    )
    assert found.severity == 0.1


def test_inference_autograd_when_backward_ran() -> None:
    backward = ("MmBackward0", "autograd::engine::evaluate_function: AddBackward0")
    (found,) = autograd(serving(ops=backward))
    assert found.evidence.values()["backward_operators"] == backward
    assert (found.severity, found.level) == (1.0, "high")
    assert "backward ran (2 backward operators, 0 fwdbwd links)" in found.observation


def test_inference_autograd_when_fwdbwd_links_exist() -> None:
    (found,) = autograd(serving(flows=7))
    assert found.evidence.values()["fwdbwd_flows"] == 7
    assert found.severity == 1.0


def test_inference_autograd_lists_at_most_ten_backward_operators() -> None:
    names = tuple(f"Op{k}Backward0" for k in range(12))
    (found,) = autograd(serving(ops=names))
    assert found.evidence.values()["backward_operators"] == names[:10]
    assert "12 backward operators" in found.observation


def test_inference_autograd_silent_on_a_clean_inference_trace() -> None:
    assert autograd(serving(ops=("aten::addmm", "BackwardCompatibleOp"))) == []


@pytest.mark.parametrize("scenario", [None, Scenario(question="q", kind="training")])
def test_inference_autograd_needs_an_inference_scenario(scenario: Scenario | None) -> None:
    assert autograd(serving(recorded=4, flows=3, ops=("MmBackward0",)), scenario) == []


def test_inference_autograd_ignores_thresholds() -> None:
    data = serving(recorded=1)
    zero = Thresholds().replace([f"{name}=0" for name in Thresholds().to_dict()])
    assert inference_autograd(Case(data, INFERENCE), zero) == autograd(data)


# -- precision --------------------------------------------------------------------------------
SGEMM = "volta_sgemm_128x64_nn"
BF16 = "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_nn"


def kernels(*stats: tuple[str, float], capability: str | None = "9.0",
            observed: bool = True) -> TraceAnalysis:  # fmt: skip
    """Three GPU steps of 10 ms on one device, with these kernels (name, total ms)."""
    return analysis(
        steps(10.0, 10.0, 10.0, gpu=gpu_step(5.0) if observed else None),
        kernels=[kernel(name, ms) for name, ms in stats],
        devices=[device("NVIDIA H100", capability)],
        gpu_observed=observed,
    )


def test_precision_fires_at_20_percent_of_kernel_time() -> None:
    (found,) = fp32(kernels((SGEMM, 2.0), ("vectorized_elementwise_kernel", 8.0)))
    assert found.rule == "precision"
    assert found.evidence.figures == (
        Figure("fp32_matrix_kernel_share", 0.2, "share"),
        Figure("examples", (SGEMM,), "names"),
        Figure("device", "NVIDIA H100", "text"),
    )
    assert (found.severity, found.level) == (0.2, "high")
    assert found.evidence.where == Where(NAMES, (1000.0, 31000.0), THREAD, (7,))
    assert "on NVIDIA H100 (compute capability 9.0)" in found.observation


def test_precision_silent_just_under() -> None:
    assert fp32(kernels((SGEMM, 1.99), ("vectorized_elementwise_kernel", 8.01))) == []


def test_precision_examples_are_three_names_cut_at_120_characters() -> None:
    long = "implicit_convolve_sgemm_" + "x" * 200
    data = kernels((long, 4.0), ("gemv2T_kernel", 2.5), ("cutlass_80_simt_sgemm", 2.0),
                   ("matmul_fallback", 1.0), ("gemmSN_NN_kernel", 0.5))  # fmt: skip
    (found,) = fp32(data)
    examples = found.evidence.values()["examples"]
    assert examples == (long[:120], "cutlass_80_simt_sgemm", "matmul_fallback")  # gemv: no
    assert found.severity == 0.75  # every matrix kernel counts: 7.5 ms of 10


def test_precision_silent_when_a_tensor_core_kernel_ran() -> None:
    assert fp32(kernels((SGEMM, 9.0), (BF16, 1.0))) == []


@pytest.mark.parametrize("capability", ["6.1", "6.9", None, "unknown"])
def test_precision_needs_tensor_cores(capability: str | None) -> None:
    assert fp32(kernels((SGEMM, 10.0), capability=capability)) == []


@pytest.mark.parametrize("capability", ["7.0", "10.0"])
def test_precision_from_compute_capability_7(capability: str) -> None:
    (found,) = fp32(kernels((SGEMM, 10.0), capability=capability))
    assert f"(compute capability {capability})" in found.observation


def test_precision_names_the_first_capable_device() -> None:
    data = analysis(
        steps(10.0, gpu=gpu_step(5.0)),
        kernels=[kernel(SGEMM, 1.0)],
        devices=[device("Tesla P100", "6.0"), device("NVIDIA A100", "8.0"), device("V100", "7.0")],
    )
    (found,) = fp32(data)
    assert found.evidence.values()["device"] == "NVIDIA A100"


def test_precision_silent_when_the_gpu_is_not_observed_or_has_no_kernels() -> None:
    assert fp32(kernels((SGEMM, 10.0), observed=False)) == []
    assert fp32(kernels(), precision_share=0.0) == []


def test_precision_overridden_threshold() -> None:
    data = kernels((SGEMM, 2.0), ("vectorized_elementwise_kernel", 8.0))
    assert fp32(data, precision_share=0.21) == []
    assert len(fp32(kernels((SGEMM, 1.0), ("elementwise", 9.0)), precision_share=0.1)) == 1


# -- gpu-not-observed -------------------------------------------------------------------------
def cpu_only(launch_calls: int = 0) -> TraceAnalysis:
    return analysis(steps(10.0, 10.0, 10.0), launch_calls=launch_calls)


def test_gpu_not_observed_when_the_scenario_asks_for_cuda() -> None:
    (found,) = not_observed(cpu_only(), Scenario(question="q", device="cuda:0"))
    assert found.rule == "gpu-not-observed"
    assert found.evidence.figures == (Figure("scenario_device", "cuda:0", "text"),)
    assert (found.severity, found.level) == (1.0, "high")
    assert found.evidence.where == Where(NAMES, (1000.0, 31000.0), THREAD, None)
    assert found.observation.endswith("although the scenario's device is cuda:0.")


def test_gpu_not_observed_when_runtime_calls_appear_without_a_scenario() -> None:
    (found,) = not_observed(cpu_only(launch_calls=12))
    assert found.evidence.figures == (Figure("scenario_device", None, "text"),)
    assert "12 CUDA/HIP runtime calls appear" in found.observation


def test_gpu_not_observed_with_a_cpu_scenario_but_runtime_calls() -> None:
    (found,) = not_observed(cpu_only(launch_calls=3), Scenario(question="q", device="cpu"))
    assert found.evidence.values() == {"scenario_device": "cpu"}
    assert "3 CUDA/HIP runtime calls appear" in found.observation


@pytest.mark.parametrize("scenario", [None, Scenario(question="q", device="cpu")])
def test_gpu_not_observed_silent_when_nothing_points_to_a_gpu(scenario: Scenario | None) -> None:
    assert not_observed(cpu_only(), scenario) == []


def test_gpu_not_observed_silent_when_the_gpu_is_observed() -> None:
    data = analysis(steps(10.0, gpu=gpu_step(5.0)), launch_calls=100)
    assert not_observed(data, Scenario(question="q", device="cuda")) == []


def test_gpu_not_observed_ignores_capture_facts() -> None:
    capture = CaptureFacts(gpu_requested=True, gpu_observed=False)
    assert gpu_not_observed(Case(cpu_only(), capture=capture), Thresholds()) == []
