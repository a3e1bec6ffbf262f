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
import json
import re
from typing import Literal

import msgspec
import numpy as np
from numpy.typing import NDArray

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
_DTYPE_BYTES = {
    "float": 4,
    "float32": 4,
    "double": 8,
    "float64": 8,
    "half": 2,
    "float16": 2,
    "bfloat16": 2,
    "long": 8,
    "int64": 8,
    "int": 4,
    "int32": 4,
    "short": 2,
    "int16": 2,
    "byte": 1,
    "uint8": 1,
    "char": 1,
    "int8": 1,
    "signed char": 1,
    "unsigned char": 1,
    "bool": 1,
    "c10::half": 2,
    "c10::bfloat16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
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
    found: list[Instance] = []
    for row in cpu_rows.tolist():
        kernels = kernels_of.get(row, [])
        if not kernels and gloo.size:
            continue  # the gloo event of this call is counted instead
        found.append(_cpu_instance(events, row, rpc.get(row), kernels, clock_ns, gpu_trace))
    for row in gloo.tolist():
        found.append(_gloo_instance(events, row, clock_ns))
    for row in comm_kernels[~np.isin(comm_kernels, claimed)].tolist():
        found.append(_kernel_instance(events, row, clock_ns))
    return tuple(sorted(found, key=lambda i: (i.issued_ns, i.start_ns)))


def _ns(us: float, clock_ns: int) -> int:
    return clock_ns + round(us * 1000)  # exact: start_us holds integer ns of the origin


def _comm_kernels(events: EventTable, links: GpuLinks) -> NDArray[np.int64]:
    names = np.array([bool(COMM_KERNEL.search(n)) for n in events.names], dtype=bool)
    rows = links.rows
    keep = (events.kind[rows] == Kind.KERNEL) & names[events.name_id[rows]]
    out: NDArray[np.int64] = rows[keep]
    return out


class CommArgs:
    """The collective args of the rows that carry them (the ``collective`` field group):
    ``at(row)`` is a row's index among them, the getters read the field there."""

    def __init__(self, events: EventTable) -> None:
        self.events = events
        self.rows = events.sparse_column("collective").rows

    def at(self, row: int) -> int | None:
        k = int(np.searchsorted(self.rows, row))
        return k if k < self.rows.size and int(self.rows[k]) == row else None

    def text(self, field: str, k: int) -> str | None:
        return self.events.text(int(self.events.sparse_column(field).values[k]))

    def number(self, field: str, k: int) -> int:
        return int(self.events.sparse_column(field).values[k])


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


def _cpu_instance(
    events: EventTable, row: int, k: int | None, kernels: list[int], clock_ns: int, gpu: bool
) -> Instance:
    comm = CommArgs(events)
    if k is not None:
        kind = kind_of(comm.text("collective", k) or "unknown")
        group = comm.text("process_group", k) or DEFAULT_GROUP
        seq_k, size_k = comm.number("seq", k), comm.number("group_size", k)
        seq = seq_k if seq_k >= 0 else None
        nbytes = _bytes(comm.number("in_nelems", k), comm.text("dtype", k))
        size = size_k if size_k > 0 else None
        ranks = _ranks(comm.text("group_ranks", k))
    else:
        match = _C10D.match(events.name_of(row))
        kind = kind_of(match.group(1) if match else "unknown")
        group, seq, nbytes, size, ranks = DEFAULT_GROUP, None, _shape_bytes(events, row), None, None
    issued = _ns(float(events.start_us[row]), clock_ns)
    if kernels:
        rows = np.array(kernels)
        start = _ns(float(events.start_us[rows].min()), clock_ns)
        end = _ns(float(events.end_us[rows].max()), clock_ns)
        lane = f"stream {int(events.stream[rows[0]])}"
    else:
        start, end = issued, _ns(float(events.end_us[row]), clock_ns)
        lane = "cpu"
    return Instance(
        kind=kind,
        process_group=group,
        seq=seq,
        lane=lane,
        source="record_param_comms" if k is not None else "c10d",
        issued_ns=issued,
        start_ns=start,
        end_ns=end,
        blocking=bool(kernels) or not gpu,
        nbytes=nbytes,
        group_size=size,
        group_ranks=ranks,
    )


def _gloo_instance(events: EventTable, row: int, clock_ns: int) -> Instance:
    match = _GLOO.match(events.name_of(row))
    start = _ns(float(events.start_us[row]), clock_ns)
    return Instance(
        kind=kind_of(match.group(1) if match else "unknown"),
        process_group=DEFAULT_GROUP,
        seq=None,
        lane="gloo",
        source="gloo",
        issued_ns=start,
        start_ns=start,
        end_ns=_ns(float(events.end_us[row]), clock_ns),
        blocking=True,
        nbytes=_shape_bytes(events, row),
        group_size=None,
        group_ranks=None,
    )


def _kernel_instance(events: EventTable, row: int, clock_ns: int) -> Instance:
    comm = CommArgs(events)
    k = comm.at(row)
    match = NCCL_KERNEL.match(events.name_of(row))
    start = _ns(float(events.start_us[row]), clock_ns)
    instance = Instance(
        kind=kind_of((match.group(1) if match else "") or "unknown"),
        process_group=DEFAULT_GROUP,
        seq=None,
        lane=f"stream {int(events.stream[row])}",
        source="nccl_kernel",
        issued_ns=start,
        start_ns=start,
        end_ns=_ns(float(events.end_us[row]), clock_ns),
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
        nbytes=_bytes(comm.number("in_nelems", k), comm.text("dtype", k)),
        group_size=size if size > 0 else None,
        group_ranks=_ranks(comm.text("group_ranks", k)),
    )


def _bytes(nelems: int, dtype: str | None) -> int | None:
    size = _DTYPE_BYTES.get((dtype or "").lower())
    return nelems * size if size is not None and nelems >= 0 else None


def _shape_bytes(events: EventTable, row: int) -> int | None:
    """The first input tensor's size from the recorded shapes, when shapes were recorded."""
    dims_text = events.text(int(events.input_dims[row]))
    if dims_text is None:
        return None
    try:
        dims = json.loads(dims_text)
        types = json.loads(events.text(int(events.input_types[row])) or "[]")
    except ValueError:
        return None
    while dims and isinstance(dims[0], list) and dims[0] and isinstance(dims[0][0], list):
        dims = dims[0]  # a TensorList: its first tensor
    if not dims or not isinstance(dims[0], list) or not dims[0] or not types:
        return None
    count = 1
    for d in dims[0]:
        count *= int(d)
    return _bytes(count, str(types[0]))


@functools.lru_cache(maxsize=256)
def _ranks(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    try:
        ranks = json.loads(text)
    except ValueError:
        return None
    if not isinstance(ranks, list) or not ranks or not all(isinstance(r, int) for r in ranks):
        return None
    return tuple(ranks)
