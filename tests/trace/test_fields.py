"""The declarative trace model: every declared field, the instants and the flows, against the
raw JSON read by a plain reference (``tests.reference``: integer nanoseconds, no steptrace).

A field is one declaration (``trace.fields.FIELDS``): its column holds, for each row of a
kind that carries it, the value the JSON wrote, and its missing value elsewhere.
"""

from __future__ import annotations

import gzip
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from steptrace.errors import TraceError
from steptrace.trace.decode import ABSENT_JSON, codec
from steptrace.trace.fields import (
    ALL_GROUPS,
    FIELDS,
    MISSING,
    Field,
    Selection,
    Value,
    select,
)
from steptrace.trace.kinds import Kind
from steptrace.trace.load import load_trace, read_trace
from tests import reference
from tests.conftest import TRACES, WriteTrace, trace_params
from tests.tracegen import cpu, document, kernel, step

# The categories of each kind, as Kineto writes them (both vocabularies).
_CATEGORIES = {
    Kind.CPU_OP: {"cpu_op"},
    Kind.USER_ANNOTATION: {"user_annotation"},
    Kind.PYTHON_FUNCTION: {"python_function", "python"},
    Kind.RUNTIME: {"cuda_runtime", "runtime"},
    Kind.DRIVER: {"cuda_driver"},
    Kind.KERNEL: {"kernel"},
    Kind.MEMCPY: {"gpu_memcpy", "memcpy"},
    Kind.MEMSET: {"gpu_memset", "memset"},
    Kind.GPU_USER_ANNOTATION: {"gpu_user_annotation"},
    Kind.CUDA_SYNC: {"cuda_sync"},
}
PROFMEM = TRACES / "gpu" / "v100_ddp2_rank1_train_profmem__df_index_resolver.json.gz"
NCCL = TRACES / "gpu" / "a100_2rank_rank0_train_nccl2171__nccl_data.json.gz"
needs_traces = pytest.mark.skipif(not PROFMEM.exists(), reason="real traces not found")


def _kind(e: reference.Ev) -> Kind | None:
    cat = e.cat.lower()
    if cat == "operator":  # 2021: operators and labels in one category
        return Kind.CPU_OP if reference.is_cpu_op(e) else Kind.USER_ANNOTATION
    return next((k for k, cats in _CATEGORIES.items() if cat in cats), None)


def _carriers(field: Field, raw: list[reference.Ev], kinds: list[Kind | None]) -> list[int]:
    """The rows of the events that carry ``field``: of a kind it names (``kinds``: each
    event's ``_kind``, read once) and, where it names them, a name its pattern finds (each
    distinct name matched once)."""
    pattern = None if field.names is None else re.compile(field.names, re.IGNORECASE)
    found: dict[str, bool] = {}
    rows = []
    for row, (e, kind) in enumerate(zip(raw, kinds, strict=True)):
        if kind not in field.carriers:
            continue
        if pattern is not None:
            if e.name not in found:
                found[e.name] = pattern.search(e.name) is not None
            if not found[e.name]:
                continue
        rows.append(row)
    return rows


def _integer(value: Any, missing: int = MISSING) -> int:
    """An integer field as Kineto writes it (ints; digits in a string: "stream 7")."""
    if isinstance(value, bool) or value is None:
        return missing
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal | float) and value == int(value):
        return int(value)
    found = re.search(r"-?\d+", value) if isinstance(value, str) else None
    return int(found.group()) if found else missing


def _expected(field: Field, e: reference.Ev) -> Any:
    """The field's value for event ``e``, from its JSON alone, as the column should hold it."""
    args = e.raw.get("args") or {}
    value = args.get(field.key)
    if field.fallback is not None and value is None:
        value = e.raw.get(field.fallback)
    if field.value is Value.INT:
        return _integer(value, int(field.missing))
    if field.value is Value.FLOAT:
        return float(value) if isinstance(value, int | float | Decimal) else None
    if field.value is Value.FLAG:
        return value is not None
    if field.value is Value.TEXT:
        return None if value is None else str(value)
    return None if field.key not in args else json.loads(json.dumps(value, default=float))


def _held(field: Field, table: Any, column: Any, index: int) -> Any:
    held = column[index].item()
    if field.value is Value.FLOAT:
        return None if np.isnan(held) else held
    if field.value is Value.TEXT:
        return table.text(held)
    if field.value is Value.JSON:
        text = table.text(held)
        return None if text is None else json.loads(text)
    return held


