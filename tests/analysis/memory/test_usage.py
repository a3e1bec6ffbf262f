"""Memory per step against a plain reference: the ``[memory]`` events of the JSON, replayed
in Python in exact integer nanoseconds (no steptrace code), on every real trace with them."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import msgspec
import pytest

import steptrace
from steptrace.analysis.memory.usage import MemoryStep
from tests import reference
from tests.conftest import TRACES, WriteTrace, trace_params
from tests.tracegen import PID, TID, cpu, document, label, step

PROFMEM = TRACES / "gpu" / "v100_ddp2_rank1_train_profmem__df_index_resolver.json.gz"
RESNET_2021 = (
    TRACES
    / "gpu"
    / "kineto_v100_resnet50_train_dataloader_nw0.worker0.1623143089861.pt.trace.json.gz"
)


def _device(args: dict[str, Any]) -> str:
    kind, index = args.get("Device Type"), args.get("Device Id")
    return "cpu" if kind == 0 else f"cuda:{index}" if kind == 1 else f"device-type-{kind}:{index}"


def reference_memory(path: Path) -> dict[tuple[str, str], dict[str, int]]:
    """(device, step) -> its figures, and the bytes alive at the peak replayed by Addr."""
    doc = reference.read_exact(path)
    evs = reference.events(doc)
    origin = min(reference.ns(e["ts"]) or 0 for e in reference.complete_events(doc))
    memory: dict[str, list[tuple[int, dict[str, Any]]]] = defaultdict(list)
    for e in doc["traceEvents"]:
        args = e.get("args") or {}
        if e.get("ph") == "i" and e.get("name") == "[memory]" and "Total Allocated" in args:
            memory[_device(args)].append(((reference.ns(e["ts"]) or 0) - origin, args))
    figures = {}
    for device, written in memory.items():
        written.sort(key=lambda x: x[0])  # stable: ties as written
        for name, lo, hi in reference.step_windows(evs):
            inside = [a for t, a in written if lo <= t < hi]
            if not inside:
                continue
            start = int(inside[0]["Total Allocated"]) - int(inside[0]["Bytes"])
            levels = [int(a["Total Allocated"]) for a in inside]
            peak = max(start, *levels)
            upto = levels.index(peak) + 1 if peak in levels and peak > start else 0
            alive: dict[int, int] = {}
            for a in inside[:upto]:
                if int(a["Bytes"]) > 0:
                    alive[int(a["Addr"])] = int(a["Bytes"])
                else:
                    alive.pop(int(a["Addr"]), None)
            figures[(device, name)] = {
                "start": start,
                "peak": peak,
                "reserved": max(int(a["Total Reserved"]) for a in inside),
                "end": levels[-1],
                "allocations": sum(1 for a in inside if int(a["Bytes"]) > 0),
                "allocated": sum(int(a["Bytes"]) for a in inside if int(a["Bytes"]) > 0),
                "alive_in_step": sum(alive.values()),
            }
    return figures


def _steps(report: steptrace.Report) -> dict[tuple[str, str], MemoryStep]:
    memory = report.analysis.memory
    assert memory is not None
    return {(d.device, s.step): s for d in memory.devices for s in d.steps if s.allocations}


@pytest.mark.parametrize("path", trace_params())
def test_every_device_step_equals_the_reference(path: Path) -> None:
    expected = reference_memory(path)
    report = steptrace.analyze(path)
    if not expected:
        assert report.analysis.memory is None
        return
    found = _steps(report)
    assert set(found) == set(expected)
    for key, want in expected.items():
        got = found[key]
        assert (
            got.start_allocated_bytes,
            got.peak_allocated_bytes,
            got.peak_reserved_bytes,
            got.end_allocated_bytes,
            got.allocations,
            got.allocated_bytes,
        ) == (
            want["start"],
            want["peak"],
            want["reserved"],
            want["end"],
            want["allocations"],
            want["allocated"],
        ), key
        held = got.held
        assert held.allocated_in_step_bytes == want["alive_in_step"], key
        assert (
            held.alive_from_start_bytes + held.allocated_in_step_bytes == got.peak_allocated_bytes
        )
        assert sum(h.bytes for h in held.by_label) == held.allocated_in_step_bytes or (
            len(held.by_label) == 10
        )


@pytest.mark.skipif(not PROFMEM.exists(), reason="real traces not found")
def test_the_shared_profile_memory_trace_as_the_issue_measured_it() -> None:
    """V100 DDP rank 1: 3.8 GiB at each step's start, a peak of 6.17 GiB, 11.9 GiB
    reserved, 2,677 allocations moving about 10 GB, and no growth."""
    memory = steptrace.analyze(PROFMEM).analysis.memory
    assert memory is not None
    (gpu,) = [d for d in memory.devices if d.device == "cuda:1"]
    gib = 2**30
    for s in gpu.steps:
        assert round(s.start_allocated_bytes / gib, 1) == 3.8
        assert round(s.peak_allocated_bytes / gib, 2) == 6.17
        assert round(s.peak_reserved_bytes / gib, 1) == 11.9
        assert s.allocations == 2677 and round(s.allocated_bytes / 1e9) == 10
    assert gpu.growth_bytes_per_step == 0


@pytest.mark.skipif(not RESNET_2021.exists(), reason="real traces not found")
def test_a_2021_trace_writes_bytes_alone_so_its_peak_is_not_observed() -> None:
    report = steptrace.analyze(RESNET_2021)
    assert report.analysis.memory is None
    assert any("carry no Total Allocated" in w for w in report.analysis.trace.warnings)


def _memory(ts: float, nbytes: int, total: int, addr: int, tid: int = TID) -> dict[str, Any]:
    return {
        "ph": "i",
        "cat": "cpu_instant_event",
        "s": "t",
        "name": "[memory]",
        "pid": PID,
        "tid": tid,
        "ts": ts,
        "args": {
            "Device Type": 0,
            "Device Id": -1,
            "Addr": addr,
            "Bytes": nbytes,
            "Total Allocated": total,
            "Total Reserved": 0,
        },
    }


def test_the_peak_names_its_label_and_operator_and_what_holds_it(write_trace: WriteTrace) -> None:
    """A step that frees a block it began with, allocates under an aten::empty inside an
    operator inside a label, and peaks there; a 1-byte free (Bytes -1) is a free."""
    events = [
        _memory(1, 100, 100, 0xA),  # before the step: held at its start
        step(1, 10, 100),
        label("forward", 20, 50),
        cpu("aten::linear", 25, 30),
        cpu("aten::empty", 26, 1),
        _memory(15, -100, 0, 0xA),  # the step frees the block it began with
        _memory(26.5, 1000, 1000, 0xB),  # under aten::empty: counted for aten::linear
        _memory(27, 1, 1001, 0xC),
        _memory(28, -1, 1000, 0xC),  # a 1-byte free
        _memory(80, -1000, 0, 0xB),
    ]
    report = steptrace.analyze(write_trace(document(events)))
    assert report.analysis.memory is not None
    (device,) = report.analysis.memory.devices
    (s,) = device.steps
    assert (s.start_allocated_bytes, s.peak_allocated_bytes, s.end_allocated_bytes) == (
        100,
        1001,
        0,
    )
    assert (s.peak_label, s.peak_operator) == ("forward", "aten::linear")
    assert s.held.alive_from_start_bytes == 0 and s.held.allocated_in_step_bytes == 1001
    assert [(h.name, h.bytes) for h in s.held.by_operator] == [("aten::linear", 1001)]
    assert {m.name: (m.peak_allocated_bytes, m.growth_bytes) for m in s.labels} == {
        "forward": (1001, 1000)
    }
    assert device.growth_bytes_per_step == -100


def test_a_trace_without_memory_events_writes_null(write_trace: WriteTrace) -> None:
    report = steptrace.analyze(write_trace(document([step(1, 0, 10)])))
    assert json.loads(msgspec.json.encode(report))["analysis"]["memory"] is None


@pytest.mark.skipif(not PROFMEM.exists(), reason="real traces not found")
def test_the_timeline_draws_each_steps_memory_with_its_peak() -> None:
    """The lanes carry the device of the largest peak: every step's curve peaks where the
    memory figures say, within the points' bound, and the HTML draws it."""
    from steptrace.analysis.memory.lane import POINTS
    from steptrace.pipeline import analyze_source
    from steptrace.report.formats.renderers import renderer
    from steptrace.report.sections.trace import View, report_document

    report, lanes = analyze_source(PROFMEM, lanes=True)
    assert lanes is not None and report.analysis.memory is not None
    (gpu,) = [d for d in report.analysis.memory.devices if d.device == "cuda:1"]
    for step_lanes, figures in zip(lanes.steps, gpu.steps, strict=True):
        curve = step_lanes.memory
        assert curve is not None and curve.device == "cuda:1"
        assert curve.peak_bytes == figures.peak_allocated_bytes
        assert len(curve.at_ns) <= POINTS
        assert max(curve.reserved) == figures.peak_reserved_bytes
        assert 0 <= curve.peak_ns <= step_lanes.wall_ns
    html = renderer("html").render([report_document(report, View(lanes=lanes))])
    together = lanes.together  # the consecutive steps drawn at once: their memory too
    assert together is not None and together.memory is not None
    inside = {together.name.split(" to ")[0], *(name for _, name in together.boundaries)}
    peaks = [s.memory.peak_bytes for s in lanes.steps if s.memory and s.name in inside]
    assert len(peaks) == 3 and together.memory.peak_bytes == max(peaks)
    assert html.count('class="mband"') == len(lanes.steps) + 1
    assert "peak 6.6 GB allocated on cuda:1" in html


