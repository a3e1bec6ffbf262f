"""Validation outside the profiler: A/B from the same state, correctness first.

Names load on first use: ``steptrace.validate.results`` (what a comparison produces) is
read without torch; ``compare`` and the checks need it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steptrace.lazy import lazy_names

if TYPE_CHECKING:
    from steptrace.validate.ab import compare
    from steptrace.validate.checks import pinned_memory_check, prepared_batch_check
    from steptrace.validate.results import CheckResult, Comparison, LoopCheck
    from steptrace.validate.script import operator_script
    from steptrace.validate.timing import CheckPlan, Instruments, TimingPlan

_MODULE_OF = {
    **dict.fromkeys(("pinned_memory_check", "prepared_batch_check"), "steptrace.validate.checks"),
    "compare": "steptrace.validate.ab",
    **dict.fromkeys(("CheckResult", "Comparison", "LoopCheck"), "steptrace.validate.results"),
    "operator_script": "steptrace.validate.script",
    **dict.fromkeys(("CheckPlan", "Instruments", "TimingPlan"), "steptrace.validate.timing"),
}

__all__ = [
    "CheckPlan",
    "CheckResult",
    "Comparison",
    "Instruments",
    "LoopCheck",
    "TimingPlan",
    "compare",
    "operator_script",
    "pinned_memory_check",
    "prepared_batch_check",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_names(__name__, _MODULE_OF)
