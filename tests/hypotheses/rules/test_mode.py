"""Rules ``inference-autograd``, ``precision`` and ``gpu-not-observed`` on hand-built analyses."""

from __future__ import annotations

import re
from typing import Any

import pytest

from steptrace.analysis.measure import TraceAnalysis
from steptrace.analysis.time.operators import OperatorStat
from steptrace.analysis.time.phases import Phase
from steptrace.hypotheses import Case, Figure, Finding, Thresholds, Where
from steptrace.hypotheses.rules.mode import (
    SAME_TRACE,
    gpu_not_observed,
    inference_autograd,
    precision,
)
from steptrace.scenario import CaptureFacts, Scenario
from tests.analyses import (
    THREAD,
    analysis,
    cpu,
    device,
    gpu_step,
    kernel,
    operator,
    phase,
    steps,
)

NAMES = ("ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3")
INFERENCE = Scenario(question="How fast is one request?", kind="inference")


def autograd(data: TraceAnalysis, scenario: Scenario | None = INFERENCE) -> list[Finding]:
    return inference_autograd(Case(data, scenario=scenario), Thresholds())


def fp32(data: TraceAnalysis, **limits: Any) -> list[Finding]:
    return precision(Case(data), Thresholds(**limits))


def not_observed(data: TraceAnalysis, scenario: Scenario | None = None) -> list[Finding]:
    return gpu_not_observed(Case(data, scenario=scenario), Thresholds())


# -- inference-autograd -----------------------------------------------------------------------
def serving(
    *,
    recorded: int = 0,
    flows: int = 0,
    ops: tuple[OperatorStat, ...] = (),
    phases: tuple[Phase, ...] = (),
) -> TraceAnalysis:
    """Three CPU steps of 10 ms; ``recorded`` operators recorded by autograd in each."""
    recording = cpu(5.0, operators=40, grad_recording=recorded)
    return analysis(
        steps(10.0, 10.0, 10.0, cpu=recording, phases=phases),
        operators=[operator("aten::linear"), *ops],
        fwdbwd_flows=flows,
    )


def named(*names: str, ms: float = 0.0) -> tuple[OperatorStat, ...]:
    return tuple(operator(name, self_ms=ms) for name in names)


def test_inference_autograd_on_recorded_operators() -> None:
    (found,) = autograd(serving(recorded=4))
    assert found.rule == "inference-autograd"
    assert found.evidence.figures == (
        Figure("grad_recording_operators", 12, "count"),  # 4 in each of 3 steps
        Figure("counted", "in the steps, outside the labels that read or move the batch", "text"),
        Figure("backward_operators", (), "names"),
        Figure("fwdbwd_flows", 0, "count"),
        Figure("training_only_operators", (), "names"),
    )
    # recording costs time, but how much is not measured: the finding claims none
    assert (found.severity, found.level) == (0.0, "low")
    assert found.evidence.where == Where(NAMES, (1000.0, 31000.0), THREAD, None)
    assert found.observation.startswith(
        "The scenario says inference, but 12 operators in the steps, outside the labels that "
        "read or move the batch were recorded by autograd: grad mode was on (neither "
        "torch.no_grad nor torch.inference_mode)."
    )
    assert SAME_TRACE in found.caveats


def test_inference_autograd_counts_the_forward_labels_only() -> None:
    """The harness moves the batch in grad mode (its .to() is recorded); the user's request,
    under the forward label, records nothing: silent. Recorded inside forward: it fires."""
    harness = (phase("transfer", 0.1, grad_recording=1), phase("forward", 5.0))
    assert autograd(serving(recorded=1, phases=harness)) == []
    # nested forward labels: the analysis counts the operators in the outermost only
    user = (
        phase("transfer", 0.1, grad_recording=1),
        phase("forward", 5.0, grad_recording=30),
        phase("[pl][profile]model_forward", 4.0, grad_recording=0),
    )
    (found,) = autograd(serving(recorded=31, phases=user))
    assert found.evidence.values()["grad_recording_operators"] == 90  # 30 in each step
    assert found.evidence.values()["counted"] == (
        "inside the labels read as forward ([pl][profile]model_forward, forward)"
    )


