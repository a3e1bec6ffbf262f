"""Synthetic N-rank jobs whose cross-rank answers are known by construction.

Every time is planned in integer nanoseconds of one true clock. In each step every rank
reads its batch, runs forward and backward (compute kernels on stream 7) and issues
``collectives`` all-reduces during backward (``record_param_comms`` with ``Seq`` and a
process group, launching an NCCL kernel on stream 20, in both vocabularies); a collective
ends ``transfer_ns`` after its last rank arrives, so each rank's wait is exactly
``last arrival - own arrival``. Backward ends when the step's last collective has ended on
every rank (the ranks stay in lockstep), then the optimizer step runs.

A rank's clock reads ``true + offset`` (offsets planted per rank), and each kernel is
shifted, start and end together, by a jitter of up to ``jitter_ns`` (a clock read's
noise): durations, hence waits, are exact, while collective ends disagree by the jitter.
Even ranks write torch 2.x's convention (``baseTimeNanoseconds`` + relative ``ts``), odd
ranks the old one (epoch microseconds in ``ts``, no base).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EPOCH_NS = 1_700_000_000_000_000_000  # the true clock's start
BASE_NS = 1_699_999_000_000_000_000  # baseTimeNanoseconds written by even ranks
CPU_PID, CPU_TID, GPU_PID = 100, 100, 0
COMPUTE_STREAM, COMM_STREAM = 7, 20
_TS = re.compile(r'"@ts:(-?\d+)"')


@dataclass(frozen=True)
class Plan:
    ranks: int = 8
    steps: int = 5
    collectives: int = 3  # all-reduces per step
    read_ns: int = 2_000_000
    forward_ns: int = 3_000_000
    backward_ns: int = 4_000_000
    optimizer_ns: int = 1_000_000
    transfer_ns: int = 500_000
    nelems: int = 1_000_000  # floats per all-reduce
    slow_rank: int | None = None
    slow_phase: str = "read_batch"
    delay_ns: int = 0  # planted in slow_phase on slow_rank, every step
    max_offset_ns: int = 0  # clock offsets drawn in [-max, max]
    jitter_ns: int = 5_000
    noise_ns: int = 0  # per rank and step, added to every phase (scheduling noise)
    seed: int = 0
    drop: tuple[int, int] | None = None  # (rank, collective number from 1): left out there
    heavy: tuple[int, int] | None = None  # (rank, factor): its messages that many times larger
    collective: str = "allreduce"  # or "alltoall" (SendRecv kernels): uneven sizes allowed


@dataclass
class Truth:
    offsets_ns: dict[int, int]  # each rank's clock minus rank 0's
    waits_ns: list[dict[int, int]] = field(default_factory=list)  # per collective, by rank
    last_rank: list[int] = field(default_factory=list)  # per collective
    instances: int = 0  # collectives per rank


def job(plan: Plan) -> tuple[list[str], Truth]:
    """The ranks' trace texts (JSON) and the truth."""
    rng = random.Random(plan.seed)
    offsets = {r: rng.randint(-plan.max_offset_ns, plan.max_offset_ns) for r in range(plan.ranks)}
    offsets[0] = offsets[0] if plan.max_offset_ns else 0
    truth = Truth({r: offsets[r] - offsets[0] for r in offsets})
    events: dict[int, list[dict[str, Any]]] = {r: [] for r in range(plan.ranks)}
    ids = {"corr": 1, "seq": 0}
    t = EPOCH_NS + 1_000_000
    for s in range(plan.steps):
        t = _step(plan, rng, s, t, events, offsets, truth, ids)
    truth.instances = plan.steps * plan.collectives
    return [_text(plan, r, events[r]) for r in range(plan.ranks)], truth


def _phase_ns(plan: Plan, rng: random.Random, rank: int, phase: str, planned: int) -> int:
    extra = plan.delay_ns if rank == plan.slow_rank and phase == plan.slow_phase else 0
    return planned + extra + (rng.randint(0, plan.noise_ns) if plan.noise_ns else 0)


