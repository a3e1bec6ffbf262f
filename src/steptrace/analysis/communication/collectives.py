"""Collective instances of one rank's trace, in every vocabulary Kineto has written.

Contract: ``collective_instances(events, tree, links) -> tuple[Instance, ...]``, sorted by
the time the rank issued them. One instance per collective call, read from (first match):

* a ``record_param_comms`` CPU operator with ``Collective name`` (newer Kineto; ``wait``
  and ``coalesced`` markers are not collectives): kind, process group, ``Seq``, sizes;
* else a ``c10d::*`` operator (``c10d::allreduce_``) with no such operator inside it;
* a ``gloo:*`` event (a label on a gloo thread: the collective as it ran, waiting
  included; torch 2.13 CPU writes no ``Seq`` and no process group). When a trace has them,
  CPU collectives that launched no kernel are not counted again from their operators;
* an NCCL/RCCL kernel (``ncclKernel_*``, ``ncclDevKernel_*``, case-insensitive) that no
  operator above launched (a sampled trace, a kernel whose launch was not recorded).

An instance's time is that of its communication kernels (launched inside its operator,
found through ``correlation``: ``steptrace.analysis.time.links``), of its gloo event, or, with
neither, of its operator; ``blocking`` is False for an operator of a GPU collective whose
kernel is missing: its CPU time is only the enqueue, and says nothing of waiting. Times
are absolute integer nanoseconds of the rank's own clock (``clock_ns``: base + origin).
"""

from __future__ import annotations

import functools
import re
from typing import Literal, cast

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.communication.call_args import (
    CommArgs,
    first_of_each,
    group_ranks,
    message_bytes,
    nanoseconds,
    nanoseconds_at,
    shape_bytes,
)
from steptrace.analysis.time.links import CpuTree, GpuLinks
from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable

NCCL_KERNEL = re.compile(r"^(?:nccl|rccl)(?:Dev)?Kernel_?([A-Za-z]+)", re.IGNORECASE)
COMM_KERNEL = re.compile(r"nccl|rccl", re.IGNORECASE)
_GLOO = re.compile(r"^gloo:(\w+)")
_C10D = re.compile(r"^c10d::(\w+?)_?$")
_NOT_COLLECTIVES = frozenset({"wait", "coalesced", "startcoalescing", "endcoalescing"})
_KINDS = {
    "allreduce": "all_reduce",
    "allgather": "all_gather",
    "allgatherintotensor": "all_gather",
    "reducescatter": "reduce_scatter",
    "reducescattertensor": "reduce_scatter",
    "alltoall": "all_to_all",
    "alltoallv": "all_to_all",
    "broadcast": "broadcast",
    "sendrecv": "send_recv",
    "send": "send_recv",
    "recv": "send_recv",
    "barrier": "barrier",
    "reduce": "reduce",
    "gather": "gather",
    "scatter": "scatter",
}
DEFAULT_GROUP = "default"
CollectiveSource = Literal["record_param_comms", "c10d", "gloo", "nccl_kernel"]
# busbw = algbw x factor x (n-1)/n (nccl-tests); the other kinds carry the message once
BUS_FACTOR = {"all_reduce": 2.0, "all_gather": 1.0, "reduce_scatter": 1.0, "all_to_all": 1.0}


class Instance(msgspec.Struct, frozen=True, kw_only=True):
    """One collective call on one rank, on that rank's own clock."""

    kind: str  # all_reduce, all_gather, ... (``kind_of``)
    process_group: str  # DEFAULT_GROUP when the trace does not name it
    seq: int | None  # the process group's sequence number, when recorded
    lane: str  # what orders instances without Seq: the group, or gloo, or a stream
    source: CollectiveSource
    issued_ns: int  # when the rank issued it (CPU start; the kernel's start without one)
    start_ns: int  # the collective's own start (kernel, gloo event or operator)
    end_ns: int
    blocking: bool  # its time includes the waiting (kernel, gloo event, a CPU collective)
    nbytes: int | None  # message size (In msg nelems x dtype size; input shape); None: unknown
    group_size: int | None
    group_ranks: tuple[int, ...] | None  # the group's global ranks, when recorded


