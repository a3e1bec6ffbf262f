"""Validation outside the profiler: A/B from the same state, correctness first, and the
findings' controlled checks as factories, each
``name(step, *, make_state, batches, device="cpu", check=None, plan=None,
instruments=None) -> Comparison`` (A as the user runs it, B the change;
``steptrace.errors.NotTestable`` where one cannot run here).

A ``Comparison`` is one type per verdict: ``Faster``, ``Slower``,
``NoDetectableDifference`` (each a ``Timed``, every figure present), ``OutputsDiffer``,
``TooFewSamples``. Names load on first use: ``steptrace.validate.results`` (what
validation produces) and ``steptrace.validate.inputs`` (``State``, ``Step``,
``CandidateInputs``) are read without torch; ``compare`` and the checks need it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steptrace.lazy import lazy_names

if TYPE_CHECKING:
    from steptrace.validate.ab import compare
    from steptrace.validate.checks.autocast import autocast_check
    from steptrace.validate.checks.batches import pinned_memory_check, prepared_batch_check
    from steptrace.validate.checks.compiled import compile_check
    from steptrace.validate.checks.constants import ConstantCache, constant_once_check
    from steptrace.validate.checks.fewer_threads import fewer_threads_check
    from steptrace.validate.checks.inference_mode import inference_mode_check
    from steptrace.validate.checks.operator_alone import operator_timing
    from steptrace.validate.checks.optimizer import optimizer_check
    from steptrace.validate.checks.profiler import profiler_check
    from steptrace.validate.checks.script import calls_script, operator_calls, operator_script
    from steptrace.validate.inputs import CandidateInputs, State, Step
    from steptrace.validate.results import (
        CheckResult,
        Comparison,
        Faster,
        LoopCheck,
        NoDetectableDifference,
        OperatorCall,
        OperatorShare,
        OperatorTiming,
        OutputsDiffer,
        Slower,
        Timed,
        TooFewSamples,
    )
    from steptrace.validate.timing import CheckPlan, Instruments, TimingPlan

_RESULTS = (
    "CheckResult",
    "Comparison",
    "Faster",
    "LoopCheck",
    "NoDetectableDifference",
    "OperatorCall",
    "OperatorShare",
    "OperatorTiming",
    "OutputsDiffer",
    "Slower",
    "Timed",
    "TooFewSamples",
)
_MODULE_OF = {
    "autocast_check": "steptrace.validate.checks.autocast",
    **dict.fromkeys(
        ("pinned_memory_check", "prepared_batch_check"), "steptrace.validate.checks.batches"
    ),
    "compare": "steptrace.validate.ab",
    "compile_check": "steptrace.validate.checks.compiled",
    **dict.fromkeys(
        ("ConstantCache", "constant_once_check"), "steptrace.validate.checks.constants"
    ),
    "inference_mode_check": "steptrace.validate.checks.inference_mode",
    **dict.fromkeys(("CandidateInputs", "State", "Step"), "steptrace.validate.inputs"),
    "fewer_threads_check": "steptrace.validate.checks.fewer_threads",
    "operator_timing": "steptrace.validate.checks.operator_alone",
    "optimizer_check": "steptrace.validate.checks.optimizer",
    "profiler_check": "steptrace.validate.checks.profiler",
    **dict.fromkeys(_RESULTS, "steptrace.validate.results"),
    **dict.fromkeys(
        ("calls_script", "operator_calls", "operator_script"), "steptrace.validate.checks.script"
    ),
    **dict.fromkeys(("CheckPlan", "Instruments", "TimingPlan"), "steptrace.validate.timing"),
}

__all__ = [
    "CandidateInputs",
    "CheckPlan",
    "CheckResult",
    "Comparison",
    "ConstantCache",
    "Faster",
    "Instruments",
    "LoopCheck",
    "NoDetectableDifference",
    "OperatorCall",
    "OperatorShare",
    "OperatorTiming",
    "OutputsDiffer",
    "Slower",
    "State",
    "Step",
    "Timed",
    "TimingPlan",
    "TooFewSamples",
    "autocast_check",
    "calls_script",
    "compare",
    "compile_check",
    "constant_once_check",
    "fewer_threads_check",
    "inference_mode_check",
    "operator_calls",
    "operator_script",
    "operator_timing",
    "optimizer_check",
    "pinned_memory_check",
    "prepared_batch_check",
    "profiler_check",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_names(__name__, _MODULE_OF)
