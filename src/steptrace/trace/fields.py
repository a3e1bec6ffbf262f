"""What a trace's events carry, declared once: every ``args`` key that becomes a column.

``FIELDS`` is the one list. Each ``Field`` names its column, the key Kineto writes, how its
value is read (``Value``), which events carry it (their kinds, and for a sparse field a
pattern of their names), what stands where the trace did not say, and its group. Decoding
(``decode``), the columns (``columns``) and the table (``table``) are all driven by it: a
new field is one line here, and ``EventTable.column(name)`` holds it after loading.

Groups are decoded on demand (``load_trace(path, groups=...)``): ``core`` always, the others
when an analysis asks for them, so that a plain ``analyze`` decodes what it reads and no
more. ``instants`` (``[memory]`` and other ``ph: "i"`` events) and ``flows`` (``ph: "s"``
/ ``"f"``: ``ac2g`` launch -> GPU work, ``fwdbwd``) are groups too; their tables are
``InstantTable`` and ``FlowTable``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from typing import Literal

from steptrace.errors import TraceError
from steptrace.trace.kinds import GPU_WORK, LAUNCHES, Kind

MISSING = -1  # integer and text columns: the trace did not say
ABSENT = -(2**63)  # integer fields whose -1 is a value (a 1-byte free, a CPU's Device Id)


class Value(Enum):
    """How a field's value is read, and the column that holds it."""

    # int64 (in the table int32 where a trace's values all fit); ``7``, ``"7"``,
    # ``"stream 7"``, ``"0x0"`` as written; else MISSING
    INT = "int"
    FLOAT = "float"  # float64; NaN where absent or not a number
    TEXT = "text"  # interned text (ids into ``EventTable.texts``); MISSING where absent
    JSON = "json"  # the value's JSON text, interned as TEXT is (shapes, grid, ...)
    FLAG = "flag"  # bool: the key is present and not null

    @property
    def missing(self) -> float | int | bool:
        return {"float": math.nan, "flag": False}.get(self.value, MISSING)


Phase = Literal["X", "i"]  # complete events (the table's rows) or instants


@dataclass(frozen=True)
class Field:
    """One ``args`` key of the trace, as a column."""

    column: str  # the column's name in the table (a Python identifier)
    key: str  # the args key, as Kineto writes it
    value: Value
    group: str
    carriers: tuple[Kind, ...] = ()  # complete events whose args are read (instants: all)
    phase: Phase = "X"
    names: str | None = None  # a regular expression: only carriers so named (a sparse column)
    fallback: Literal["pid", "tid"] | None = None  # where the key is absent
    absent: int | None = None  # what an INT column holds where absent, when not MISSING

    @property
    def missing(self) -> float | int | bool:
        """What the column holds where the trace did not say."""
        return self.value.missing if self.absent is None else self.absent

    @property
    def sparse(self) -> bool:
        """Kept only for the rows that carry it (``Sparse``), not as a column of every row."""
        return self.names is not None

    @cached_property
    def name_pattern(self) -> re.Pattern[str] | None:
        return None if self.names is None else re.compile(self.names, re.IGNORECASE)


_GPU = (*GPU_WORK, Kind.CUDA_SYNC)
_CORRELATED = (*GPU_WORK, *LAUNCHES, Kind.CUDA_SYNC)
_OPS = (Kind.CPU_OP,)
_RECORDED = (Kind.CPU_OP, Kind.USER_ANNOTATION)  # gloo:all_reduce labels record inputs too
_LINKED = (Kind.CPU_OP, Kind.USER_ANNOTATION, Kind.GPU_USER_ANNOTATION, *_CORRELATED)
_COLLECTIVE_NAMES = r"^record_param_comms$|nccl|rccl"


def _collective(column: str, key: str, value: Value) -> Field:
    """record_param_comms operators and NCCL/RCCL kernels (newer Kineto) carry these."""
    return Field(
        column, key, value, "collective", (Kind.CPU_OP, Kind.KERNEL), names=_COLLECTIVE_NAMES
    )


def _launch(column: str, key: str, value: Value) -> Field:
    """Kernels carry these (NVIDIA traces since 2022); sparse: kept for kernel rows only."""
    return Field(column, key, value, "launch", (Kind.KERNEL,), names="")


def _memory(column: str, key: str) -> Field:
    """``[memory]`` instants (``profile_memory``) carry these; -1 is a value there."""
    return Field(column, key, Value.INT, "instants", phase="i", absent=ABSENT)