@functools.lru_cache(maxsize=1024)
def kind_of(name: str) -> str:
    """``allreduce``, ``_allgather_base``, ``AllReduce``, ``all_to_all`` -> a common name."""
    cleaned = name.lower().lstrip("_")
    for suffix in ("_base", "_coalesced", "_into_tensor", "_tensor", "_single"):
        cleaned = cleaned.removesuffix(suffix)
    key = cleaned.replace("_", "")
    return _KINDS.get(key, cleaned or "unknown")


def collective_instances(
    events: EventTable, tree: CpuTree, links: GpuLinks, clock_ns: int
) -> tuple[Instance, ...]:
    """Every collective call of the trace (see the module's contract)."""
    comm_kernels = _comm_kernels(events, links)
    rpc = _param_comms(events)
    c10d = _c10d_ops(events, tree, set(rpc))
    cpu_rows = np.array(sorted([*rpc, *c10d]), dtype=np.int64)
    kernels_of, claimed = _kernels_inside(events, links, comm_kernels, cpu_rows)
    gloo = gloo_rows(events)
    gpu_trace = bool(links.rows.size)
    if gloo.size:  # calls that launched no kernel: their gloo event is counted instead
        cpu_rows = cpu_rows[np.isin(cpu_rows, list(kernels_of))]
    found = _cpu_instances(events, cpu_rows, rpc, kernels_of, clock_ns, gpu_trace)
    for row in gloo.tolist():
        found.append(_gloo_instance(events, row, clock_ns))
    for row in comm_kernels[~np.isin(comm_kernels, claimed)].tolist():
        found.append(_kernel_instance(events, row, clock_ns))
    return tuple(sorted(found, key=lambda i: (i.issued_ns, i.start_ns)))


def _comm_kernels(events: EventTable, links: GpuLinks) -> NDArray[np.int64]:
    names = np.array([bool(COMM_KERNEL.search(n)) for n in events.names], dtype=bool)
    rows = links.rows
    keep = (events.kind[rows] == Kind.KERNEL) & names[events.name_id[rows]]
    out: NDArray[np.int64] = rows[keep]
    return out


def _param_comms(events: EventTable) -> dict[int, int]:
    """record_param_comms rows with a collective name -> their index in ``CommArgs``."""
    comm = CommArgs(events)
    ids = events.sparse_column("collective").values
    named = {  # one test per distinct name, not per row
        i: bool(name) and name.lower().replace("_", "") not in _NOT_COLLECTIVES
        for i in np.unique(ids).tolist()
        if (name := events.text(i)) is not None
    }
    kept = np.array([named.get(i, False) for i in ids.tolist()], dtype=bool)
    kept &= events.kind[comm.rows] == Kind.CPU_OP
    return dict(zip(comm.rows[kept].tolist(), np.flatnonzero(kept).tolist(), strict=True))


def _c10d_ops(events: EventTable, tree: CpuTree, rpc: set[int]) -> list[int]:
    """c10d operators with no record_param_comms collective inside them."""
    named = np.array([bool(_C10D.match(name)) for name in events.names], dtype=bool)
    found = np.flatnonzero(named[events.name_id[tree.ops]])  # one match per name, not per row
    if not found.size:
        return []
    c10d = dict(zip(found.tolist(), tree.ops[found].tolist(), strict=True))
    index = np.full(len(events), -1, dtype=np.int64)  # event row -> its place in tree.ops
    index[tree.ops] = np.arange(tree.ops.size)
    covered: set[int] = set()
    for row in rpc:
        parent = int(tree.op_parent[index[row]]) if index[row] >= 0 else -1
        while parent >= 0:
            covered.add(parent)
            parent = int(tree.op_parent[parent])
    inner = set()  # a c10d op inside another c10d op is the same call (a wrapper)
    for i in c10d:
        parent = int(tree.op_parent[i])
        while parent >= 0:
            if parent in c10d:
                inner.add(i)
                break
            parent = int(tree.op_parent[parent])
    return [r for i, r in c10d.items() if i not in covered and i not in inner]


