"""Validation outside the profiler (needs torch): A/B from the same state, correctness first."""

from steptrace.validate.checks import moved_once_check, pinned_memory_check, prepared_batch_check
from steptrace.validate.compare import Comparison, LoopCheck, compare
from steptrace.validate.script import operator_script
from steptrace.validate.timing import TimingPlan

__all__ = [
    "Comparison",
    "LoopCheck",
    "TimingPlan",
    "compare",
    "moved_once_check",
    "operator_script",
    "pinned_memory_check",
    "prepared_batch_check",
]
