"""Rules ``inference-autograd``, ``precision`` and ``gpu-not-observed``: what was run as what."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from steptrace.hypotheses.finding import Finding, finding
from steptrace.hypotheses.rules.common import evidence, where
from steptrace.units import pct

if TYPE_CHECKING:
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds

BACKWARD = re.compile(r"Backward\d*$|^autograd::engine::evaluate_function")
TRAINING_ONLY = (
    "aten::dropout",
    "aten::native_dropout",
    "aten::bernoulli_",
    "aten::feature_dropout",
)
# Matrix kernels, and the markers of kernels that run on tensor cores (names, a heuristic).
MATRIX = re.compile(r"gemm|conv|cutlass|xmma|wgrad|dgrad|fprop|matmul|nvjet", re.I)
TENSOR_CORE = re.compile(
    r"hmma|xmma|wgmma|tensorop|tf32|bf16|f16|fp16|half|884|1688|16816|hgemm|nvjet|mma", re.I
)


def inference_autograd(case: Case, limits: Thresholds) -> list[Finding]:
    analysis = case.analysis
    scenario = case.scenario
    backward = [o for o in analysis.operators if BACKWARD.search(o.name)]
    training_ops = [o for o in analysis.operators if o.name in TRAINING_ONLY]
    recorded = sum(s.cpu.grad_recording for s in analysis.steps)
    flows = analysis.trace.fwdbwd_flows
    if scenario is None or scenario.kind != "inference":
        return []  # only a stated inference scenario says what mode the model should run in
    signs = []
    if recorded:
        signs.append(f"{recorded} operators were recorded by autograd")
    if backward or flows:
        signs.append(f"backward ran ({len(backward)} backward operators, {flows} fwdbwd links)")
    if training_ops:
        signs.append(f"training-only operators ran ({', '.join(o.name for o in training_ops)})")
    if not signs:
        return []
    return [
        finding(
            "inference-autograd",
            1.0 if backward or flows else 0.1,
            observation=f"The scenario says inference, but {'; '.join(signs)}.",
            evidence=evidence(
                where(analysis),
                ("grad_recording_operators", recorded, "count"),
                ("backward_operators", tuple(o.name for o in backward[:10]), "names"),
                ("fwdbwd_flows", flows, "count"),
                ("training_only_operators", tuple(o.name for o in training_ops), "names"),
            ),
            hypothesis=(
                "The model may run in the wrong mode: autograd records the graph (memory and "
                "time) and training-mode layers (dropout, batch norm) change the outputs."
            ),
            next_check=(
                "Serve with model.eval() under torch.inference_mode(); compare the outputs "
                "with the current ones (they differ only if dropout or batch norm were "
                "active), then latency outside the profiler."
            ),
            caveats=(
                "Operators recorded by autograd cost memory and time even if no backward runs.",
            ),
        )
    ]


def precision(case: Case, limits: Thresholds) -> list[Finding]:
    analysis = case.analysis
    devices = analysis.trace.devices or ()
    capable = [d for d in devices if _capability(d.compute_capability) >= 7.0]
    if not analysis.trace.gpu_observed or not capable or not analysis.kernels:
        return []
    matrix = [k for k in analysis.kernels if MATRIX.search(k.name)]
    tensor = [k for k in matrix if TENSOR_CORE.search(k.name)]
    fp32 = [k for k in matrix if not TENSOR_CORE.search(k.name)]
    kernel_ms = sum(k.total_ms for k in analysis.kernels)
    share = sum(k.total_ms for k in fp32) / kernel_ms if kernel_ms else 0.0
    if tensor or share < limits.precision_share:
        return []
    return [
        finding(
            "precision",
            share,
            observation=(
                f"Matrix kernels without a tensor-core marker take {pct(share)} of kernel time "
                f"on {capable[0].name} (compute capability {capable[0].compute_capability}), "
                "and no tensor-core kernel ran."
            ),
            evidence=evidence(
                where(analysis),
                ("fp32_matrix_kernel_share", share, "share"),
                ("examples", tuple(k.name[:120] for k in fp32[:3]), "names"),
                ("device", capable[0].name, "text"),
            ),
            hypothesis="Matrix products run in fp32 on a GPU that has tensor cores.",
            next_check=(
                "Try bf16 autocast (or TF32 on Ampere and later: "
                "torch.backends.cuda.matmul.allow_tf32 = True), same data and starting state; "
                "compare the loss curve or accuracy, not only ms/step, outside the profiler."
            ),
            caveats=(
                "Kernel names are a heuristic for precision; lower precision can change "
                "quality, which must be checked.",
            ),
        )
    ]


def _capability(text: str | None) -> float:
    try:
        return float(text) if text else 0.0
    except ValueError:
        return 0.0


def gpu_not_observed(case: Case, limits: Thresholds) -> list[Finding]:
    analysis = case.analysis
    if analysis.trace.gpu_observed:
        return []
    scenario = case.scenario
    asked = scenario is not None and scenario.device.startswith("cuda")
    launched = analysis.trace.launch_calls > 0
    if not asked and not launched:
        return []
    reason = (
        f"the scenario's device is {scenario.device}"
        if asked and scenario
        else f"{analysis.trace.launch_calls} CUDA/HIP runtime calls appear"
    )
    return [
        finding(
            "gpu-not-observed",
            1.0,
            observation=f"No GPU event in the trace, although {reason}.",
            evidence=evidence(
                where(analysis),
                ("scenario_device", scenario.device if scenario else None, "text"),
            ),
            hypothesis="GPU collection failed (CUPTI/roctracer unavailable or not enabled).",
            next_check=(
                "Check torch.profiler.supported_activities() includes CUDA and capture again "
                "with ProfilerActivity.CUDA; nothing about the GPU can be concluded until then."
            ),
            caveats=("An absence of events is not an absence of GPU work.",),
        )
    ]