def gloo_rows(events: EventTable) -> NDArray[np.int64]:
    """The rows of ``gloo:*`` labels: gloo's collectives as they ran, waiting included."""
    return _rows_named(events, _GLOO, Kind.USER_ANNOTATION)


def _rows_named(events: EventTable, pattern: re.Pattern[str], kind: Kind) -> NDArray[np.int64]:
    ids = np.array([i for i, n in enumerate(events.names) if pattern.match(n)], dtype=np.int32)
    rows: NDArray[np.int64] = np.flatnonzero((events.kind == kind) & np.isin(events.name_id, ids))
    return rows


def _kernels_inside(
    events: EventTable, links: GpuLinks, kernels: NDArray[np.int64], cpu_rows: NDArray[np.int64]
) -> tuple[dict[int, list[int]], NDArray[np.int64]]:
    """Communication kernels whose launch call started inside a CPU instance's operator."""
    owned: dict[int, list[int]] = {}
    if not kernels.size or not cpu_rows.size:
        return owned, np.zeros(0, dtype=np.int64)
    at = np.searchsorted(links.rows, kernels)
    launch = links.launch[at]
    linked = launch >= 0
    kernels, launch = kernels[linked], launch[linked]
    claimed = []
    for thread in np.unique(events.thread_id[cpu_rows]).tolist():
        ops = cpu_rows[events.thread_id[cpu_rows] == thread]
        mine = events.thread_id[launch] == thread
        t = events.start_us[launch[mine]]
        k = np.searchsorted(events.start_us[ops], t, side="right") - 1
        inside = (k >= 0) & (t <= events.end_us[ops[np.maximum(k, 0)]])
        for kernel, op in zip(kernels[mine][inside].tolist(), ops[k[inside]].tolist(), strict=True):
            owned.setdefault(op, []).append(kernel)
            claimed.append(kernel)
    return owned, np.array(claimed, dtype=np.int64)


def _cpu_instances(
    events: EventTable,
    rows: NDArray[np.int64],
    rpc: dict[int, int],
    kernels_of: dict[int, list[int]],
    clock_ns: int,
    gpu: bool,
) -> list[Instance]:
    """One instance per CPU call (a ``record_param_comms`` row in ``rpc``, else a c10d
    operator), each field read for every call at once."""
    listed = rows.tolist()
    issued = nanoseconds_at(events.start_us[rows], clock_ns)
    start, end = list(issued), nanoseconds_at(events.end_us[rows], clock_ns)
    lane = ["cpu"] * len(listed)
    launched = [k for k, row in enumerate(listed) if kernels_of.get(row)]
    if launched:  # the call's time is its kernels': the first start, the last end
        groups = [kernels_of[listed[k]] for k in launched]
        kernels, first = np.array([r for g in groups for r in g]), first_of_each(groups)
        starts = nanoseconds_at(np.minimum.reduceat(events.start_us[kernels], first), clock_ns)
        ends = nanoseconds_at(np.maximum.reduceat(events.end_us[kernels], first), clock_ns)
        streams = events.stream[kernels[first]].tolist()
        for k, s, e, stream in zip(launched, starts, ends, streams, strict=True):
            start[k], end[k], lane[k] = s, e, f"stream {stream}"
    args = _call_args(events, listed, rpc)
    return [
        Instance(
            kind=kind,
            process_group=group,
            seq=seq,
            lane=lane[k],
            source="record_param_comms" if listed[k] in rpc else "c10d",
            issued_ns=issued[k],
            start_ns=start[k],
            end_ns=end[k],
            blocking=lane[k] != "cpu" or not gpu,
            nbytes=nbytes,
            group_size=size,
            group_ranks=ranks,
        )
        for k, (kind, group, seq, nbytes, size, ranks) in enumerate(args)
    ]


