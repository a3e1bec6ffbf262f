"""Each rule's controlled check: rule id -> how to run it for the user, or why it can't be.

``CHECKS`` holds one entry per rule id (``steptrace.hypotheses.RULES`` and the multi-rank
rules); a test keeps it complete. An entry with ``run`` is automated (``runners``): an A/B
(``compare`` from the same deep-copied state, correctness first) where B is the change the
hypothesis points to, or a measurement. An entry without it says why it cannot be
automated; the finding's own ``next_check`` is then the steps to follow by hand.
"""

from __future__ import annotations

from steptrace.hypotheses.finding import Finding
from steptrace.investigation import compiled, loader_checks
from steptrace.investigation import runners as run
from steptrace.investigation.check import Check
from steptrace.validate.checks.autocast import autocast_check
from steptrace.validate.checks.compiled import compile_check
from steptrace.validate.checks.constants import constant_once_check
from steptrace.validate.checks.fewer_threads import fewer_threads_check
from steptrace.validate.checks.inference_mode import inference_mode_check
from steptrace.validate.checks.optimizer import optimizer_check

COMPILE_S = 30.0  # torch.compile of a small model took 7-13 s on 2 CPU cores: leave room
RECOMPILE_S = 10.0  # Dynamo alone (eager backend) over 16 batches, twice: about 1 s measured

_BY_HAND = "the change depends on code steptrace cannot rewrite for you"
_RANKS = "it needs the job's ranks: run the check across the ranks, as the finding says"

RECOMPILE_REASONS = Check(
    "recompile-reasons",
    "the step over the workload's batches compiled afresh (Dynamo's eager backend): each "
    "recompile's failed guard; and with dynamic=True, outputs compared",
    compiled.recompiled,
    min_s=RECOMPILE_S,
)

# input-pipeline's check by the cause its workers' files show (``rules.input``)
BY_CAUSE: dict[str, Check] = {
    "slow-samples": Check(
        "samples-alone",
        "the slow samples read alone from the dataset, against others of the same batches",
        loader_checks.samples,
        kinds=("training",),
    ),
    "slow-worker": Check(
        "samples-alone",
        "the late worker's samples read alone, against the other workers' samples",
        loader_checks.samples,
        kinds=("training",),
    ),
    "collate": Check(
        "collate-alone",
        "a late batch's collate alone on its prepared samples, against reading them",
        loader_checks.collate,
        kinds=("training",),
    ),
    "transfer": Check(
        "pinned-memory",
        "A: copies from pageable memory; B: pinned memory, non_blocking",
        run.pinned_memory,
        needs_gpu=True,
    ),
    "workers-busy": Check(
        "more-workers",
        "A: the loader as built; B: the same with twice the workers",
        loader_checks.more,
        kinds=("training",),
        min_s=10.0,
    ),
}


def check_for(finding: Finding) -> Check:
    """The finding's check: its rule's, or for input-pipeline the one of the cause its
    workers' files show."""
    cause = finding.evidence.values().get("cause") if finding.rule == "input-pipeline" else None
    return BY_CAUSE.get(str(cause), CHECKS[finding.rule]) if cause else CHECKS[finding.rule]


