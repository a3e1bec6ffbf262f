"""Every threshold the rules use, named, with the reason for its value. Override any:

steptrace.analyze("trace.json", thresholds=Thresholds(input_share=0.2))
steptrace analyze trace.json --threshold input_share=0.2
"""

from __future__ import annotations

from typing import Any

import msgspec

from steptrace.assignments import assigned


class Thresholds(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    # input-pipeline: reading the batch takes at least this share of the step. TensorBoard's
    # plugin flagged 5%; twice that leaves room for a prefetching loader's normal hand-off.
    input_share: float = 0.10
    # ... and, when the GPU is observed, it sits idle for at least this share of that time.
    input_gpu_idle: float = 0.5
    # repeated-copy: a copy must recur in every step, in at least this many steps.
    repeated_copy_steps: int = 2
    # small-launches: at least this many kernels in a step (TensorBoard's removed rule; a
    # few kernels cost a few µs each to launch: they cannot explain a long wait) ...
    small_kernel_count: int = 100
    # ... with at least this share shorter than the runtime call that launched them,
    small_kernel_share: float = 0.5
    # ... or the GPU idle waiting on the host for these short kernels' launches at least
    # this share of the step.
    host_wait_share: float = 0.10
    # dominant-op: one operator holds at least this share of GPU time (or CPU self time).
    dominant_share: float = 0.30
    # ... and that time is at least this share of the steps' wall time (else it is noise).
    dominant_step_share: float = 0.05
    # pageable-memcpy: host-to-device copies from pageable memory, at least this many bytes
    # per step (small ones cost little) ...
    pageable_bytes: int = 1_000_000
    # sync-in-step: GPU idle after blocking calls for at least this share of the step.
    sync_idle_share: float = 0.05
    # cpu-bound: GPU busy under this share (TensorBoard's 50%) while the CPU is in
    # operators for at least the second share of the step, or the GPU waits on the host's
    # recorded work (operators, Python, launches; not silence) for at least the third.
    cpu_bound_gpu_busy: float = 0.5
    cpu_bound_cpu_busy: float = 0.8
    cpu_bound_host_share: float = 0.2
    # precision: fp32 matrix kernels take at least this share of kernel time, on a GPU with
    # tensor cores (compute capability 7.0 and later) and no tensor-core kernel in sight.
    precision_share: float = 0.20
    # low-efficiency: matrix work (GEMM, convolution, attention) under this % of its
    # roofline: well-tuned GEMMs reach 60-80% of datasheet peaks, so under 30% most of the
    # hardware sits idle ...
    low_efficiency_pct: float = 30.0
    # ... and those operators take at least this share of the steps' wall time.
    low_efficiency_share: float = 0.05
    # fusion: the GPU is busy at least this share of the step (bound by the GPU, not the
    # host) ...
    fusion_gpu_busy: float = 0.7
    # ... and elementwise and reduction kernels take at least this share of its busy time
    # (the largest part: GEMM-heavy steps stay under it).
    fusion_share: float = 0.4
    # comm-overlap: communication takes at least this share of the step (TensorBoard's
    # 10%) and less than the second share of it overlaps compute.
    comm_share: float = 0.10
    comm_overlap: float = 0.5
    # optimizer-kernels: the optimizer step launches at least this many GPU activities
    # (a foreach or fused optimizer launches a handful per parameter group).
    optimizer_launches: int = 50
    # per-tensor-optimizer (CPU): the optimizer step runs at least this many operators (a
    # few per parameter and moment; a multi-tensor one runs a handful per group) ...
    optimizer_cpu_operators: int = 100
    # ... and takes at least this share of the step (medium: less is little to gain).
    optimizer_cpu_share: float = 0.05
    # dispatch-bound (CPU): at least short_operator_count operators called from Python per
    # step, and at least this share of it outside the leaf operators longer than 20 µs
    # (analysis.time.cpu.SHORT_OPERATOR_US): the work is then the smaller part of the step.
    dispatch_share: float = 0.5
    # unrecorded-time: the trace records no work (no operator, Python function, runtime
    # call, GPU work) for at least this share of the step. Eager Python between operators
    # leaves 20-40% of a CPU step unrecorded on the shared traces; half the step is more
    # than the trace can explain.
    unrecorded_share: float = 0.5
    # ... on a GPU trace, where the GPU runs nothing in that time either: this share
    unrecorded_gpu_share: float = 0.2
    # thread-oversubscription: torch's intra-op threads exceed this many per free core.
    threads_per_free_core: float = 1.0
    # profiler-distortion, not measured: CPU operators of this many µs or less (median), at
    # least the second number of them per step, suggest it (the profiler's per-operator
    # cost, a few µs, is then a large part of what is measured); measured, a
    # profiled/unprofiled ratio this high (the measure decides when there is one).
    short_operator_us: float = 10.0
    short_operator_count: int = 200
    overhead_ratio: float = 1.2
    # memory rules: a device whose peak allocated stays under this is left out (the few
    # bytes a GPU trace allocates on the CPU are no memory problem).
    memory_floor_bytes: int = 2**20
    # memory-growth: the allocated bytes grow in every complete step (two at least) by at
    # least this many bytes and this share of the device's peak (less is allocator noise).
    memory_growth_bytes: int = 65_536
    memory_growth_share: float = 0.001
    # memory-peak: in a training step, allocations of the step still alive at its peak
    # hold at least this share of it (activations, most often).
    memory_peak_share: float = 0.5
    # memory-reserved: a GPU reserves at least this many times its peak allocated, and at
    # least the second number of bytes more than it.
    memory_reserved_ratio: float = 1.5
    memory_reserved_bytes: int = 256 * 2**20
    # memory-churn: a step allocates at least this many times its peak (median over steps).
    memory_churn_ratio: float = 4.0
    # the verdict (hypotheses.verdict): the GPU computing this share of the step bounds it;
    # else the part that holds at least the second share of the time the GPU is not
    # computing (input, host, communication) does, and none that large: mixed.
    bound_gpu_busy: float = 0.8
    bound_share: float = 0.6
    # step variation (a warning, not a finding): the slowest complete step takes more than
    # this many times the fastest. Half again is more than timer noise and warm-up jitter
    # on a quiet machine; a real run showed 3x: then a median of a few steps describes none.
    step_spread: float = 1.5

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = msgspec.to_builtins(self)
        return data

    def replace(self, assignments: list[str]) -> Thresholds:
        """``["input_share=0.2", ...]`` -> a copy with those values (validated)."""
        return assigned(self, assignments)
