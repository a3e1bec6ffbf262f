"""Validation outside the profiler (needs torch): A/B from the same state, correctness first,
and the findings' controlled checks as factories, each
``name(step, *, make_state, batches, device="cpu", **options) -> Comparison`` (A as the
user runs it, B the change; ``steptrace.errors.NotTestable`` where one cannot run here).

``OperatorTiming``, the result of ``operator_timing``, is plain data defined in
``steptrace.timed_alone``: a report reads it from there without torch.
"""

from steptrace.timed_alone import OperatorTiming
from steptrace.validate.autocast import autocast_check
from steptrace.validate.checks import pinned_memory_check, prepared_batch_check
from steptrace.validate.compare import Comparison, LoopCheck, compare
from steptrace.validate.compiled import compile_check
from steptrace.validate.constants import ConstantCache, constant_once_check
from steptrace.validate.inference import inference_mode_check
from steptrace.validate.operator_timing import operator_timing
from steptrace.validate.optimizer import optimizer_check
from steptrace.validate.profiler import profiler_check
from steptrace.validate.script import operator_script
from steptrace.validate.timing import CheckPlan, Instruments, TimingPlan

__all__ = [
    "CheckPlan",
    "Comparison",
    "ConstantCache",
    "Instruments",
    "LoopCheck",
    "OperatorTiming",
    "TimingPlan",
    "autocast_check",
    "compare",
    "compile_check",
    "constant_once_check",
    "inference_mode_check",
    "operator_script",
    "operator_timing",
    "optimizer_check",
    "pinned_memory_check",
    "prepared_batch_check",
    "profiler_check",
]
