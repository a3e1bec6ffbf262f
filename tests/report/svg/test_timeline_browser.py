"""The timeline in a real headless Chromium: it draws, zooms, links, and follows a finding.

Each page is loaded from a file with no network (``tests.browser.loaded``): no console
error and no request may happen. Screenshots go to ``STEPTRACE_SCREENSHOTS`` when set.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import steptrace
from steptrace.analysis.timeline.model import Lanes
from steptrace.pipeline import analyze_source
from steptrace.report.formats.renderers import renderer
from steptrace.report.sections.trace import View, report_document
from tests.browser import loaded
from tests.conftest import gpu_trace, read_json

pytestmark = pytest.mark.slow

VISIBLE = "[...document.querySelectorAll('.tl svg.tlv')].filter(s => s.style.display !== 'none')[0]"


def page_of(part: str, folder: Path) -> tuple[Path, steptrace.Report, Lanes]:
    report, lanes = analyze_source(gpu_trace(part), lanes=True)
    assert lanes is not None
    path = folder / "report.html"
    page = renderer("html").render([report_document(report, View(lanes=lanes))])
    path.write_text(page, encoding="utf-8")
    return path, report, lanes


def threads_with_step_work(trace: Any, step_name: str) -> set[tuple[Any, Any]]:
    """From the raw JSON: threads with a label or an operator starting in the step."""
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    (step,) = [e for e in events if e.get("name") == step_name]
    lo, hi = step["ts"], step["ts"] + step["dur"]
    return {
        (e["pid"], e["tid"])
        for e in events
        if e.get("cat") in ("user_annotation", "cpu_op") and lo <= e["ts"] < hi
    }


def shot(page: Any, name: str) -> None:
    where = os.environ.get("STEPTRACE_SCREENSHOTS")
    if where:
        page.locator(".tl").first.screenshot(path=str(Path(where) / name))


def test_the_timeline_draws_zooms_and_follows_a_finding(tmp_path: Path) -> None:
    path, report, timeline = page_of("cpu_train_trace.json", tmp_path)
    assert report.findings
    shown = timeline.steps[timeline.shown]
    expected_lanes = len(
        threads_with_step_work(read_json(gpu_trace("cpu_train_trace.json")), shown.name)
    )
    with loaded(path) as (page, problems):
        lanes = page.evaluate(f"{VISIBLE}.querySelectorAll('text.ln').length")
        bars = page.evaluate(f"{VISIBLE}.querySelectorAll('rect.b').length")
        picked = page.evaluate("document.querySelector('.tl .pick').selectedOptions[0].text")
        whole = page.evaluate("document.querySelector('.tl').dataset.range")
        page.locator(".tl button[data-zoom='2']").click()
        zoomed = page.evaluate("document.querySelector('.tl').dataset.range")
        page.locator(".tl svg.tlv:visible").scroll_into_view_if_needed()
        box = page.locator(".tl svg.tlv:visible").bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 40)
        page.mouse.wheel(0, -300)
        wheeled = page.evaluate("document.querySelector('.tl').dataset.range")
        page.evaluate("window.scrollTo(0, 0)")
        page.locator("a.tl-jump").first.click()
        marked = page.evaluate("document.querySelector('.tl').dataset.range")
        marks = page.evaluate(f"{VISIBLE}.querySelectorAll('rect.mark').length")
        top = page.evaluate("document.querySelector('.tl').getBoundingClientRect().top")
        shot(page, "cpu-train-timeline.png")
    assert problems == []
    assert lanes == expected_lanes == 1 and bars > 10 and picked == shown.name
    lo, hi = map(float, whole.split())
    assert lo == 0 and hi == pytest.approx(shown.wall_ns, rel=1e-6)
    z_lo, z_hi = map(float, zoomed.split())
    assert z_hi - z_lo == pytest.approx((hi - lo) / 2, rel=1e-6)  # zoom in: half the range
    w_lo, w_hi = map(float, wheeled.split())
    assert w_hi - w_lo < z_hi - z_lo  # the wheel zooms further
    mark = json.loads(page_data(path))["marks"][0]
    m_lo, m_hi = map(float, marked.split())
    assert marks == 1 and m_lo <= mark["start"] and mark["end"] <= m_hi + 1
    assert abs(top) < 50  # scrolled to the figure


def page_data(path: Path) -> str:
    html = path.read_text(encoding="utf-8")
    return html.split('class="tl-data">', 1)[1].split("</script>", 1)[0]


def test_a_kernel_links_to_its_launch_and_steps_can_be_chosen(tmp_path: Path) -> None:
    path, _, timeline = page_of("kineto_v100_resnet50", tmp_path)
    with loaded(path) as (page, problems):
        kernel = page.locator(".tl svg.tlv:visible rect.b[data-o][data-l]").first
        kernel.dispatch_event("click")
        links = page.evaluate(f"{VISIBLE}.querySelectorAll('line.lnk').length")
        selected = page.evaluate(f"{VISIBLE}.querySelectorAll('.sel').length")
        info = page.evaluate("document.querySelector('.tl .info').textContent")
        shot(page, "resnet50-timeline-link.png")
        other = (timeline.shown + 1) % len(timeline.steps)
        page.locator(".tl .pick").select_option(str(other))
        now = page.evaluate(f"{VISIBLE}.dataset.v")
    assert problems == []
    assert links == 1 and selected == 2 and "launched at" in info
    assert now == str(other)
