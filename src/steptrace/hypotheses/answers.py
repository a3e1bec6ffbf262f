"""The finding that answers the verdict: the one that addresses the bound it names.

Contract: ``answering(findings, key) -> Finding | None`` picks it by ``ANSWERS[key]``, a
verdict's key being its bound, refined by the host's cause its sentence names (``host:
short launches``, ...), the roofline's bound on a GPU-bound step (``gpu: memory``), or
``host on cpu`` (``host on cpu: unrecorded`` when most of the host's part has no work
recorded); ``answered_first(findings, rule)`` puts it first. A kernel's efficiency
hardly matters while the GPU waits for the host: what fired is ranked after what answers.
"""

from __future__ import annotations

from collections.abc import Sequence

from steptrace.hypotheses.finding import Finding

_MEMORY_RULES = ("memory-peak", "memory-reserved", "memory-growth", "memory-churn")
# What the CPU's recorded work can be cut into, on a CPU-only trace.
_CPU_WORK = (
    "dispatch-bound",
    "per-tensor-optimizer",
    "thread-oversubscription",
    "inference-autograd",
    "dominant-op",
)
# Per bound (and the host's cause, the roofline's bound): the findings that answer it, in
# tiers: the first tier with a finding that fired answers it, with its most severe finding
# (``answering``; the findings' own order, on the critical path first, decides in a tier).
ANSWERS: dict[str, tuple[tuple[str, ...], ...]] = {
    "input": (("input-pipeline",),),
    "communication": (("comm-overlap",),),
    "host: blocking calls": (("sync-in-step",), ("cpu-bound",)),
    "host: short launches": (("small-launches",), ("optimizer-kernels", "cpu-bound")),
    "host: own work": (("cpu-bound",), ("optimizer-kernels", "small-launches", "sync-in-step")),
    "host: unrecorded": (("unrecorded-time",), ("cpu-bound",)),
    "host": (("cpu-bound", "small-launches", "sync-in-step", "unrecorded-time"),),
    "host on cpu": (_CPU_WORK, ("unrecorded-time",)),
    "host on cpu: unrecorded": (("unrecorded-time",), _CPU_WORK),
    "gpu: compute": (("low-efficiency", "precision"), ("dominant-op", "fusion")),
    "gpu: memory": (("fusion",), ("dominant-op", "low-efficiency", "precision")),
    "gpu": (("precision", "dominant-op", "low-efficiency", "fusion"),),
    "memory": (_MEMORY_RULES,),
    "not-observed": (("gpu-not-observed",),),
}


def answering(findings: Sequence[Finding], key: str) -> Finding | None:
    """The finding that answers the verdict (``ANSWERS[key]``: the first tier that fired,
    its first finding in ``findings``' order; never a minor one); None when none fired."""
    for tier in ANSWERS.get(key, ()):
        for found in findings:
            if found.rule in tier and not found.minor:
                return found
    return None


def answered_first(findings: Sequence[Finding], rule: str | None) -> tuple[Finding, ...]:
    """The findings with the one that answers the verdict (its rule: ``Verdict.answered_by``)
    first, the others in their order."""
    first = next((f for f in findings if f.rule == rule and not f.minor), None)
    if first is None:
        return tuple(findings)
    return (first, *(f for f in findings if f is not first))
