"""Validation outside the profiler (needs torch): A/B from the same state, correctness first."""

from steptrace.validate.checks import pinned_memory_check, prepared_batch_check
from steptrace.validate.compare import Comparison, LoopCheck, compare
from steptrace.validate.script import operator_script
from steptrace.validate.timing import CheckPlan, Instruments, TimingPlan

__all__ = [
    "CheckPlan",
    "Comparison",
    "Instruments",
    "LoopCheck",
    "TimingPlan",
    "compare",
    "operator_script",
    "pinned_memory_check",
    "prepared_batch_check",
]