_CallArgs = tuple[str, str, int | None, int | None, int | None, tuple[int, ...] | None]


def _call_args(events: EventTable, rows: list[int], rpc: dict[int, int]) -> list[_CallArgs]:
    """Per call: its kind, process group, seq, message bytes, group size and ranks (what
    ``record_param_comms`` recorded; a c10d operator's name and input shape else)."""
    found: list[_CallArgs | None] = [None] * len(rows)
    recorded = [k for k, row in enumerate(rows) if row in rpc]
    if recorded:
        comm = CommArgs(events)
        ks = np.array([rpc[rows[k]] for k in recorded], dtype=np.intp)
        columns = zip(
            comm.texts("collective", ks),
            comm.texts("process_group", ks),
            comm.numbers("seq", ks),
            comm.numbers("in_nelems", ks),
            comm.texts("dtype", ks),
            comm.numbers("group_size", ks),
            comm.texts("group_ranks", ks),
            strict=True,
        )
        for k, (name, group, seq, count, dtype, size, ranks) in zip(recorded, columns, strict=True):
            found[k] = (
                kind_of(name or "unknown"),
                group or DEFAULT_GROUP,
                seq if seq >= 0 else None,
                message_bytes(count, dtype),
                size if size > 0 else None,
                group_ranks(ranks),
            )
    kinds: dict[int, str] = {}  # per name id
    sizes: dict[tuple[int, int], int | None] = {}  # per input dims and types ids
    for k, row in enumerate(rows):
        if found[k] is None:
            name = int(events.name_id[row])
            if name not in kinds:
                match = _C10D.match(events.names[name])
                kinds[name] = kind_of(match.group(1) if match else "unknown")
            shape = (int(events.input_dims[row]), int(events.input_types[row]))
            if shape not in sizes:
                sizes[shape] = shape_bytes(events, row)
            found[k] = (kinds[name], DEFAULT_GROUP, None, sizes[shape], None, None)
    return cast(list[_CallArgs], found)


def _gloo_instance(events: EventTable, row: int, clock_ns: int) -> Instance:
    match = _GLOO.match(events.name_of(row))
    start = nanoseconds(float(events.start_us[row]), clock_ns)
    return Instance(
        kind=kind_of(match.group(1) if match else "unknown"),
        process_group=DEFAULT_GROUP,
        seq=None,
        lane="gloo",
        source="gloo",
        issued_ns=start,
        start_ns=start,
        end_ns=nanoseconds(float(events.end_us[row]), clock_ns),
        blocking=True,
        nbytes=shape_bytes(events, row),
        group_size=None,
        group_ranks=None,
    )


def _kernel_instance(events: EventTable, row: int, clock_ns: int) -> Instance:
    comm = CommArgs(events)
    k = comm.at(row)
    match = NCCL_KERNEL.match(events.name_of(row))
    start = nanoseconds(float(events.start_us[row]), clock_ns)
    instance = Instance(
        kind=kind_of((match.group(1) if match else "") or "unknown"),
        process_group=DEFAULT_GROUP,
        seq=None,
        lane=f"stream {int(events.stream[row])}",
        source="nccl_kernel",
        issued_ns=start,
        start_ns=start,
        end_ns=nanoseconds(float(events.end_us[row]), clock_ns),
        blocking=True,
        nbytes=None,
        group_size=None,
        group_ranks=None,
    )
    if k is None:
        return instance
    seq, size = comm.number("seq", k), comm.number("group_size", k)
    return msgspec.structs.replace(
        instance,
        kind=kind_of(comm.text("collective", k) or (match.group(1) if match else "") or "unknown"),
        process_group=comm.text("process_group", k) or DEFAULT_GROUP,
        seq=seq if seq >= 0 else None,
        nbytes=message_bytes(comm.number("in_nelems", k), comm.text("dtype", k)),
        group_size=size if size > 0 else None,
        group_ranks=group_ranks(comm.text("group_ranks", k)),
    )