@pytest.mark.parametrize("path", trace_params())
def test_every_declared_field_holds_what_the_json_wrote(path: Path) -> None:
    """Each complete event's fields, dense or sparse, equal its JSON args (rows matched in
    the loader's order, which the reference rebuilds from exact integer times)."""
    trace = load_trace(path, progress=False)
    events = trace.events
    raw = reference.events(reference.read_exact(path))
    assert len(events) == len(raw)
    assert [events.name_of(i) for i in range(len(raw))] == [e.name for e in raw]
    kinds = [_kind(e) for e in raw]
    for field in (f for f in FIELDS if f.phase == "X"):
        carriers = _carriers(field, raw, kinds)
        if field.sparse:
            sparse = events.sparse_column(field.column)
            assert sparse.rows.tolist() == carriers, field.column
            column, rows = sparse.values, list(range(len(carriers)))
        else:
            column, rows = events.column(field.column), carriers
            others = np.ones(len(events), dtype=bool)
            others[carriers] = False
            missing = field.missing
            if isinstance(missing, float):
                assert np.isnan(column[others]).all(), field.column
            else:
                assert (column[others] == missing).all(), field.column
        for index, row in zip(rows, carriers, strict=True):
            want = _expected(field, raw[row])
            assert _held(field, events, column, index) == want, (field.column, raw[row].raw)


@needs_traces
def test_memory_instants_reach_the_trace_in_time_order() -> None:
    """The shared profile_memory trace: its 28,010 ``[memory]`` instants, every field as
    written, in ``ts`` order (ties as written), on the event table's clock in exact ns."""
    trace = load_trace(PROFMEM, groups=("instants",), progress=False)
    assert trace.instants is not None and trace.flows is None
    doc = reference.read_exact(PROFMEM)
    written = [e for e in doc["traceEvents"] if e.get("ph") == "i"]
    ordered = sorted(written, key=lambda e: reference.ns(e["ts"]) or 0)  # stable
    instants = trace.instants
    memory = instants.named("[memory]")
    assert int(memory.sum()) == 28_010 == trace.info.memory_events
    assert len(instants) == len(ordered)
    origin = min(reference.ns(e["ts"]) or 0 for e in reference.complete_events(doc))
    assert trace.events.origin_ns == origin
    at_ns = [(reference.ns(e["ts"]) or 0) - origin for e in ordered]
    assert np.array_equal(np.rint(instants.at_us * 1000).astype(np.int64), at_ns)
    for field in (f for f in FIELDS if f.phase == "i"):
        want = [_integer((e.get("args") or {}).get(field.key), int(field.missing)) for e in ordered]
        assert instants.column(field.column).tolist() == want, field.column
    assert [instants.texts[i] for i in instants.name] == [e["name"] for e in ordered]


@needs_traces
def test_total_allocated_follows_each_allocation_in_time_order() -> None:
    """A fact of the format the order must keep: per device, ``Total Allocated`` is the
    previous one plus ``Bytes``."""
    instants = load_trace(PROFMEM, groups=("instants",), progress=False).instants
    assert instants is not None
    rows = np.flatnonzero(instants.named("[memory]"))
    device = instants.column("device_type")[rows] * 1000 + instants.column("device_id")[rows]
    total, moved = instants.column("total_allocated")[rows], instants.column("bytes")[rows]
    for d in np.unique(device):
        mine = device == d
        assert (np.diff(total[mine]) == moved[mine][1:]).all()


@pytest.mark.parametrize("path", trace_params())
def test_every_flow_keeps_its_start_and_its_finish(path: Path) -> None:
    """Flows paired by category and id: the first start and the first finish of each, as
    written (times in exact ns from the table's origin, threads as the events' threads)."""
    trace = load_trace(path, groups=("flows",), progress=False)
    flows = trace.flows
    assert flows is not None
    doc = reference.read_exact(path)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    origin = trace.events.origin_ns
    ends: dict[tuple[str, int], dict[str, tuple[int, Any]]] = {}
    for e in sorted(
        (e for e in events if e.get("ph") in ("s", "f") and reference.ns(e.get("ts")) is not None),
        key=lambda e: reference.ns(e["ts"]) or 0,
    ):
        end = ends.setdefault((str(e.get("cat", "")), int(e["id"])), {})
        end.setdefault(e["ph"], ((reference.ns(e["ts"]) or 0) - origin, e))
    assert len(flows) == len(ends)
    threads = trace.events.threads
    for k in range(len(flows)):
        end = ends[(flows.texts[flows.category[k]], int(flows.flow_id[k]))]
        for phase, at_us, thread in (
            ("s", flows.start_us[k], flows.start_thread[k]),
            ("f", flows.finish_us[k], flows.finish_thread[k]),
        ):
            if phase not in end:
                assert np.isnan(at_us) and thread == MISSING
                continue
            at_ns, e = end[phase]
            assert round(float(at_us) * 1000) == at_ns
            assert tuple(str(x) for x in threads[thread]) == (str(e["pid"]), str(e["tid"]))
    if path == NCCL:
        assert flows.of_category("ac2g").sum() > 3000 and flows.of_category("fwdbwd").sum() > 500