FIELDS: tuple[Field, ...] = (
    # core: what the figures of steps, operators and GPU work read
    Field("correlation", "correlation", Value.INT, "core", _CORRELATED),
    Field("device", "device", Value.INT, "core", _GPU, fallback="pid"),
    Field("stream", "stream", Value.INT, "core", _GPU, fallback="tid"),
    Field("bytes", "bytes", Value.FLOAT, "core", (Kind.MEMCPY, Kind.MEMSET)),
    Field("records_grad", "Sequence number", Value.FLAG, "core", _OPS),  # autograd recorded it
    Field("input_dims", "Input Dims", Value.JSON, "core", _RECORDED),
    Field("input_types", "Input type", Value.JSON, "core", _RECORDED),
    # inputs: what a model of an operator's cost reads beyond its shapes
    Field("input_strides", "Input Strides", Value.JSON, "inputs", _RECORDED),
    Field("concrete_inputs", "Concrete Inputs", Value.JSON, "inputs", _RECORDED),
    # collective: what was exchanged, in which group, in which order
    _collective("collective", "Collective name", Value.TEXT),
    _collective("process_group", "Process Group Name", Value.TEXT),
    _collective("group_ranks", "Process Group Ranks", Value.TEXT),
    _collective("dtype", "dtype", Value.TEXT),
    _collective("seq", "Seq", Value.INT),
    _collective("in_nelems", "In msg nelems", Value.INT),
    _collective("out_nelems", "Out msg nelems", Value.INT),
    _collective("group_size", "Group size", Value.INT),
    # gpu: how kernels were launched and ran, how fast copies went
    Field("grid", "grid", Value.JSON, "gpu", (Kind.KERNEL, *LAUNCHES)),
    Field("block", "block", Value.JSON, "gpu", (Kind.KERNEL, *LAUNCHES)),
    Field("warps_per_sm", "warps per SM", Value.FLOAT, "gpu", (Kind.KERNEL,)),
    Field("queued", "queued", Value.INT, "gpu", (Kind.KERNEL,)),
    # launch: how each kernel filled the SMs (what the kernels table reads) and the graph
    # that replayed it, kept for the kernels' rows only (sparse: every name, "", of a kernel)
    _launch("registers_per_thread", "registers per thread", Value.INT),
    _launch("shared_memory", "shared memory", Value.INT),
    _launch("blocks_per_sm", "blocks per SM", Value.FLOAT),
    _launch("occupancy_pct", "est. achieved occupancy %", Value.FLOAT),
    _launch("graph_id", "graph id", Value.INT),  # CUDA >= 12: the graph that replayed it
    Field("bandwidth_gbps", "memory bandwidth (GB/s)", Value.FLOAT, "gpu", GPU_WORK),
    # sync: what a synchronization waited for (with enable_cuda_sync_events)
    Field("sync_kind", "cuda_sync_kind", Value.TEXT, "sync", (Kind.CUDA_SYNC,)),
    Field("wait_on_stream", "wait_on_stream", Value.INT, "sync", (Kind.CUDA_SYNC,)),
    Field(
        "wait_on_event_correlation",
        "wait_on_cuda_event_record_corr_id",
        Value.INT,
        "sync",
        (Kind.CUDA_SYNC,),
    ),
    Field("wait_on_event", "wait_on_cuda_event_id", Value.INT, "sync", (Kind.CUDA_SYNC,)),
    # ids: how Kineto links events besides correlation
    Field("external_id", "External id", Value.INT, "ids", _LINKED),
    Field("forward_thread", "Fwd thread id", Value.INT, "ids", _OPS),
    Field("record_function_id", "Record function id", Value.INT, "ids", _RECORDED),
    # python: the Python stack (with_stack)
    Field("python_id", "Python id", Value.INT, "python", (Kind.PYTHON_FUNCTION,)),
    Field("python_parent_id", "Python parent id", Value.INT, "python", (Kind.PYTHON_FUNCTION,)),
    # instants: [memory] events (profile_memory); Bytes < 0 frees
    _memory("addr", "Addr"),
    _memory("bytes", "Bytes"),
    _memory("total_allocated", "Total Allocated"),
    _memory("total_reserved", "Total Reserved"),
    _memory("device_type", "Device Type"),  # 0 CPU, 1 CUDA
    _memory("device_id", "Device Id"),
)
GROUPS: tuple[str, ...] = (*dict.fromkeys(f.group for f in FIELDS), "flows")
ALL_GROUPS = frozenset(GROUPS)


@dataclass(frozen=True)
class Selection:
    """What one loading decodes: the fields of some groups, and the flows or not."""

    fields: tuple[Field, ...]
    flows: bool = False

    @property
    def complete(self) -> tuple[Field, ...]:
        """The fields of complete events: the event table's columns."""
        return tuple(f for f in self.fields if f.phase == "X")

    @property
    def instant(self) -> tuple[Field, ...]:
        """The fields of instants; none: the instants are counted, not kept."""
        return tuple(f for f in self.fields if f.phase == "i")


def select(groups: Iterable[str] = ()) -> Selection:
    """The fields of ``groups`` (``core`` always), in declaration order; a one-line
    ``TraceError`` for a group that does not exist."""
    wanted = {"core", *groups}
    if unknown := sorted(wanted - ALL_GROUPS):
        raise TraceError(f"unknown field group(s) {', '.join(unknown)}: one of {', '.join(GROUPS)}")
    return Selection(tuple(f for f in FIELDS if f.group in wanted), flows="flows" in wanted)