def test_inference_autograd_without_forward_labels_leaves_out_the_batch_labels() -> None:
    batch = (phase("read_batch", 0.2, grad_recording=2), phase("to_device", 0.1, grad_recording=1))
    assert autograd(serving(recorded=3, phases=batch)) == []
    (found,) = autograd(serving(recorded=5, phases=batch))
    assert found.evidence.values()["grad_recording_operators"] == 6  # 2 in each step


def test_inference_autograd_on_training_only_operators() -> None:
    ops = named("aten::dropout", "aten::bernoulli_", ms=0.3)
    (found,) = autograd(serving(ops=ops))
    assert found.evidence.values()["training_only_operators"] == ("aten::bernoulli_",)
    assert "training-only operators ran (aten::bernoulli_): dropout drew random masks" in (
        found.observation
    )
    assert found.severity == pytest.approx(0.3 / 30)  # the masks' time over the steps' 30 ms


def test_inference_autograd_silent_on_eval_mode_dropout() -> None:
    """In eval mode aten::dropout still runs, as a no-op: it is no sign of training mode."""
    assert autograd(serving(ops=named("aten::dropout", "aten::feature_dropout"))) == []


def test_inference_autograd_accepts_training_operators_when_the_scenario_wants_train_mode() -> None:
    scenario = Scenario(question="Monte-Carlo dropout", kind="inference", model_mode="train")
    assert autograd(serving(ops=named("aten::bernoulli_")), scenario) == []


def test_inference_autograd_when_backward_ran() -> None:
    backward = named("MmBackward0", "autograd::engine::evaluate_function: AddBackward0", ms=6.0)
    (found,) = autograd(serving(ops=backward))
    assert found.evidence.values()["backward_operators"] == tuple(o.name for o in backward)
    assert found.severity == pytest.approx(0.2) and found.level == "high"  # 6 ms of 30
    assert "backward ran (2 backward operators, 0 fwdbwd links)" in found.observation


def test_inference_autograd_when_fwdbwd_links_exist() -> None:
    (found,) = autograd(serving(flows=7))
    assert found.evidence.values()["fwdbwd_flows"] == 7
    assert found.severity == 0.0  # no backward operator: no time to claim


def test_inference_autograd_lists_at_most_ten_backward_operators() -> None:
    names = tuple(f"Op{k}Backward0" for k in range(12))
    (found,) = autograd(serving(ops=named(*names)))
    assert found.evidence.values()["backward_operators"] == names[:10]
    assert "12 backward operators" in found.observation


def test_inference_autograd_silent_on_a_clean_inference_trace() -> None:
    assert autograd(serving(ops=named("aten::addmm", "BackwardCompatibleOp"))) == []


@pytest.mark.parametrize("scenario", [None, Scenario(question="q", kind="training")])
def test_inference_autograd_needs_an_inference_scenario(scenario: Scenario | None) -> None:
    assert autograd(serving(recorded=4, flows=3, ops=named("MmBackward0")), scenario) == []


def test_inference_autograd_ignores_thresholds() -> None:
    data = serving(recorded=1)
    zero = Thresholds().replace([f"{name}=0" for name in Thresholds().to_dict()])
    assert inference_autograd(Case(data, INFERENCE), zero) == autograd(data)


# -- precision --------------------------------------------------------------------------------
SGEMM = "volta_sgemm_128x64_nn"
BF16 = "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_nn"


def kernels(
    *stats: tuple[str, float], capability: str | None = "9.0", observed: bool = True
) -> TraceAnalysis:
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
        Figure("fp32_matrix_kernel_ms", 2.0, "ms"),
        Figure("examples", (SGEMM,), "names"),
        Figure("device", "NVIDIA H100", "text"),
        Figure("tensor_core_precisions", ("tfloat32", "bfloat16", "float16", "float8"), "names"),
    )
    # a share of the step, not of kernel time: 2 ms over the steps' 30 ms
    assert found.severity == pytest.approx(2 / 30) and found.level == "medium"
    assert found.evidence.where == Where(NAMES, (1000.0, 31000.0), THREAD, (7,))
    assert "on NVIDIA H100 (compute capability 9.0, tensor cores for TF32/BF16/FP16/FP8)" in (
        found.observation
    )


