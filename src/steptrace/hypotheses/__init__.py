"""From observations to testable hypotheses: rules over a trace's measurements.

Each rule is a plain function ``(case, thresholds) -> list[Finding]`` over a ``Case`` (the
analysis, the scenario, the capture's facts); ``RULES`` lists them in the order of their
documented ids (docs/findings.md). ``find`` runs them all, merges a rule's findings into
one (``merge.one_per_rule``), gives time that two findings claim to one of them, and
ranks what fired by severity: the share of the step's wall time each explains
(``steptrace.hypotheses.claims`` defines it); the memory findings, whose severity is a
share of a device's memory, after them, ranked among themselves; the minor ones (under
``finding.NOISE_FLOOR`` of the step) last. The verdict then puts the finding that answers
its bound first (``answers``).
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from steptrace.hypotheses.case import Case
from steptrace.hypotheses.claims import resolve
from steptrace.hypotheses.finding import Evidence, Figure, Finding, Where
from steptrace.hypotheses.merge import one_per_rule
from steptrace.hypotheses.on_path import off_path, on_critical_path
from steptrace.hypotheses.rules.communication import comm_overlap
from steptrace.hypotheses.rules.compiled import graph_break, recompilation, recompile_limit
from steptrace.hypotheses.rules.cpu_side import (
    dispatch_bound,
    per_tensor_optimizer,
    thread_oversubscription,
)
from steptrace.hypotheses.rules.dominance import dominant_op, profiler_distortion
from steptrace.hypotheses.rules.efficiency import fusion, low_efficiency
from steptrace.hypotheses.rules.input import input_pipeline
from steptrace.hypotheses.rules.launches import optimizer_kernels, small_launches
from steptrace.hypotheses.rules.memory import (
    memory_churn,
    memory_growth,
    memory_peak,
    memory_reserved,
)
from steptrace.hypotheses.rules.mode import gpu_not_observed, inference_autograd, precision
from steptrace.hypotheses.rules.transfers import pageable_memcpy, repeated_copy
from steptrace.hypotheses.rules.unrecorded import unrecorded_time
from steptrace.hypotheses.rules.waiting import cpu_bound, sync_in_step
from steptrace.hypotheses.thresholds import Thresholds

Rule = Callable[[Case, Thresholds], list[Finding]]

RULES: tuple[tuple[str, Rule], ...] = (
    ("input-pipeline", input_pipeline),
    ("repeated-copy", repeated_copy),
    ("small-launches", small_launches),
    ("dominant-op", dominant_op),
    ("pageable-memcpy", pageable_memcpy),
    ("sync-in-step", sync_in_step),
    ("cpu-bound", cpu_bound),
    ("inference-autograd", inference_autograd),
    ("precision", precision),
    ("low-efficiency", low_efficiency),
    ("fusion", fusion),
    ("comm-overlap", comm_overlap),
    ("optimizer-kernels", optimizer_kernels),
    ("per-tensor-optimizer", per_tensor_optimizer),
    ("dispatch-bound", dispatch_bound),
    ("thread-oversubscription", thread_oversubscription),
    ("unrecorded-time", unrecorded_time),
    ("recompilation", recompilation),
    ("graph-break", graph_break),
    ("recompile-limit", recompile_limit),
    ("profiler-distortion", profiler_distortion),
    ("gpu-not-observed", gpu_not_observed),
    ("memory-growth", memory_growth),
    ("memory-peak", memory_peak),
    ("memory-reserved", memory_reserved),
    ("memory-churn", memory_churn),
)


def complete_steps(case: Case) -> Case:
    """The case without its partial steps (cut short by the profiler's stop) and, while
    others remain, the steps that compiled (torch.compile: the compiler's time is not the
    step's work), which would bias every per-step figure; all of them when none is left."""
    steps = case.analysis.steps
    whole = tuple(s for s in steps if not s.partial) or steps
    complete = tuple(s for s in whole if not s.compiling) or whole
    if len(complete) == len(steps):
        return case
    return msgspec.structs.replace(
        case,
        analysis=msgspec.structs.replace(case.analysis, steps=complete),
        compiled_apart=tuple(s for s in whole if s not in complete),
    )


def find(case: Case, thresholds: Thresholds | None = None) -> tuple[Finding, ...]:
    """Every finding that fires, most severe first; the minor ones (under the noise floor)
    last."""
    limits = thresholds or Thresholds()
    case = complete_steps(case)
    found = one_per_rule([f for _, rule in RULES for f in rule(case, limits)])
    timed = resolve([f for f in found if f.basis == "step time"])  # memory claims no time
    timed = on_critical_path(timed, case.analysis)  # off the path: ranked after the others
    of_memory = [f for f in found if f.basis != "step time"]
    ranked = sorted(timed, key=lambda f: (off_path(f), -f.severity))
    return (
        *(f for f in ranked if not f.minor),
        *sorted(of_memory, key=lambda f: -f.severity),
        *(f for f in ranked if f.minor),
    )


__all__ = ["RULES", "Case", "Evidence", "Figure", "Finding", "Thresholds", "Where", "find"]