def _step(
    plan: Plan,
    rng: random.Random,
    s: int,
    t0: int,
    events: dict[int, list[dict[str, Any]]],
    offsets: dict[int, int],
    truth: Truth,
    ids: dict[str, int],
) -> int:
    """Plan one step on every rank; return when the next one starts."""
    backward_start = {}
    for r in range(plan.ranks):
        read = _phase_ns(plan, rng, r, "read_batch", plan.read_ns)
        forward = _phase_ns(plan, rng, r, "forward", plan.forward_ns)
        backward_start[r] = t0 + read + forward
        ev = events[r]
        ev.append(_cpu(r, offsets, "read_batch", t0, read, "user_annotation"))
        ev.append(_cpu(r, offsets, "forward", t0 + read, forward, "user_annotation"))
        ev.append(
            _kernel(
                r,
                offsets,
                "gemm_forward",
                t0 + read + 100_000,
                forward - 200_000,
                COMPUTE_STREAM,
                0,
            )
        )
    backward = {r: _phase_ns(plan, rng, r, "backward", plan.backward_ns) for r in backward_start}
    last_end = max(backward_start[r] + backward[r] for r in backward_start)
    for c in range(plan.collectives):
        ids["seq"] += 1
        arrive = {
            r: backward_start[r] + (c + 1) * backward[r] // (plan.collectives + 1)
            for r in backward_start
        }
        end = max(arrive.values()) + plan.transfer_ns
        last = max(arrive, key=lambda r: (arrive[r], -r))
        truth.waits_ns.append({r: max(arrive.values()) - a for r, a in arrive.items()})
        truth.last_rank.append(last)
        for r, a in arrive.items():
            jitter = rng.randint(0, plan.jitter_ns)
            if plan.drop != (r, ids["seq"]):
                events[r] += _collective(plan, r, offsets, a, end, jitter, ids, c)
        last_end = max(last_end, end)
    sync = last_end + 10_000
    for r, b in backward_start.items():
        ev = events[r]
        ev.append(_cpu(r, offsets, "backward", b, sync - b, "user_annotation"))
        ev.append(
            _kernel(
                r, offsets, "gemm_backward", b + 100_000, backward[r] - 200_000, COMPUTE_STREAM, 0
            )
        )
        ev.append(_cpu(r, offsets, "optimizer_step", sync, plan.optimizer_ns, "user_annotation"))
    t_next = sync + plan.optimizer_ns + 50_000
    for r in range(plan.ranks):
        events[r].append(
            _cpu(r, offsets, f"ProfilerStep#{s + 1}", t0, t_next - t0 - 1_000, "user_annotation")
        )
    return t_next


def _collective(
    plan: Plan,
    r: int,
    offsets: dict[int, int],
    arrive: int,
    end: int,
    jitter: int,
    ids: dict[str, int],
    c: int,
) -> list[dict[str, Any]]:
    """One rank's record_param_comms, its launch call and its NCCL kernel."""
    ids["corr"] += 1
    corr = ids["corr"]
    issue = arrive - 30_000
    ev = _cpu(r, offsets, "record_param_comms", issue, 25_000, "cpu_op")
    ev["args"] = {
        "Collective name": plan.collective,
        "Process Group Name": "0",
        "Seq": ids["seq"],
        "In msg nelems": plan.nelems * (plan.heavy[1] if plan.heavy and plan.heavy[0] == r else 1),
        "Out msg nelems": plan.nelems,
        "Group size": plan.ranks,
        "dtype": "Float",
        "Process Group Ranks": json.dumps(list(range(plan.ranks))),
    }
    events_of = [ev, _cpu(r, offsets, "cudaLaunchKernel", issue + 5_000, 10_000, "cuda_runtime")]
    events_of[1]["args"] = {"correlation": corr}
    name = (
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
        if c % 2 == 0
        else "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"
    )
    if plan.collective == "alltoall":
        name = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"
    kernel = _kernel(r, offsets, name, arrive + jitter, end - arrive, COMM_STREAM, corr)
    return [*events_of, kernel]


def _cpu(r: int, offsets: dict[int, int], name: str, t: int, dur: int, cat: str) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": CPU_PID,
        "tid": CPU_TID,
        "ts": ("@ts", t + offsets[r]),
        "dur": dur / 1000,
        "args": {},
    }


def _kernel(
    r: int, offsets: dict[int, int], name: str, t: int, dur: int, stream: int, corr: int
) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "kernel",
        "name": name,
        "pid": GPU_PID,
        "tid": stream,
        "ts": ("@ts", t + offsets[r]),
        "dur": dur / 1000,
        "args": {"device": 0, "stream": stream, "correlation": corr},
    }


def _text(plan: Plan, r: int, events: list[dict[str, Any]]) -> str:
    everything = events
    base = BASE_NS if r % 2 == 0 else 0
    for e in everything:
        e["ts"] = f"@ts:{e['ts'][1] - base}"
    document: dict[str, Any] = {
        "schemaVersion": 1,
        "distributedInfo": {"backend": "nccl", "rank": r, "world_size": plan.ranks},
        "deviceProperties": [
            {
                "id": 0,
                "name": "Synthetic GPU",
                "computeMajor": 9,
                "computeMinor": 0,
                "totalGlobalMem": 80 << 30,
            }
        ],
        "traceEvents": everything,
    }
    if base:
        document["baseTimeNanoseconds"] = base
    return _TS.sub(lambda m: _us(int(m.group(1))), json.dumps(document))


def _us(ns: int) -> str:
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


def write_job(plan: Plan, folder: Path) -> tuple[list[Path], Truth]:
    texts, truth = job(plan)
    paths = []
    for r, text in enumerate(texts):
        path = folder / f"job_rank{r}.json"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths, truth
