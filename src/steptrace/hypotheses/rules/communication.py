"""Rule ``comm-overlap``: collectives that no compute hides, one finding for them all.

Each type (all-reduce, all-gather, reduce-scatter, all-to-all, send/recv, ...) of
``analysis.communication`` is judged on its own: it fires when the type takes at least
``comm_share`` of the step and less than ``comm_overlap`` of its time overlaps compute;
when none does but all together do, as one type (their shares added up, the step's exposed
communication as what compute did not hide), the most exposed type stands for them. Then
the rule gives one finding: its severity is the step's communication that no compute hides,
as a whole, over the step (the median over the steps with collectives): on a GPU trace the
union of the communication kernels less its overlap with compute (the verdict's figure, so
types running at once are not added up); on a CPU trace, or a step whose GPU ran no
communication kernel, the types' exposed times added up, at most the step. Its evidence is
the largest firing type's (the most exposed): its sizes, bus bandwidth and advice, the
other firing types' advice in brief; ``instances`` names every type that ran, with its
share of the step and how much of it overlapped. On one rank's trace, a collective that
lasts long while the rank computed little since its previous one is most likely waiting for
other ranks: when such collectives hold half the largest type's time, the finding says so
and sends to the job's traces together first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from steptrace.hypotheses.finding import Finding, finding
from steptrace.hypotheses.rules.common import evidence, median, where
from steptrace.units import pct, size

if TYPE_CHECKING:
    from steptrace.analysis.communication.summary import CollectiveKind
    from steptrace.analysis.measure import TraceAnalysis
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds

WAITING_SHARE = 0.5  # of a type's time in long collectives after little compute
# what each type usually is, and what to try: (hypothesis, next check)
ADVICE: dict[str, tuple[str, str]] = {
    "all_reduce": (
        "Gradients may be all-reduced after the backward pass rather than during it (DDP's "
        "buckets ready late, or a synchronizing call before the backward ends).",
        "Overlap the all-reduce with the backward pass: change DDP's bucket_cap_mb (smaller "
        "buckets start sooner), keep gradient_as_bucket_view=True and no synchronizing call "
        "in the backward",
    ),
    "all_gather": (
        "Parameters may be all-gathered just before the compute that needs them (FSDP "
        "without prefetch), so the compute waits for them.",
        "Prefetch the next unit's all-gather under the current unit's compute (FSDP "
        "forward_prefetch=True and backward_prefetch=BACKWARD_PRE; FSDP2 "
        "set_modules_to_forward_prefetch), or wrap larger units for fewer, larger "
        "collectives",
    ),
    "reduce_scatter": (
        "Gradients may be reduce-scattered after the compute that could hide them (FSDP's "
        "backward, unit by unit).",
        "Overlap the reduce-scatter with the next unit's backward (FSDP backward_prefetch="
        "BACKWARD_PRE; larger wrapping units for fewer, larger collectives)",
    ),
    "all_to_all": (
        "An exchange of embeddings or tokens (a DLRM's sharded tables, a mixture of "
        "experts) may wait for the slowest split or run with nothing to overlap it.",
        "Even out the split across ranks (the sharding plan, the experts' capacity), "
        "pipeline the exchange with the dense compute (TorchRec's train pipeline overlaps "
        "the next batch's input all-to-all), or send fewer bytes (FP16 or FP8 embeddings)",
    ),
    "send_recv": (
        "Pipeline stages may wait for each other's activations (the pipeline's bubbles).",
        "Use more micro-batches or an interleaved schedule to fill the bubbles",
    ),
}
OTHER = (
    "A collective runs in every step with nothing to overlap it.",
    "Check why it runs in every step (DDP's buffer broadcast: broadcast_buffers=False when "
    "the buffers do not change; a barrier: take it out of the step)",
)
SAME_RUN = (
    "; compare ms/step on every rank with the same world size and batch, outside the "
    "profiler, and check that the results stay the same."
)


class _Judged(NamedTuple):
    """One collective type over the steps it ran in: medians of its shares of the step."""

    kind: CollectiveKind
    share: float  # its time
    overlapped: float  # of its time, the part compute covered
    exposed: float  # its time no compute covered
    calls_per_step: float


def comm_overlap(case: Case, limits: Thresholds) -> list[Finding]:
    analysis = case.analysis
    judged = [j for kind in analysis.communication if (j := _judged(analysis, kind)) is not None]
    fired = [
        j for j in judged if j.share >= limits.comm_share and j.overlapped < limits.comm_overlap
    ]
    exposed = _exposed_share(analysis) if judged else 0.0
    together = sum(j.share for j in judged)  # no type alone, but all together, as one
    if not fired and together >= limits.comm_share and 1 - exposed / together < limits.comm_overlap:
        fired = [max(judged, key=lambda j: j.exposed)]
    if not fired:
        return []
    largest = max(fired, key=lambda j: j.exposed)  # the first of the most exposed
    kind = largest.kind
    others = [j for j in fired if j is not largest]
    hypothesis, advice = _advice(kind)
    ranked = sorted(judged, key=lambda j: -j.exposed)
    return [
        finding(
            "comm-overlap",
            exposed,
            observation=_observation(exposed, largest, others),
            evidence=evidence(
                where(analysis),
                ("collective", kind.kind, "text"),
                ("communication_share", largest.share, "share"),
                ("overlapped_share", largest.overlapped, "share"),
                ("calls_per_step", largest.calls_per_step, "count"),
                ("bytes_per_call", kind.bytes_per_call, "bytes"),
                ("busbw_gbps", kind.busbw_gbps, "gbps"),
                ("group_size", kind.group_size, "count"),
                ("waiting_share", _waiting(kind), "share"),
                ("instances", tuple(_instance(j) for j in ranked), "names"),
            ),
            hypothesis=hypothesis,
            next_check=advice + _others_advice(others) + SAME_RUN,
            caveats=(
                "One rank's trace does not show the other ranks: a collective's time includes "
                "its wait for the last of them, so its bandwidth here is a lower bound.",
            ),
        )
    ]


def _exposed_share(analysis: TraceAnalysis) -> float:
    """The median, over the steps with collectives, of their time no compute covered over
    the step's wall (see the module)."""
    by_types: dict[str, float] = {}
    for kind in analysis.communication:
        for p in kind.per_step:
            if p.ms > 0:
                by_types[p.step] = by_types.get(p.step, 0.0) + p.exposed_ms
    shares = []
    for step in analysis.steps:
        if step.wall_ms <= 0 or step.name not in by_types:
            continue
        comm = step.gpu.communication if step.gpu is not None else None
        if comm is not None and comm.busy_ms > 0:
            exposed = comm.busy_ms - comm.overlap_with_compute_ms
        else:
            exposed = by_types[step.name]
        shares.append(min(max(exposed, 0.0), step.wall_ms) / step.wall_ms)
    return median(shares)


