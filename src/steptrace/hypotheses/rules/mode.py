"""Rules ``inference-autograd``, ``precision`` and ``gpu-not-observed``: what was run as what.

``inference-autograd`` reads autograd's own marks: an operator recorded by autograd carries
a sequence number, which torch writes only in grad mode; under ``torch.no_grad`` and
``torch.inference_mode`` no operator has one, and their operators and arguments are the
same (measured with torch 2.13; only ``with_stack`` frames of torch's own ``grad_mode.py``
differ, by line number), so the rule tells grad mode from the two, not one from the other. It counts
the operators of the user's request only: inside the labels read as ``forward`` when
there are some, else in the step outside the labels that read or move the batch (a
harness's own ``.to(device)`` runs in grad mode and is not the model's). Training-only
operators are those that do training work: the dropout masks (``aten::bernoulli_``,
``aten::native_dropout``); ``aten::dropout`` itself also runs, as a no-op, in eval mode.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from steptrace.analysis.efficiency.hardware import matrix_precisions
from steptrace.analysis.time.parts import part_of
from steptrace.hypotheses.finding import Finding, finding
from steptrace.hypotheses.rules.common import (
    carries_the_batch,
    evidence,
    step_share,
    trace_share,
    where,
)
from steptrace.units import pct

if TYPE_CHECKING:
    from steptrace.analysis.measure import StepResult, TraceAnalysis
    from steptrace.analysis.time.operators import OperatorStat
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds

BACKWARD = re.compile(r"Backward\d*$|^autograd::engine::evaluate_function")
ENGINE = "autograd::engine::evaluate_function"
# Operators that do training work: they run only in training mode (dropout's random masks;
# aten::dropout itself is also called in eval mode, where it returns its input).
TRAINING_ONLY = ("aten::native_dropout", "aten::_fused_dropout", "aten::bernoulli_")
# Matrix kernels, and the markers of kernels that run on tensor cores (names, a heuristic).
MATRIX = re.compile(r"gemm|conv|cutlass|xmma|wgrad|dgrad|fprop|matmul|nvjet", re.I)
TENSOR_CORE = re.compile(
    r"hmma|xmma|wgmma|tensorop|tf32|bf16|f16|fp16|half|884|1688|16816|hgemm|nvjet|mma", re.I
)
SAME_TRACE = (
    "torch.no_grad and torch.inference_mode leave the same trace (no operator recorded by "
    "autograd): this rule tells grad mode from them, not one from the other."
)


def inference_autograd(case: Case, limits: Thresholds) -> list[Finding]:
    analysis = case.analysis
    scenario = case.scenario
    if scenario is None or scenario.kind != "inference":
        return []  # only a stated inference scenario says what mode the model should run in
    backward = [o for o in analysis.operators if BACKWARD.search(o.name)]
    training_ops = [] if scenario.mode == "train" else _training_work(analysis)
    recorded = sum(_recorded_in_request(s) for s in analysis.steps)
    scope = _request_scope(analysis)
    flows = analysis.trace.fwdbwd_flows
    signs = _signs(recorded, scope, len(backward), flows, [o.name for o in training_ops])
    if not signs:
        return []
    share = trace_share(_backward_ms(backward) + _training_ms(training_ops), analysis)
    cost = (
        f"Backward and training-only operators take {pct(share)} of the steps' time"
        if share > 0
        else "What recording costs is not measured here: no share of the step is claimed"
    )
    return [
        finding(
            "inference-autograd",
            share,
            observation=f"The scenario says inference, but {'; '.join(signs)}. {cost}.",
            evidence=evidence(
                where(analysis),
                ("grad_recording_operators", recorded, "count"),
                ("counted", scope, "text"),
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
                SAME_TRACE,
                "Batch norm in training mode runs the same operators as in eval mode: it "
                "cannot be seen here.",
            ),
        )
    ]


def _signs(recorded: int, scope: str, backward: int, flows: int, training: list[str]) -> list[str]:
    signs = []
    if recorded:
        signs.append(
            f"{recorded} operators {scope} were recorded by autograd: grad mode was on "
            "(neither torch.no_grad nor torch.inference_mode)"
        )
    if backward or flows:
        signs.append(f"backward ran ({backward} backward operators, {flows} fwdbwd links)")
    if training:
        signs.append(
            f"training-only operators ran ({', '.join(training)}): dropout drew random masks"
        )
    return signs


def _backward_ms(backward: list[OperatorStat]) -> float:
    """The engine's labels hold the backward operators: one family or the other, not both."""
    return max(
        sum(o.inclusive_ms for o in backward if o.name.startswith(ENGINE)),
        sum(o.inclusive_ms for o in backward if not o.name.startswith(ENGINE)),
    )