CHECKS: dict[str, Check] = {
    "input-pipeline": Check(
        "prepared-batch",
        "A: batches from the loader; B: one batch prepared in advance",
        run.prepared_batch,
        kinds=("training",),
    ),
    "repeated-copy": Check(
        "constants-once",
        "A: the step as written; B: tensors built from unchanged Python "
        "data (and their host-to-device copies) made once and reused",
        run.on_batches(constant_once_check),
    ),
    "small-launches": Check(
        "compiled",
        "A: the model as it runs; B: torch.compile(model), compile time apart",
        run.on_batches(compile_check),
        min_s=COMPILE_S,
    ),
    "dominant-op": Check(
        "operator-alone",
        "the operator alone on its recorded shapes, against the step",
        run.operator_alone,
    ),
    "pageable-memcpy": Check(
        "pinned-memory",
        "A: copies from pageable memory; B: pinned memory, non_blocking",
        run.pinned_memory,
        needs_gpu=True,
    ),
    "cpu-bound": Check(
        "compiled",
        "A: the model as it runs; B: torch.compile(model), compile time apart",
        run.on_batches(compile_check),
        min_s=COMPILE_S,
    ),
    "inference-autograd": Check(
        "inference-mode",
        "A: the request as served; B: the same under torch.inference_mode()",
        run.on_batches(inference_mode_check),
        kinds=("inference",),
    ),
    "precision": Check(
        "autocast",
        "A: as it runs; B: under torch.autocast (bf16, else fp16), outputs "
        "differ by design within a stated tolerance",
        run.on_batches(autocast_check),
        needs_gpu=True,
    ),
    "low-efficiency": Check(
        "operator-alone",
        "the operator alone on its recorded shapes: its time per call and the TFLOP/s it "
        "reaches, against the step",
        run.operator_throughput,
    ),
    "fusion": Check(
        "compiled",
        "A: the model as it runs; B: torch.compile(model), compile time apart",
        run.on_batches(compile_check),
        min_s=COMPILE_S,
    ),
    "optimizer-kernels": Check(
        "optimizer-flags",
        "A: the optimizer as built; B: the same with fused=True (else foreach=True)",
        run.on_batches(optimizer_check),
        kinds=("training",),
    ),
    "per-tensor-optimizer": Check(
        "optimizer-flags",
        "A: the optimizer as built; B: the same with fused=True (else foreach=True)",
        run.on_batches(optimizer_check),
        kinds=("training",),
    ),
    "dispatch-bound": Check(
        "compiled",
        "A: the model as it runs; B: torch.compile(model), compile time apart",
        run.on_batches(compile_check),
        min_s=COMPILE_S,
    ),
    "thread-oversubscription": Check(
        "fewer-threads",
        "A: torch's intra-op threads as set; B: as many as the free cores",
        run.on_batches(fewer_threads_check),
        first=True,
    ),
    "unrecorded-time": Check(
        "record-the-silence",
        "the same steps recorded after warm-up with with_stack=True (or py-spy), and timed "
        "outside the profiler",
        manual=(
            "what runs there is none of torch's operators: record it with with_stack=True "
            "or a sampling profiler (py-spy), and time the step outside the profiler"
        ),
    ),
    "recompilation": RECOMPILE_REASONS,
    "recompile-limit": RECOMPILE_REASONS,
    "graph-break": Check(
        "break-sites",
        "torch._dynamo.explain on the model with one batch's inputs: its graphs, and each "
        "break's reason and line",
        compiled.graph_breaks,
        min_s=RECOMPILE_S,
    ),
    "profiler-distortion": Check(
        "profiler-off",
        "A: the step while torch.profiler records; B: the bare step",
        run.profiler,
    ),
    "sync-in-step": Check(
        "sync-moved-out",
        "A: the step; B: the step without its synchronizing call",
        manual=f"which call synchronizes is in your code: {_BY_HAND}",
    ),
    "comm-overlap": Check(
        "bucketing",
        "A: DDP as configured; B: another bucket_cap_mb",
        manual=_RANKS,
    ),
    "gpu-not-observed": Check(
        "capture-again",
        "a capture with GPU activity collected",
        manual="nothing about the GPU can be measured until GPU activity is collected",
    ),
    "memory-growth": Check(
        "memory-growth",
        "more steps of a fresh copy, outside the profiler: the memory allocated after each",
        run.memory_growth,
    ),
    "memory-peak": Check(
        "activation-checkpointing",
        "A: the model as built; B: its largest block under torch.utils.checkpoint; "
        "one step's peak allocated, outputs compared first",
        run.checkpointed,
        kinds=("training",),
    ),
    "memory-reserved": Check(
        "expandable-segments",
        "A: the caching allocator as configured; B: expandable_segments:True",
        manual=(
            "the allocator's configuration is read once, when CUDA starts: run the workload "
            "in two processes, one with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, and "
            "compare torch.cuda.max_memory_reserved() (and the step time)"
        ),
        needs_gpu=True,
    ),
    "memory-churn": Check(
        "compiled",
        "A: the model as it runs; B: torch.compile(model) (fewer temporaries), compile time apart",
        run.on_batches(compile_check),
        min_s=COMPILE_S,
    ),
    "straggler": Check("prepared-batch-on-rank", "the late rank's phase replaced", manual=_RANKS),
    "exposed-communication": Check("bucketing", "DDP bucketing changed", manual=_RANKS),
    "collective-imbalance": Check("even-split", "the split evened out", manual=_RANKS),
    "memory-imbalance": Check(
        "rank-memory",
        "the rank's memory section beside another rank's",
        manual=_RANKS,
    ),
    "clock-skew": Check(
        "clock-sync",
        "the hosts' clocks checked",
        manual="it is about the hosts' clocks, not the step: nothing to time",
    ),
}