@pytest.mark.skipif(not PROFMEM.exists(), reason="real traces not found")
def test_diff_compares_each_devices_peak() -> None:
    same = steptrace.diff(PROFMEM, PROFMEM)
    gpu = next(m for m in same.memory if m.device == "cuda:1")
    assert gpu.before_peak_bytes == gpu.after_peak_bytes == 6629508096 and gpu.delta_bytes == 0
    other = steptrace.diff(PROFMEM, TRACES / "cpu" / "cpu_train_trace.json.gz")
    gone = next(m for m in other.memory if m.device == "cuda:1")
    assert gone.after_peak_bytes is None and gone.delta_bytes is None  # not recorded, not 0


def test_a_rank_whose_peak_stands_out_is_named() -> None:
    """The rank matrix carries each rank's peak per step; the rank whose peak exceeds the
    others' median by 1.2 times and 64 MiB is named, and only it."""
    import msgspec

    from steptrace.across.ranks.figures import RanksAnalysis
    from steptrace.across.ranks.rank_thresholds import RankThresholds
    from steptrace.hypotheses.rules.job import rank_findings
    from tests.across.ranks.reports import fixture_report

    report = fixture_report()
    base = 500 * 2**20

    def with_peak(rank: Any) -> Any:
        peak = base * (2 if rank.rank == 3 else 1) + rank.rank * 2**20  # rank 3 holds double
        steps = tuple(msgspec.structs.replace(s, peak_allocated_bytes=peak) for s in rank.steps)
        return msgspec.structs.replace(rank, steps=steps)

    analysis = RanksAnalysis(
        world_size=report.world_size,
        ranks=tuple(with_peak(r) for r in report.ranks),
        clocks=report.clocks,
        collectives=report.collectives,
        unmatched=report.unmatched,
        stragglers=report.stragglers,
        warnings=report.warnings,
    )
    found = [f for f in rank_findings(analysis, RankThresholds()) if f.rule == "memory-imbalance"]
    assert [f.evidence.values()["rank"] for f in found] == [3]
    assert found[0].basis == "memory peak"
    quiet = msgspec.structs.replace(analysis, ranks=report.ranks)  # no memory recorded
    assert not [f for f in rank_findings(quiet, RankThresholds()) if f.rule == "memory-imbalance"]