def _training_ms(training: list[OperatorStat]) -> float:
    """native_dropout may hold bernoulli_: the larger one, not their sum."""
    return max((o.inclusive_ms for o in training), default=0.0)


def _training_work(analysis: TraceAnalysis) -> list[OperatorStat]:
    return [o for o in analysis.operators if o.name in TRAINING_ONLY]


def _forward_labels(step: StepResult) -> list[int]:
    return [p.grad_recording for p in step.phases if part_of(p.name) == "forward"]


def _recorded_in_request(step: StepResult) -> int:
    """Operators autograd recorded in the user's request: inside the forward labels (each
    counted once, in the outermost), else in the step outside the labels that carry the
    batch."""
    forward = _forward_labels(step)
    if forward:
        return sum(forward)
    batch = sum(p.grad_recording for p in step.phases if carries_the_batch(p.name))
    return max(0, step.cpu.grad_recording - batch)


def _request_scope(analysis: TraceAnalysis) -> str:
    names = sorted(
        {p.name for s in analysis.steps for p in s.phases if part_of(p.name) == "forward"}
    )
    if names:
        return f"inside the labels read as forward ({', '.join(names)})"
    return "in the steps, outside the labels that read or move the batch"


def precision(case: Case, limits: Thresholds) -> list[Finding]:
    """fp32 matrix kernels on a GPU whose tensor cores run a lower precision; the advice
    names the precisions this device runs (``hardware.matrix_precisions``): FP16 before
    compute capability 8.0, BF16 and TF32 from it, FP8 where the device has it."""
    analysis = case.analysis
    devices = analysis.trace.devices or ()
    capable = [(d, found) for d in devices if (found := matrix_precisions(d))]
    if not analysis.trace.gpu_observed or not capable or not analysis.kernels:
        return []
    matrix = [k for k in analysis.kernels if MATRIX.search(k.name)]
    tensor = [k for k in matrix if TENSOR_CORE.search(k.name)]
    fp32 = [k for k in matrix if not TENSOR_CORE.search(k.name)]
    kernel_ms = sum(k.total_ms for k in analysis.kernels)
    fp32_ms = sum(k.total_ms for k in fp32)
    share = fp32_ms / kernel_ms if kernel_ms else 0.0
    if tensor or share < limits.precision_share:
        return []
    # their time over the steps' wall time, at most their share of each step's kernel time:
    # kernels outside the steps do not count
    of_step = min(
        trace_share(fp32_ms, analysis),
        step_share((st, share * st.gpu.kernels.busy_ms) for st in analysis.steps if st.gpu),
    )
    device, precisions = capable[0]
    runs = "/".join(_PRECISION_NAMES[p] for p in precisions)
    return [
        finding(
            "precision",
            of_step,
            observation=(
                f"Matrix kernels without a tensor-core marker take {pct(share)} of kernel time "
                f"({pct(of_step)} of the step) on {device.name} (compute "
                f"capability {device.compute_capability}, tensor cores for {runs}), and no "
                "tensor-core kernel ran."
            ),
            evidence=evidence(
                where(analysis),
                ("fp32_matrix_kernel_share", share, "share"),
                ("fp32_matrix_kernel_ms", fp32_ms, "ms"),
                ("examples", tuple(k.name[:120] for k in fp32[:3]), "names"),
                ("device", device.name, "text"),
                ("tensor_core_precisions", precisions, "names"),
            ),
            hypothesis=f"Matrix products run in fp32 on a GPU whose tensor cores run {runs}.",
            next_check=precision_advice(precisions)
            + ", same data and starting state; compare the loss curve or accuracy, not only "
            "ms/step, outside the profiler.",
            caveats=(
                "Kernel names are a heuristic for precision; lower precision can change "
                "quality, which must be checked.",
            ),
        )
    ]


_PRECISION_NAMES = {
    "tfloat32": "TF32",
    "bfloat16": "BF16",
    "float16": "FP16",
    "float8": "FP8",
    "float4": "FP4",
}


def precision_advice(precisions: tuple[str, ...]) -> str:
    """What to try on a device whose matrix units run ``precisions``: BF16 (and TF32)
    where it has them, FP16 with loss scaling where it has only that, FP8 named after."""
    if "bfloat16" in precisions:
        advice = (
            "Try BF16 autocast (torch.autocast('cuda', dtype=torch.bfloat16)), or TF32 for the "
            "float32 matrix products (torch.backends.cuda.matmul.allow_tf32 = True; "
            "convolutions: torch.backends.cudnn.allow_tf32 = True)"
        )
        if "float8" in precisions:
            advice += (
                "; then FP8 (Transformer Engine, or torchao's float8 training) where BF16 "
                "keeps the quality"
            )
        return advice
    return (
        "Try FP16 autocast (torch.autocast('cuda', dtype=torch.float16), with "
        "torch.amp.GradScaler in training; these tensor cores run FP16 only)"
    )


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