def test_a_new_field_is_one_declaration(write_trace: WriteTrace) -> None:
    """A field declared by a caller (Kineto's ``context`` of kernels) is decoded, read and
    kept with no other change."""
    context = Field("context", "context", Value.INT, "test", (Kind.KERNEL,))
    with_context = kernel("a", 10, 5, correlation=1)
    with_context["args"]["context"] = 3
    path = write_trace(
        document(
            [
                step(1, 0, 100),
                with_context,
                kernel("b", 20, 5, correlation=2),
                cpu("aten::mm", 30, 5, context=9),  # not a carrier
            ]
        )
    )
    trace = read_trace(path, Selection((*select().fields, context)), progress=False)
    names = [trace.events.name_of(i) for i in range(len(trace.events))]
    held = dict(zip(names, trace.events.column("context").tolist(), strict=True))
    assert held == {"ProfilerStep#1": MISSING, "a": 3, "b": MISSING, "aten::mm": MISSING}


def test_groups_not_asked_for_are_not_there(write_trace: WriteTrace) -> None:
    path = write_trace(document([step(1, 0, 100), kernel("a", 10, 5, correlation=1)]))
    trace = load_trace(path, groups=(), progress=False)
    assert trace.instants is None and trace.flows is None
    assert trace.info.groups == ("core",)
    with pytest.raises(TraceError, match="'grid' was not loaded"):
        trace.events.column("grid")
    with pytest.raises(TraceError, match="unknown field group"):
        load_trace(path, groups=("colective",))
    every = load_trace(path, progress=False)
    with pytest.raises(TraceError, match="read with the other accessor"):
        every.events.column("collective")  # sparse: sparse_column
    assert every.info.groups == (*dict.fromkeys(f.group for f in FIELDS), "flows")
    assert set(every.info.groups) == ALL_GROUPS


def test_fields_are_named_once_per_table() -> None:
    for phase in ("X", "i"):
        columns = [f.column for f in FIELDS if f.phase == phase]
        assert len(columns) == len(set(columns)), phase
        assert all(c.isidentifier() for c in columns)
    keys = [f.key for f in FIELDS if f.phase == "X"]
    assert len(keys) == len(set(keys))


@needs_traces
def test_a_plain_load_reads_fewer_fields_than_everything() -> None:
    """The core alone decodes no flow and keeps no instant (what ``analyze`` asks for)."""
    core = load_trace(PROFMEM, groups=(), progress=False)
    assert core.flows is None and core.instants is None
    assert core.info.memory_events == 28_010  # counted all the same
    assert set(core.events.columns) == {f.column for f in select().complete}
    with gzip.open(PROFMEM) as handle:
        assert json.load(handle)["traceEvents"]  # the file itself is untouched


def test_an_absent_json_key_is_the_one_absent_value() -> None:
    """A JSON field's absent key decodes to ``ABSENT_JSON`` itself, a struct default never
    copied: its column finds the absent rows by identity (``columns._json_ids``), so a copy
    would make every row an empty text instead of missing."""
    coded = codec(select(ALL_GROUPS))
    shaped = cpu("a", 0, 1, **{"Input Dims": [[2, 3]], "Input type": ["float"]})
    bare = cpu("c", 4, 1)
    del bare["args"]
    events = coded.event_list.decode(json.dumps([shaped, cpu("b", 2, 1), bare]))
    first, second, third = (e.args or coded.no_args for e in events)
    assert bytes(first.input_dims) == b"[[2, 3]]" and first.input_strides is ABSENT_JSON
    assert second.input_dims is ABSENT_JSON and third.input_types is ABSENT_JSON
