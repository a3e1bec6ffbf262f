"""The critical-path strip under the timeline's lanes: its rects are the path's segments.

The rects are read back from the HTML page and held to the segments of
``analysis.critical_path`` on real traces: every segment is in exactly one rect, a wide one
alone at its own x and width, narrow neighbours merged into a counted rect of their main
kind; each linked rect names a bar of its lane that holds it. Without the path, no strip.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from steptrace.analysis.critical.path import Segment, StepPath
from steptrace.analysis.critical.slices import KIND_NAMES
from steptrace.analysis.timeline.model import Lanes, StepLanes
from steptrace.pipeline import Analyzed, Tables, analyze_checked
from steptrace.report.document import PathStrip, TimelineFigure
from steptrace.report.formats.renderers import renderer
from steptrace.report.sections.timeline import timeline_section
from steptrace.report.sections.timeline_path import BUDGET, DETAIL, PathNames, in_view, path_strips
from steptrace.report.sections.trace import View, report_document
from steptrace.report.svg.timeline import PLOT
from tests.analysis.timeline.test_lanes import HOSTILE
from tests.conftest import WriteTrace, gpu_trace
from tests.tracegen import cpu, document, kernel, label, launch, step

RECT = re.compile(r"<rect ([^>]*)/>")
ATTR = re.compile(r'([\w-]+)="([^"]*)"')
SVG = re.compile(r'<svg class="tlv" data-v="(\d+)".*?</svg></svg>', re.S)
STRIP = re.compile(r'<g class="cps"[^>]*>(.*?)</g>', re.S)


def found(path: Path, critical: bool = True) -> Analyzed:
    checked = analyze_checked(path, lanes=True, tables=Tables(critical_path=critical))
    return checked.found


def page(analyzed: Analyzed) -> str:
    view = View(lanes=analyzed.lanes)
    return renderer("html").render([report_document(analyzed.report, view)])


def views(html: str) -> dict[int, str]:
    """Each view's SVG markup, by its index in the step menu."""
    return {int(m.group(1)): m.group(0) for m in SVG.finditer(html)}


def strips(svg: str) -> list[list[dict[str, str]]]:
    """The attributes of each strip's rects, strip by strip."""
    return [[dict(ATTR.findall(r)) for r in RECT.findall(s)] for s in STRIP.findall(svg)]


def ns(us: float, lo: int) -> int:
    return round(us * 1000) - lo


def drawn_segments(path: StepPath, step: StepLanes) -> list[tuple[Segment, int, int]]:
    """The path's segments cut to the view, in ns from its start."""
    lo = round(step.start_us * 1000)
    out = []
    for s in path.segments:
        start, end = max(ns(s.start_us, lo), 0), min(ns(s.end_us, lo), step.wall_ns)
        if end > start:
            out.append((s, start, end))
    return out


def figure(analyzed: Analyzed) -> TimelineFigure:
    section = timeline_section(analyzed.report, analyzed.lanes)
    assert section is not None and isinstance(section.blocks[1], TimelineFigure)
    return section.blocks[1]


def check_strip(
    rects: list[dict[str, str]], path: StepPath, step: StepLanes, strip: PathStrip
) -> int:
    """The rects against the segments: each segment in one rect, in order; returns how
    many rects merge several."""
    segments = drawn_segments(path, step)
    resolution = strip.resolution_ns
    assert resolution >= step.wall_ns // DETAIL
    assert len(rects) == len(strip.pieces) <= 2 * DETAIL
    scale = PLOT / step.wall_ns
    at, merged = 0, 0
    for rect in rects:
        count = int(rect.get("data-c", "1"))
        mine = segments[at : at + count]
        at += count
        start, end = mine[0][1], mine[-1][2]
        assert (int(rect["data-s"]), int(rect["data-d"])) == (start, end - start)
        assert float(rect["x"]) == pytest.approx(start * scale, abs=0.006)
        assert float(rect["width"]) == pytest.approx(max((end - start) * scale, 0.2), abs=0.006)
        by_kind = [0] * len(KIND_NAMES)
        for segment, lo, hi in mine:
            by_kind[KIND_NAMES.index(segment.kind)] += hi - lo
        kind = int(rect["class"].split()[0][1:])
        assert by_kind[kind] == max(by_kind)
        if count > 1:
            merged += 1
            assert all(hi - lo < resolution for _, lo, hi in mine)  # only narrow ones merge
            assert all(a[2] == b[1] for a, b in itertools.pairwise(mine))
            assert int(rect["data-k"]) == by_kind[kind]
    assert at == len(segments)  # every segment drawn, none twice
    return merged


@pytest.fixture(scope="module")
def event_sync() -> Analyzed:
    return found(gpu_trace("a100_cuda_event_sync__"))


def test_the_strip_draws_each_segment_at_its_time(event_sync: Analyzed) -> None:
    path, timeline = event_sync.report.analysis.critical_path, event_sync.lanes
    assert path is not None and timeline is not None
    svg = views(page(event_sync))[timeline.shown]
    (rects,) = strips(svg)
    step = timeline.steps[timeline.shown]
    (step_path,) = [p for p in path.steps if p.step == step.name]
    (strip,) = figure(event_sync).views[timeline.shown].paths
    assert strip.resolution_ns == step.wall_ns // DETAIL  # few segments: a pixel at full view
    merged = check_strip(rects, step_path, step, strip)
    assert 0 < merged < len(rects) < len(step_path.segments)  # some merged, most alone
    assert {r["class"].split()[0] for r in rects} >= {"p0", "p1", "p2", "p3"}