@pytest.mark.skipif(not PROFMEM.exists(), reason="real traces not found")
def test_a_rank_summary_keeps_each_steps_peak() -> None:
    from steptrace.across.ranks.matrix import RankData
    from steptrace.across.ranks.reading.work import summarize

    data = summarize(str(PROFMEM))
    assert isinstance(data, RankData)
    assert [s.peak_allocated_bytes for s in data.steps] == [6629508096] * 5


def _gpu(event: dict[str, Any]) -> dict[str, Any]:
    event["args"] |= {"Device Type": 1, "Device Id": 0}
    return event


def _split(events: list[dict[str, Any]], write_trace: WriteTrace, device: str) -> Any:
    from steptrace.analysis.context import TraceContext
    from steptrace.analysis.memory import usage as memory
    from steptrace.scenario import Inventory, InventoryBlock, StepInventory

    inventory = Inventory(
        persistent=(
            InventoryBlock("parameter", device, 0x1, 100),
            InventoryBlock("optimizer state", device, 0x2, 50),
        ),
        steps=(
            StepInventory(
                1,
                (
                    InventoryBlock("gradient", device, 0x6, 100),
                    InventoryBlock("batch", device, 0x4, 40),
                ),
            ),
        ),
    )
    trace = steptrace.load_trace(write_trace(document(events)))
    found = TraceContext(trace, inventory=inventory).figure(memory.FIGURE)
    (step,) = found.devices[0].steps
    return step.held


def _inventoried_step() -> list[dict[str, Any]]:
    """Before the step: a parameter (0x1), optimizer state (0x2) and 30 unknown bytes
    (0x3). In it: the batch (0x4), 7 bytes never freed (0x5), a 500-byte activation freed
    after the peak (0x7), the gradient (0x6) after the peak."""
    return [
        _memory(1, 100, 100, 0x1),
        _memory(2, 50, 150, 0x2),
        _memory(3, 30, 180, 0x3),
        step(1, 10, 100),
        _memory(15, 40, 220, 0x4),
        _memory(18, 7, 227, 0x5),
        _memory(20, 500, 727, 0x7),  # the peak
        _memory(60, -500, 227, 0x7),
        _memory(70, 100, 327, 0x6),
    ]


def test_the_inventory_splits_the_peak_by_what_holds_it(write_trace: WriteTrace) -> None:
    held = _split([_gpu(e) for e in _inventoried_step()], write_trace, "cuda:0")
    assert (held.alive_from_start_bytes, held.allocated_in_step_bytes) == (180, 547)
    assert {h.name: h.bytes for h in held.by_category} == {
        "activations and temporaries": 500,
        "batch": 40,
        "other, kept past the step": 7,
    }
    assert {h.name: h.bytes for h in held.from_start_by_category} == {
        "parameter": 100,
        "optimizer state": 50,
        "other, from before the step": 30,
    }


def test_on_the_cpu_what_was_alive_at_the_start_is_not_split(write_trace: WriteTrace) -> None:
    held = _split(_inventoried_step(), write_trace, "cpu")
    assert sum(h.bytes for h in held.by_category) == held.allocated_in_step_bytes == 547
    assert held.from_start_by_category == ()
