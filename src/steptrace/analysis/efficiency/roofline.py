"""The roofline per operator: FLOPs and bytes from the recorded shapes, the time the calls
took, and how close that is to the device's roofs.

Contract: ``roofline(context) -> Roofline``: one ``RooflineRow`` per (operator, input
shapes, input types, concrete inputs) among the rows ``roofline_calls`` chooses, by time
(largest first), and the peaks used. Nothing without recorded shapes: no row, and the
cost models are not even imported.

- ``flops_per_call``, ``bytes_per_call``: ``op_models``; None: no model (never a guess);
  a convolution whose call does not say its output reads it from the trace's backward
  calls on the same input and weight (``conv_models.ConvShapes``); one gradient of a
  convolution, from the backward call around it, whose inputs are then part of its row's
  key (two convolutions sharing a gradient's shapes are two rows). A
  copy to or from the host is a ``host transfer``: the bytes its copies carried, no
  FLOPs, and no roof (the host's link bounds it, not the device's memory).
- ``gpu_ms``: the union of the GPU work the calls launched (their children's included;
  copies and sets too); on a GPU trace, a row that launched none is left out (it ran on
  the CPU). ``cpu_ms``: the calls' summed CPU duration. The achieved figures divide by
  ``gpu_ms``, or by ``cpu_ms`` where the GPU was not observed (a CPU trace).
- ``achieved_tflops`` = calls·FLOPs / time, ``achieved_tbps`` = calls·bytes / time,
  ``intensity`` = FLOPs / bytes.
- ``peak_tflops``: the device's peak for the row's precision, on the matrix units for
  matrix work (fp32 matrix work on tensor cores, told by its kernels' names, is TF32);
  ``peak_tbps``: its memory bandwidth (``hardware``). ``bound``: the lower roof at this
  intensity; ``roofline_pct`` = 100·achieved / min(peak, intensity·bandwidth), that is
  the time the roofs allow over the time taken (TraceLens's roofline time), which also
  holds for work of no FLOPs (copies: the memory roof alone).
- ``coverage`` (a GPU trace): the share of the rows' GPU time that is on the roofline
  (modelled, with a bound), by bound, and the largest operators without a model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import msgspec
import numpy as np
from numpy.typing import NDArray

from steptrace.analysis.context import FigureSpec, TraceContext
from steptrace.analysis.efficiency.hardware import DevicePeaks, peaks_for
from steptrace.analysis.efficiency.kernel_kinds import TF32
from steptrace.analysis.time.gpu import copy_kind
from steptrace.analysis.time.operators import compact_json
from steptrace.trace import intervals as iv
from steptrace.trace.kinds import Kind
from steptrace.trace.table import EventTable

if TYPE_CHECKING:
    from steptrace.analysis.efficiency.conv_models import ConvShapes
    from steptrace.analysis.efficiency.op_inputs import Call, Cost
    from steptrace.analysis.efficiency.roofline_calls import RowCalls
    from steptrace.analysis.time.links import CpuTree

Bound = Literal["compute", "memory"]
Rows = NDArray[np.int64]


class RooflineRow(msgspec.Struct, frozen=True):
    """One operator on one set of recorded inputs, all its calls together."""

    operator: str
    input_shapes: str | None  # as recorded (Input Dims)
    input_types: str | None
    concrete_inputs: str | None  # scalars as recorded (is_causal, dim, ...)
    calls: int
    model: str | None  # GEMM, convolution, attention, elementwise, ...; None: no model
    precision: str | None  # whose peak holds it: bfloat16, tfloat32, float32, ...
    flops_per_call: int | None
    bytes_per_call: int | None
    gpu_ms: float | None  # None: GPU not observed
    cpu_ms: float
    achieved_tflops: float | None
    achieved_tbps: float | None
    intensity: float | None  # FLOP per byte
    peak_tflops: float | None
    peak_tbps: float | None
    bound: Bound | None
    roofline_pct: float | None


class RooflineCoverage(msgspec.Struct, frozen=True):
    """How much of the GPU time of the operators (every row's) the roofline places: a
    compute- or memory-bound claim needs a majority of it."""

    operators_ms: float  # the GPU time of every row: the operators that launched work
    modelled_ms: float  # of the rows with a cost model (bound or not: peaks may be unknown)
    compute_ms: float  # of the rows bound by compute
    memory_ms: float  # of the rows bound by memory
    share: float  # (compute_ms + memory_ms) / operators_ms: on the roofline
    unmodelled: tuple[str, ...]  # the operators without a model, most GPU time first (3)
    unmodelled_count: int  # how many operators have no model


class Roofline(msgspec.Struct, frozen=True):
    rows: tuple[RooflineRow, ...]
    peaks: DevicePeaks | None  # the roofs used; None: not known
    coverage: RooflineCoverage | None = None  # None: no rows, or the GPU not observed


def roofline(context: TraceContext) -> Roofline:
    """The roofline rows of a trace (see module)."""
    events, on_gpu = context.events, context.gpu_busy is not None
    table = peaks_for(context.trace.info.devices) if on_gpu else None
    peaks = context.peaks.over(table) if context.peaks else table
    ops = context.tree.ops
    if ops.size == 0 or not (events.input_dims[ops] >= 0).any():
        return Roofline((), peaks)
    from steptrace.analysis.efficiency.roofline_calls import (
        row_calls,  # only for traces with shapes
    )

    chosen = row_calls(events, context.tree, context.links if on_gpu else None)
    if chosen.calls.size == 0:
        return Roofline((), peaks)
    around = _whole_backward_around(events, context.tree, chosen.calls)
    group = _group_ids(events, ops[chosen.calls], around)
    count = int(group.max()) + 1
    held = zip(_split(group, count), _split(group[chosen.work_call], count), strict=True)
    seen = _conv_shapes(events, ops)
    rows = [
        row
        for members, work in held
        if (
            row := _row(
                events,
                chosen,
                ops,
                members,
                chosen.work[work],
                peaks,
                on_gpu,
                _seen_by(events, int(around[members[0]]), seen),
            )
        )
    ]
    rows.sort(key=lambda r: -(r.gpu_ms if r.gpu_ms is not None else r.cpu_ms))
    return Roofline(tuple(rows), peaks, coverage_of(rows) if on_gpu else None)


def coverage_of(rows: list[RooflineRow]) -> RooflineCoverage | None:
    """The rows' GPU time on the roofline, by bound (rows of a GPU trace)."""
    total = sum(r.gpu_ms or 0.0 for r in rows)
    if total <= 0:
        return None
    by_bound = {"compute": 0.0, "memory": 0.0}
    missing: dict[str, float] = {}
    for row in rows:
        if row.bound is not None:
            by_bound[row.bound] += row.gpu_ms or 0.0
        elif row.model is None:
            missing[row.operator] = missing.get(row.operator, 0.0) + (row.gpu_ms or 0.0)
    placed = by_bound["compute"] + by_bound["memory"]
    return RooflineCoverage(
        operators_ms=total,
        modelled_ms=sum(r.gpu_ms or 0.0 for r in rows if r.model is not None),
        compute_ms=by_bound["compute"],
        memory_ms=by_bound["memory"],
        share=placed / total,
        unmodelled=tuple(sorted(missing, key=lambda n: -missing[n])[:3]),
        unmodelled_count=len(missing),
    )


def _group_ids(events: EventTable, calls: Rows, around: Rows) -> Rows:
    """Per call (an event row): its group, by operator and recorded inputs, and for one
    gradient of a convolution the inputs of the backward call around it (``around``)."""
    columns = [events.name_id, events.input_dims, events.input_types]
    columns.append(_column(events, "concrete_inputs"))
    keys = np.stack([c[calls].astype(np.int64) for c in columns], axis=1)
    parent_dims = np.where(around >= 0, events.input_dims[np.maximum(around, 0)], -1)
    keys = np.column_stack((keys, parent_dims.astype(np.int64)))
    _, group = np.unique(keys, axis=0, return_inverse=True)
    ids: Rows = group.reshape(-1)
    return ids


def _whole_backward_around(events: EventTable, tree: CpuTree, calls: Rows) -> Rows:
    """Per row call (an index into ``tree.ops``): for one gradient of a convolution (its
    input's or its weight's, as torch 1.x's cuDNN and MIOpen record them), the event row
    of the backward call around it that holds all three tensors; else -1."""
    from steptrace.analysis.efficiency.conv_models import LEARNED_FROM, ONE_GRADIENT

    names = events.names
    gradient = np.array([n in ONE_GRADIENT for n in names], dtype=bool)
    whole = np.array([n in LEARNED_FROM for n in names], dtype=bool)
    ops = tree.ops
    found = np.full(calls.size, -1, dtype=np.int64)
    if not gradient.any():
        return found
    parent = tree.op_parent[calls]
    mine = gradient[events.name_id[ops[calls]]] & (parent >= 0)
    rows = ops[np.maximum(parent, 0)]
    mine &= whole[events.name_id[rows]]
    found[mine] = rows[mine]
    return found


def _seen_by(events: EventTable, around: int, seen: ConvShapes) -> ConvShapes:
    """What a gradient's own backward call (event row ``around``) says of its convolution;
    ``seen`` (the whole trace's) for any other call."""
    if around < 0:
        return seen
    from steptrace.analysis.efficiency.conv_models import ConvShapes

    columns = (events.input_dims, events.input_types, _column(events, "concrete_inputs"))
    call = _call(events, *(int(c[around]) for c in columns))
    return ConvShapes.learn([(events.name_of(around), call)]) if call is not None else seen


def _conv_shapes(events: EventTable, ops: Rows) -> ConvShapes:
    """What the trace's convolution backward calls recorded of each convolution (each
    distinct call read once)."""
    from steptrace.analysis.efficiency.conv_models import LEARNED_FROM, ConvShapes

    ids = [i for i, name in enumerate(events.names) if name in LEARNED_FROM]
    calls = ops[np.isin(events.name_id[ops], ids)] if ids else ops[:0]
    if calls.size == 0:
        return ConvShapes()
    columns = [events.name_id, events.input_dims, events.input_types]
    columns.append(_column(events, "concrete_inputs"))
    distinct = np.unique(np.stack([c[calls].astype(np.int64) for c in columns]), axis=1)
    read = []
    for name_id, dims, types, concrete in distinct.T.tolist():
        if (call := _call(events, dims, types, concrete)) is not None:
            read.append((events.names[name_id], call))
    return ConvShapes.learn(read)


def _call(events: EventTable, dims: int, types: int, concrete: int) -> Call | None:
    """A call's recorded inputs from the ids of their texts (no strides: no model of a
    convolution's shape reads them)."""
    from steptrace.analysis.efficiency.op_inputs import Call

    return Call.parse(
        events.text(dims) or "", events.text(types) or "", None, events.text(concrete)
    )


def _split(ids: Rows, count: int) -> list[Rows]:
    """The indices of ``ids`` per value 0..count-1."""
    order = np.argsort(ids, kind="stable")
    return np.split(order, np.cumsum(np.bincount(ids, minlength=count))[:-1])


def _column(events: EventTable, name: str) -> NDArray[np.int32]:
    """A text column of the ``inputs`` group; all missing where it was not loaded."""
    found: NDArray[np.int32] | None = events.columns.get(name)
    return found if found is not None else np.full(len(events), -1, dtype=np.int32)


def _row(
    events: EventTable,
    chosen: RowCalls,
    ops: Rows,
    members: Rows,
    work: Rows,
    peaks: DevicePeaks | None,
    on_gpu: bool,
    seen: ConvShapes,
) -> RooflineRow | None:
    """One group's row: ``members`` index its calls in ``chosen.calls``, ``work`` is the
    GPU work they hold (event rows); None for a group that ran no GPU work on a GPU trace."""
    first = int(ops[chosen.calls[members[0]]])
    texts = [events.text(int(_column(events, c)[first])) for c in _INPUTS]
    name = events.name_of(first)
    modelled = bool(chosen.modelled[members[0]])
    from steptrace.analysis.efficiency.op_inputs import Call, Cost
    from steptrace.analysis.efficiency.op_models import cost

    dims, types, strides, concrete = texts
    call = Call.parse(dims, types, strides, concrete) if dims and types else None
    found = cost(name, call, seen) if modelled and call is not None else None
    if found is not None and _crosses_host(events, work):
        moved = events.bytes[work[events.kind[work] == Kind.MEMCPY]]  # what the link carried
        per_call = int(np.nansum(moved)) // members.size if np.isfinite(moved).any() else None
        found = Cost("host transfer", 0, per_call or found.bytes // 2, None, False)
    gpu_ms = iv.total(iv.union(events.start_us[work], events.end_us[work])) / 1000
    if on_gpu and work.size == 0:
        return None
    cpu_ms = float(events.dur_us[ops[chosen.calls[members]]].sum()) / 1000
    precision = _precision(events, found, work)
    return _measured(
        RooflineRow(
            operator=name,
            input_shapes=compact_json(texts[0]),
            input_types=compact_json(texts[1]),
            concrete_inputs=compact_json(texts[3]),
            calls=int(members.size),
            model=found.model if found else None,
            precision=precision,
            flops_per_call=found.flops if found else None,
            bytes_per_call=found.bytes if found else None,
            gpu_ms=gpu_ms if on_gpu else None,
            cpu_ms=cpu_ms,
            achieved_tflops=None,
            achieved_tbps=None,
            intensity=None,
            peak_tflops=None,
            peak_tbps=None,
            bound=None,
            roofline_pct=None,
        ),
        found,
        peaks,
    )


_INPUTS = ("input_dims", "input_types", "input_strides", "concrete_inputs")


def _crosses_host(events: EventTable, work: Rows) -> bool:
    """Does the work copy to or from the host (a ``copy_`` of a CPU tensor)? Then the
    link to the host bounds it, not the device's memory, and no roof holds it."""
    copies = work[events.kind[work] == Kind.MEMCPY]
    names = {events.names[i] for i in np.unique(events.name_id[copies]).tolist()}
    return any(copy_kind(n)[0] in ("HtoD", "DtoH", "HtoH") for n in names)


def _precision(events: EventTable, found: Cost | None, work: Rows) -> str | None:
    """The row's precision; fp32 matrix work whose kernels run on tensor cores is TF32."""
    if found is None or not found.matrix or found.precision != "float32":
        return found.precision if found else None
    names = {events.names[i] for i in np.unique(events.name_id[work]).tolist()}
    return "tfloat32" if any(TF32.search(n) for n in names) else "float32"


def _measured(row: RooflineRow, found: Cost | None, peaks: DevicePeaks | None) -> RooflineRow:
    """The row with its achieved figures and its place under the roofs."""
    time_ms = row.gpu_ms if row.gpu_ms is not None else row.cpu_ms
    if found is None or time_ms <= 0:
        return row
    flops, moved = row.calls * found.flops, row.calls * found.bytes
    peak = peaks.compute(row.precision, found.matrix) if peaks else None
    bandwidth = peaks.memory_tbps if peaks and found.model != "host transfer" else None
    intensity = found.flops / found.bytes if found.bytes > 0 else None
    roof_s = None
    if peak and bandwidth:
        roof_s = max(flops / (peak * 1e12), moved / (bandwidth * 1e12))
    bound: Bound | None = None
    if peak and bandwidth and intensity is not None:
        bound = "compute" if peak <= intensity * bandwidth else "memory"
    return msgspec.structs.replace(
        row,
        achieved_tflops=flops / (time_ms * 1e9),
        achieved_tbps=moved / (time_ms * 1e9),
        intensity=intensity,
        peak_tflops=peak,
        peak_tbps=bandwidth,
        bound=bound,
        roofline_pct=100 * roof_s / (time_ms / 1000) if roof_s is not None else None,
    )


FIGURE = FigureSpec(
    "roofline", roofline, frozenset({"tree", "links", "gpu_busy"}), groups=frozenset({"inputs"})
)