def test_a_segment_links_to_the_bar_it_ran_in(event_sync: Analyzed) -> None:
    timeline = event_sync.lanes
    assert timeline is not None
    html = page(event_sync)
    svg = views(html)[timeline.shown]
    (rects,) = strips(svg)
    data = json.loads(html.split('class="tl-data">', 1)[1].split("</script>", 1)[0])
    drawn = (dict(ATTR.findall(r)) for r in RECT.findall(svg))
    bars = {a["data-i"]: a for a in drawn if a.get("class", "").startswith("b ")}
    linked = [r for r in rects if "data-t" in r]
    assert len(linked) == sum(1 for r in rects if "data-c" not in r and r["class"] != "p4")
    for rect in linked:
        bar = bars[rect["data-t"]]
        start, end = int(rect["data-s"]), int(rect["data-s"]) + int(rect["data-d"])
        assert int(bar["data-s"]) <= start and end <= int(bar["data-s"]) + int(bar["data-d"])
        gpu = bar["class"].split()[1] not in ("k0", "k1")  # not a label nor an operator
        assert gpu == (rect["class"] == "p2")  # GPU work links to a bar on a stream
        if gpu:  # a kernel or a copy: its own bar
            assert data["names"][int(bar["data-n"])] == data["pathNames"][int(rect["data-n"])]


def test_no_strip_without_the_critical_path() -> None:
    html = page(found(gpu_trace("a100_cuda_event_sync__"), critical=False))
    assert '<g class="cps"' not in html and "critical path (under the lanes)" not in html
    data = html.split('class="tl-data">', 1)[1].split("</script>", 1)[0]
    assert "pathNames" not in json.loads(data)


def test_every_view_has_the_paths_of_its_steps() -> None:
    """Each step's view its own path; the steps drawn together, one strip each; the path
    past the view's end counted, not drawn."""
    analyzed = found(gpu_trace("kineto_v100_resnet50"))
    path, timeline = analyzed.report.analysis.critical_path, analyzed.lanes
    assert path is not None and timeline is not None and timeline.together is not None
    svgs, drawn = views(page(analyzed)), figure(analyzed).views
    for k, lanes in enumerate(timeline.steps):
        (rects,) = strips(svgs[k])
        (step_path,) = [p for p in path.steps if p.start_us == pytest.approx(lanes.start_us)]
        assert step_path.step == lanes.name
        check_strip(rects, step_path, lanes, drawn[k].paths[0])
    together = strips(svgs[len(timeline.steps)])
    inside = [p for p in path.steps if _in(p, timeline)]
    assert len(together) == len(inside) == 3
    last = drawn[len(timeline.steps)].paths
    for rects, step_path, strip in zip(together, inside, last, strict=True):
        check_strip(rects, step_path, timeline.together, strip)
    pieces = [len(p.pieces) for v in drawn for p in v.paths]
    assert sum(pieces) <= BUDGET and len(pieces) == len(path.steps) + 3
    hidden = re.findall(r"its last ([\d.,]+) ms are past this view", svgs[0])
    first = timeline.steps[0]
    past = path.steps[0].end_us - (first.start_us + first.wall_ns / 1000)
    assert past > 1_000 and hidden == [f"{past / 1000:.2f}"]  # the GPU's tail: 12 ms


def test_a_strip_over_its_share_is_drawn_coarser() -> None:
    analyzed = found(gpu_trace("kineto_v100_resnet50"))
    path, timeline = analyzed.report.analysis.critical_path, analyzed.lanes
    assert path is not None and timeline is not None
    step = timeline.steps[timeline.shown]
    (fine,) = path_strips(path, step, PathNames(), timeline.names)
    (coarse,) = path_strips(path, step, PathNames(), timeline.names, share=50)
    assert len(coarse.pieces) <= 50 < len(fine.pieces)
    assert coarse.resolution_ns >= 2 * fine.resolution_ns == 2 * (step.wall_ns // DETAIL)
    (step_path,) = in_view(path, step)
    for strip in (fine, coarse):  # every segment in one piece, the pieces one after the other
        assert sum(p.count for p in strip.pieces) == len(drawn_segments(step_path, step))
        assert all(a.end_ns == b.start_ns for a, b in itertools.pairwise(strip.pieces))


def _in(path: StepPath, timeline: Lanes) -> bool:
    assert timeline.together is not None
    window = timeline.together
    return window.start_us <= path.start_us < window.start_us + window.wall_ns / 1000


def test_a_trace_without_steps_still_has_its_strip(write_trace: WriteTrace) -> None:
    events = [
        label("train", 0, 1_000),
        cpu("aten::mm", 10, 300),
        launch(20, 10, correlation=1),
        kernel("gemm", 40, 600, correlation=1),
        cpu("cudaDeviceSynchronize", 320, 330, cat="cuda_runtime"),
    ]
    analyzed = found(write_trace(document(events)))
    path = analyzed.report.analysis.critical_path
    assert path is not None and len(path.steps) == 1
    (rects,) = strips(views(page(analyzed))[0])
    assert analyzed.lanes is not None
    (strip,) = figure(analyzed).views[0].paths
    check_strip(rects, path.steps[0], analyzed.lanes.steps[0], strip)
    assert "p2" in {r["class"] for r in rects}


def test_a_hostile_name_on_the_path_stays_data(write_trace: WriteTrace) -> None:
    events = [step(1, 0, 1_000), cpu(HOSTILE, 10, 500), cpu("aten::mm", 600, 100)]
    html = page(found(write_trace(document(events))))
    assert html.count("<script") == 2 and "<!--" not in html and "\x1b" not in html
    data = html.split('class="tl-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data and "\u2028" not in data
    assert "</script><script>alert(1)</script><!--\\u2028\\x1b[2J" in json.loads(data)["pathNames"]