def test_precision_silent_just_under() -> None:
    assert fp32(kernels((SGEMM, 1.99), ("vectorized_elementwise_kernel", 8.01))) == []


def test_precision_examples_are_three_names_cut_at_120_characters() -> None:
    long = "implicit_convolve_sgemm_" + "x" * 200
    data = kernels(
        (long, 4.0),
        ("gemv2T_kernel", 2.5),
        ("cutlass_80_simt_sgemm", 2.0),
        ("matmul_fallback", 1.0),
        ("gemmSN_NN_kernel", 0.5),
    )
    (found,) = fp32(data)
    examples = found.evidence.values()["examples"]
    assert examples == (long[:120], "cutlass_80_simt_sgemm", "matmul_fallback")  # gemv: no
    assert found.evidence.values()["fp32_matrix_kernel_share"] == 0.75  # 7.5 ms of 10
    assert found.severity == pytest.approx(7.5 / 30)  # every matrix kernel counts


def test_precision_claims_at_most_its_share_of_each_steps_kernel_time() -> None:
    """Kernels outside the steps (here 50 ms of them) do not make it claim more than the
    steps' kernel time: 80% of 5 busy ms in each 10 ms step."""
    (found,) = fp32(kernels((SGEMM, 40.0), ("vectorized_elementwise_kernel", 10.0)))
    assert found.severity == pytest.approx(0.8 * 5 / 10)
    assert "(40.0% of the step)" in found.observation


def test_precision_silent_when_a_tensor_core_kernel_ran() -> None:
    assert fp32(kernels((SGEMM, 9.0), (BF16, 1.0))) == []


@pytest.mark.parametrize("capability", ["6.1", "6.9", None, "unknown"])
def test_precision_needs_tensor_cores(capability: str | None) -> None:
    assert fp32(kernels((SGEMM, 10.0), capability=capability)) == []


@pytest.mark.parametrize("capability", ["7.0", "10.0"])
def test_precision_from_compute_capability_7(capability: str) -> None:
    (found,) = fp32(kernels((SGEMM, 10.0), capability=capability))
    assert f"(compute capability {capability}, tensor cores for" in found.observation


def precision_text(found: Finding) -> str:
    return " ".join((found.observation, found.hypothesis, found.next_check))


@pytest.mark.parametrize("capability", ["7.0", "7.5"])
def test_precision_before_sm80_advises_fp16_never_bf16(capability: str) -> None:
    (found,) = fp32(kernels((SGEMM, 10.0), capability=capability))
    text = precision_text(found)
    assert "torch.float16" in text and "GradScaler" in text
    assert not re.search(r"bf16|bfloat16|tf32", text, re.IGNORECASE)


def test_precision_from_sm80_advises_bf16_and_tf32_and_fp8_where_the_device_has_it() -> None:
    (ampere,) = fp32(kernels((SGEMM, 10.0), capability="8.0"))
    assert "torch.bfloat16" in ampere.next_check and "allow_tf32" in ampere.next_check
    assert "FP8" not in precision_text(ampere)
    (hopper,) = fp32(kernels((SGEMM, 10.0), capability="9.0"))
    assert "torch.bfloat16" in hopper.next_check and "FP8" in hopper.next_check


@pytest.mark.parametrize(
    ("name", "capability", "fires", "fp8"),
    [
        ("Tesla V100-SXM2-32GB", None, True, False),  # the table knows it: FP16 only
        ("AMD Instinct MI300X VF", "9.4", True, True),  # a gfx number, not a capability
        ("AMD Radeon Graphics", "9.0", False, False),  # ROCm's name of an MI250: not known
    ],
)
def test_precision_reads_the_device_table_before_the_capability(
    name: str, capability: str | None, fires: bool, fp8: bool
) -> None:
    data = analysis(
        steps(10.0, gpu=gpu_step(5.0)),
        kernels=[kernel(SGEMM, 1.0)],
        devices=[device(name, capability, memory_bytes=34_000_000_000)],
    )
    found = fp32(data)
    assert len(found) == int(fires)
    if fires:
        assert ("FP8" in found[0].next_check) == fp8


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