def _judged(analysis: TraceAnalysis, kind: CollectiveKind) -> _Judged | None:
    walls = {s.name: s.wall_ms for s in analysis.steps if s.wall_ms > 0}
    steps = [p for p in kind.per_step if p.step in walls and p.ms > 0]
    if not steps:
        return None
    return _Judged(
        kind,
        share=median(p.ms / walls[p.step] for p in steps),
        overlapped=median(1 - p.exposed_ms / p.ms for p in steps),
        exposed=median(p.exposed_ms / walls[p.step] for p in steps),
        calls_per_step=median(float(p.calls) for p in steps),
    )


def _waiting(kind: CollectiveKind) -> float:
    return kind.waiting_ms / kind.total_ms if kind.total_ms > 0 else 0.0


def _advice(kind: CollectiveKind) -> tuple[str, str]:
    """The type's (hypothesis, next check); the job's traces first when it likely waits."""
    hypothesis, advice = ADVICE.get(kind.kind, OTHER)
    waiting = _waiting(kind)
    if waiting < WAITING_SHARE:
        return hypothesis, advice
    name = _name(kind)
    return (
        f"This rank may be waiting for other ranks: {pct(waiting)} of its {name} time is "
        "in long collectives that began after little compute (it arrived early, the "
        "others were still busy or slower). " + hypothesis,
        "First analyze the job's ranks together (steptrace analyze rank-*.json): it "
        "splits each collective into waiting for the last rank and transfer, and names "
        "a straggler; if transfer remains: " + advice[0].lower() + advice[1:],
    )


def _others_advice(others: list[_Judged]) -> str:
    """The other firing types' advice, each its first clause: ``; for all-reduce: overlap
    the all-reduce with the backward pass``."""
    briefly = []
    for j in others:
        advice = ADVICE.get(j.kind.kind, OTHER)[1]
        first = advice.split(" (")[0].split(":")[0]
        briefly.append(f"; for {_name(j.kind)}: {first[0].lower()}{first[1:]}")
    return "".join(briefly)


def _observation(exposed: float, largest: _Judged, others: list[_Judged]) -> str:
    rest = "".join(
        f"; {_name(j.kind)} takes {pct(j.share)}, {pct(j.overlapped)} overlapped" for j in others
    )
    return (
        f"Collectives that no compute hides take {pct(exposed)} of the step: "
        f"{_name(largest.kind)} takes {pct(largest.share)} of the step and only "
        f"{pct(largest.overlapped)} of its time overlaps compute ({_sizes(largest.kind)}){rest}."
    )


def _instance(judged: _Judged) -> str:
    """``all_reduce: 11.9% of the step, 8.0% overlapped``."""
    return (
        f"{judged.kind.kind}: {pct(judged.share)} of the step, {pct(judged.overlapped)} overlapped"
    )


def _name(kind: CollectiveKind) -> str:
    return kind.kind.replace("_", "-")


def _sizes(kind: CollectiveKind) -> str:
    calls = f"{kind.calls} calls"
    each = f" of {size(kind.bytes_per_call)} each" if kind.bytes_per_call is not None else ""
    bus = (
        f", bus bandwidth {kind.busbw_gbps:.3g} GB/s over their whole time"
        if kind.busbw_gbps is not None
        else ""
    )
    ranks = f", {kind.group_size} ranks" if kind.group_size else ""
    return f"{calls} in the trace{each}{bus}{ranks}"
