"""The steps' lanes (``analysis.lanes``) against a plain-Python reading of the raw trace
JSON, their merging, the idle gaps' causes, and the figure in the HTML report.

The reference reads the trace's ``ts`` and ``dur`` as decimals and works in integer
nanoseconds; nesting is found by a stack walk per thread. Nothing is taken from
steptrace's own figures except where the test compares two of them on purpose (the gaps
against the step's GPU idle time).
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest

from steptrace.analysis.context import TraceContext
from steptrace.analysis.timeline.gaps import AFTER_SYNC, NOT_KNOWN, NOTHING_AFTER, WAITING_ON_HOST
from steptrace.analysis.timeline.lanes import step_lanes
from steptrace.analysis.timeline.merge import merge
from steptrace.analysis.timeline.model import BUDGET, Lanes
from steptrace.pipeline import Analyzed, analyze_source
from steptrace.report.formats.renderers import renderer
from steptrace.report.model import SCHEMA, Report
from steptrace.report.sections.timeline import ranks_timeline_section
from steptrace.report.sections.trace import View, report_document
from steptrace.trace.load import load_trace
from tests.across.ranks.reports import fixture_job, fixture_report
from tests.conftest import WriteTrace, gpu_trace
from tests.tracegen import cpu, document, kernel, label, launch, step

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
CHECKED = [
    "cpu_train_trace.json",
    "cpu_train_trace_all",
    "v100_1rank_train_nsres",
    "a100_2rank_rank0",
    "amd_mi250",
]


def _ns(value: Any) -> int:
    return int((Decimal(str(value)) * 1000).to_integral_value())


def reference_lanes(path: Path) -> dict[str, dict[tuple[str, ...], list[tuple[int, int]]]]:
    """Per step name, per lane key, the (start from the step, duration) of its events, ns."""
    raw = path.read_bytes()
    import gzip

    text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    events = [e for e in json.loads(text, parse_float=Decimal)["traceEvents"] if e.get("ph") == "X"]
    steps = [
        (e["name"], _ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"]))
        for e in events
        if e.get("cat") == "user_annotation" and re.fullmatch(r"ProfilerStep#\d+", e["name"])
    ]
    drawn: list[tuple[tuple[str, ...], int, int]] = []
    ops: dict[tuple[Any, Any], list[tuple[int, int]]] = defaultdict(list)
    for e in events:
        start, dur = _ns(e["ts"]), _ns(e.get("dur", 0))
        if e.get("cat") == "user_annotation":
            drawn.append((("cpu", str(e["pid"]), str(e["tid"])), start, dur))
        elif e.get("cat") == "cpu_op":
            ops[(e["pid"], e["tid"])].append((start, dur))
        elif e.get("cat") in GPU_CATS:
            key = ("gpu", str(e["args"]["device"]), str(e["args"]["stream"]))
            drawn.append((key, start, dur))
    for (pid, tid), spans in ops.items():  # top operators: inside no other operator
        open_ends: list[int] = []
        for start, dur in sorted(spans, key=lambda s: (s[0], -s[1])):
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            if not open_ends:
                drawn.append((("cpu", str(pid), str(tid)), start, dur))
            open_ends.append(start + dur)
    out: dict[str, dict[tuple[str, ...], list[tuple[int, int]]]] = {}
    for name, lo, hi in steps:
        lanes: dict[tuple[str, ...], list[tuple[int, int]]] = defaultdict(list)
        for key, start, dur in drawn:
            if lo <= start < hi:
                lanes[key].append((start - lo, dur))
        out[name] = dict(lanes)
    return out


def lane_key(name: str) -> tuple[str, ...]:
    if match := re.match(r"pid (\S+) tid (\S+)", name):
        return ("cpu", *match.groups())
    device, stream = re.match(r"GPU (\S+) stream (\S+)$", name).groups()  # type: ignore[union-attr]
    return ("gpu", device, stream)


@pytest.mark.parametrize("part", CHECKED)
def test_every_event_of_every_step_is_drawn_or_counted_in_a_band(part: str) -> None:
    path = gpu_trace(part)
    timeline = step_lanes(TraceContext(load_trace(path, progress=False)))
    expected = reference_lanes(path)
    assert [s.name for s in timeline.steps] == list(expected)
    for shown in timeline.steps:
        lanes = {lane_key(lane.name): lane for lane in shown.lanes}
        assert set(lanes) == set(expected[shown.name])
        for key, events in expected[shown.name].items():
            lane = lanes[key]
            assert lane.events == len(events) == len(lane.bars) + sum(b.count for b in lane.bands)
            # bars are events exactly as written, in integer ns from the step's start
            bars = Counter((b.start_ns, b.dur_ns) for b in lane.bars)
            assert not bars - Counter(events)
            # and what the bands hold is the rest: their summed durations, to the ns
            rest = sum(d for _, d in events) - sum(b.dur_ns for b in lane.bars)
            assert sum(b.busy_ns for b in lane.bands) == rest
            for band in lane.bands:
                assert band.count >= 2 and band.end_ns - band.start_ns >= 0


def test_the_median_step_is_shown_first() -> None:
    report, timeline = analyze_source(gpu_trace("v100_1rank_train_nsres"), lanes=True)
    assert timeline is not None
    walls = [s.wall_ms for s in report.analysis.steps]
    shown = timeline.steps[timeline.shown]
    assert shown.wall_ns / 1e6 == pytest.approx(sorted(walls)[(len(walls) - 1) // 2])


def test_the_gaps_add_up_to_the_steps_gpu_idle_time() -> None:
    report, timeline = analyze_source(gpu_trace("v100_1rank_train_nsres"), lanes=True)
    assert timeline is not None
    for lanes, result in zip(timeline.steps, report.analysis.steps, strict=True):
        assert result.gpu is not None
        drawn = sum(g.end_ns - g.start_ns for g in lanes.gaps)
        count = len(lanes.gaps) + lanes.small_gaps
        assert (drawn + lanes.small_gaps_ns) / 1e6 == pytest.approx(
            result.gpu.idle_ms, abs=count * 1e-6
        )
        assert all(g.end_ns - g.start_ns >= lanes.resolution_ns for g in lanes.gaps)


def test_each_gap_has_its_cause(write_trace: WriteTrace) -> None:
    events = [
        step(1, 0, 1_000),
        launch(5, 3, correlation=1),
        kernel("a", 10, 10, correlation=1),  # busy 10-20
        launch(100, 10, correlation=2),
        kernel("b", 115, 10, correlation=2),  # 20-115: late
        cpu("cudaDeviceSynchronize", 130, 70, cat="cuda_runtime"),  # ends at 200
        launch(300, 10, correlation=3),
        kernel("c", 320, 30, correlation=3),  # 125-200 launched late; 200-270 sync; 270-320 late
        launch(335, 3, correlation=4),
        kernel("d", 500, 10, correlation=4),  # 350-500: queued
    ]  # and 510-1000: nothing after it
    timeline = analyze_source(write_trace(document(events)), lanes=True).lanes
    assert timeline is not None
    (only,) = timeline.steps
    shown = [(g.start_ns, g.end_ns, g.cause) for g in only.gaps]
    assert shown == [
        (0, 10_000, WAITING_ON_HOST),  # the first launch ended at 8 µs: after the step began
        (20_000, 115_000, WAITING_ON_HOST),
        (125_000, 200_000, WAITING_ON_HOST),  # c's launch ended after the GPU went idle
        (200_000, 270_000, AFTER_SYNC),  # from the blocking call's end, as long as it blocked
        (270_000, 320_000, WAITING_ON_HOST),  # then c's launch, which ended at 310 µs
        (350_000, 500_000, NOT_KNOWN),
        (510_000, 1_000_000, NOTHING_AFTER),
    ]
    (gpu_lane,) = [lane for lane in only.lanes if lane.kind == "gpu"]
    launched = {timeline.names[b.name]: b.launch_ns for b in gpu_lane.bars}
    assert launched == {"a": 5_000, "b": 100_000, "c": 300_000, "d": 335_000}


def test_a_kernel_names_the_top_operator_that_launched_it(write_trace: WriteTrace) -> None:
    events = [
        step(1, 0, 1_000),
        cpu("aten::linear", 10, 200),
        cpu("aten::addmm", 20, 100),
        launch(30, 5, correlation=1),
        kernel("gemm", 40, 300, correlation=1),
    ]
    timeline = analyze_source(write_trace(document(events)), lanes=True).lanes
    assert timeline is not None
    lanes = timeline.steps[0].lanes
    bars = {timeline.names[b.name]: b for lane in lanes for b in lane.bars}
    assert "aten::addmm" not in bars  # not a top operator: the figure keeps it out
    assert bars["gemm"].owner == bars["aten::linear"].id
    assert bars["aten::linear"].depth == 1 and bars["ProfilerStep#1"].depth == 0


def test_short_events_merge_into_bands_that_count_them() -> None:
    start = np.array([0, 10, 20, 30, 1_000, 5_000, 5_003, 9_000], dtype=np.int64)
    dur = np.array([5, 5, 5, 5, 2_000, 1, 1, 3], dtype=np.int64)
    depth = np.zeros(8, dtype=np.int64)
    kind = np.array([2, 2, 2, 4, 2, 2, 2, 2], dtype=np.int64)
    name = np.array([1, 1, 2, 1, 3, 4, 4, 5], dtype=np.int64)
    bars, bands, kept = merge(start, dur, depth, kind, name, 100, first_id=7)
    assert [(b.start_ns, b.dur_ns, b.id) for b in bars] == [(1_000, 2_000, 7), (9_000, 3, 8)]
    assert kept.tolist() == [4, 7]  # the long one, and a short one alone
    assert [(b.start_ns, b.end_ns, b.count, b.busy_ns, b.kind, b.name) for b in bands] == [
        (0, 35, 4, 20, 2, 1),
        (5_000, 5_004, 2, 2, 2, 4),
    ]


def test_many_short_kernels_stay_within_the_budget(write_trace: WriteTrace) -> None:
    events: list[dict[str, Any]] = [step(1, 0, 100_000)]
    events += [kernel(f"k{i % 7}", 10 + i * 2, 1, correlation=-1) for i in range(40_000)]
    timeline = analyze_source(write_trace(document(events)), lanes=True).lanes
    assert timeline is not None
    (gpu_lane,) = [lane for lane in timeline.steps[0].lanes if lane.kind == "gpu"]
    assert gpu_lane.events == 40_000 == len(gpu_lane.bars) + sum(b.count for b in gpu_lane.bands)
    assert len(gpu_lane.bars) + len(gpu_lane.bands) <= BUDGET // 4


def test_the_json_report_leaves_the_timeline_to_the_html(write_trace: WriteTrace) -> None:
    """The report holds no lanes (the HTML renderer has them from the trace); lanes asked for
    are drawn, and round-trip as a Python value for who wants to save them."""
    report, lanes = analyze_source(write_trace(document([step(1, 0, 100)])), lanes=True)
    assert lanes is not None and "timeline" not in report.__struct_fields__
    data = json.loads(renderer("json").render([report_document(report, View(lanes=lanes))]))
    assert "timeline" not in data and data["schema"] == SCHEMA
    assert msgspec.json.decode(msgspec.json.encode(lanes), type=Lanes) == lanes
    html = renderer("html").render([report_document(report, View(lanes=lanes))])
    assert 'class="tl-data"' in html
    assert 'class="tl-data"' not in renderer("html").render([report_document(report)])


HOSTILE = "</script><script>alert(1)</script><!--\u2028\x1b[2J"


def _with_lanes(found: Analyzed) -> tuple[Report, View]:
    return found.report, View(lanes=found.lanes)


def test_a_hostile_name_stays_data_in_the_figure(write_trace: WriteTrace) -> None:
    events = [step(1, 0, 1_000), label(HOSTILE, 10, 500), cpu("aten::mm", 20, 100)]
    html = renderer("html").render(
        [report_document(*_with_lanes(analyze_source(write_trace(document(events)), lanes=True)))]
    )
    assert html.count("<script") == 2 and html.count("</script>") == 2  # the data, the code
    assert "<!--" not in html and "\x1b" not in html
    data = html.split('<script type="application/json" class="tl-data">', 1)[1]
    data = data.split("</script>", 1)[0]
    assert "<" not in data and ">" not in data and "\u2028" not in data  # escaped as \u...
    names = json.loads(data)["names"]
    assert "</script><script>alert(1)</script><!--\\u2028\\x1b[2J" in names  # made visible


def test_the_ranks_figure_is_aligned_only_on_trusted_clocks() -> None:
    report = fixture_report()  # its ranks name one host: one clock, trusted
    carried = fixture_job().lanes
    assert report.clocks.trusted
    doubted = msgspec.structs.replace(report.clocks, trusted=False)
    untrusted = ranks_timeline_section(msgspec.structs.replace(report, clocks=doubted), carried)
    assert untrusted is not None
    figure = untrusted.blocks[1]
    views = figure.views  # type: ignore[union-attr]
    assert "not trusted" in figure.caption  # type: ignore[union-attr]
    assert all(g.offset_ns == 0 for v in views for g in v.groups)
    clocks = msgspec.structs.replace(report.clocks, trusted=True, offsets_applied=True)
    trusted = ranks_timeline_section(msgspec.structs.replace(report, clocks=clocks), carried)
    assert trusted is not None
    for view in trusted.blocks[1].views:  # type: ignore[union-attr]
        number = int(view.label.split("#")[1])
        starts = {
            r.rank: next(s.start_us for s in r.steps if s.number == number) for r in report.ranks
        }
        first = min(starts.values())
        assert [g.offset_ns for g in view.groups] == [
            round((starts[int(g.label.split()[1])] - first) * 1000) for g in view.groups
        ]
        assert [g.label for g in view.groups] == [f"rank {r}" for r in sorted(starts)]


def test_the_largest_shared_trace_stays_under_3_mb_of_html() -> None:
    found = analyze_source(gpu_trace("v100_ddp2_rank1_train_profmem"), lanes=True)
    timeline = found.lanes
    assert timeline is not None
    items = sum(len(lane.bars) + len(lane.bands) for s in timeline.steps for lane in s.lanes)
    assert items + sum(len(s.gaps) for s in timeline.steps) <= BUDGET
    size = len(renderer("html").render([report_document(*_with_lanes(found))]).encode())
    print(f"HTML report of the 216k-event trace: {size / 1e6:.2f} MB")
    assert size < 3_000_000


def test_the_straggler_finding_marks_its_rank_and_phase_on_the_ranks_figure() -> None:
    report = fixture_report()
    section = ranks_timeline_section(report, fixture_job().lanes)
    assert section is not None
    figure = section.blocks[1]
    marks = figure.marks  # type: ignore[union-attr]
    assert len(marks) == len(report.findings)
    straggler = next(f for f in report.findings if f.rule == "straggler")
    rank = straggler.evidence.values()["rank"]
    mark = marks[report.findings.index(straggler)]
    view = figure.views[mark.view]  # type: ignore[union-attr]
    sizes = [len(g.lanes.lanes) for g in view.groups]
    index = [g.label for g in view.groups].index(f"rank {rank}")
    assert mark.lanes == tuple(range(sum(sizes[:index]), sum(sizes[: index + 1])))
    names = figure.names  # type: ignore[union-attr]
    assert mark.names and {names[n] for n in mark.names} == {straggler.evidence.values()["phase"]}
    assert 0 <= mark.start_ns < mark.end_ns <= view.span_ns
