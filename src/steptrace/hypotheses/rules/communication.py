"""Rule ``comm-overlap``: collectives that no compute hides, one finding per collective type.

Each type (all-reduce, all-gather, reduce-scatter, all-to-all, send/recv, ...) of
``analysis.communication`` is judged on its own: it fires when the type takes at least
``comm_share`` of the step and less than ``comm_overlap`` of its time overlaps compute;
its severity is its exposed time (covered by no compute) over the step, the median over
the steps. The finding gives its sizes and bus bandwidth and the advice that fits the
type. On one rank's trace, a collective that lasts long while the rank computed little
since its previous one is most likely waiting for other ranks: when such collectives hold
half the type's time, the finding says so and sends to the job's traces together first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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


def comm_overlap(case: Case, limits: Thresholds) -> list[Finding]:
    analysis = case.analysis
    return [
        found
        for kind in analysis.communication
        if (found := _kind_finding(analysis, kind, limits)) is not None
    ]


def _kind_finding(
    analysis: TraceAnalysis, kind: CollectiveKind, limits: Thresholds
) -> Finding | None:
    walls = {s.name: s.wall_ms for s in analysis.steps if s.wall_ms > 0}
    steps = [p for p in kind.per_step if p.step in walls and p.ms > 0]
    if not steps:
        return None
    share = median(p.ms / walls[p.step] for p in steps)
    overlapped = median(1 - p.exposed_ms / p.ms for p in steps)
    if share < limits.comm_share or overlapped >= limits.comm_overlap:
        return None
    exposed = median(p.exposed_ms / walls[p.step] for p in steps)
    waiting = kind.waiting_ms / kind.total_ms if kind.total_ms > 0 else 0.0
    name = kind.kind.replace("_", "-")
    hypothesis, advice = ADVICE.get(kind.kind, OTHER)
    if waiting >= WAITING_SHARE:
        hypothesis = (
            f"This rank may be waiting for other ranks: {pct(waiting)} of its {name} time is "
            "in long collectives that began after little compute (it arrived early, the "
            "others were still busy or slower). " + hypothesis
        )
        advice = (
            "First analyze the job's ranks together (steptrace analyze rank-*.json): it "
            "splits each collective into waiting for the last rank and transfer, and names "
            "a straggler; if transfer remains: " + advice[0].lower() + advice[1:]
        )
    return finding(
        "comm-overlap",
        exposed,
        observation=(
            f"{name} takes {pct(share)} of the step and only {pct(overlapped)} of its time "
            f"overlaps compute ({_sizes(kind)})."
        ),
        evidence=evidence(
            where(analysis),
            ("collective", kind.kind, "text"),
            ("communication_share", share, "share"),
            ("overlapped_share", overlapped, "share"),
            ("calls_per_step", median(float(p.calls) for p in steps), "count"),
            ("bytes_per_call", kind.bytes_per_call, "bytes"),
            ("busbw_gbps", kind.busbw_gbps, "gbps"),
            ("group_size", kind.group_size, "count"),
            ("waiting_share", waiting, "share"),
        ),
        hypothesis=hypothesis,
        next_check=advice + SAME_RUN,
        caveats=(
            "One rank's trace does not show the other ranks: a collective's time includes "
            "its wait for the last of them, so its bandwidth here is a lower bound.",
        ),
    )


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
