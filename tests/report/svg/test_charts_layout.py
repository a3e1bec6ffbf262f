"""The HTML report's charts as a new user sees them, in headless Chromium: a long path
stays inside the title, step labels and time ticks never overlap, legends show whole
names, and what the caption calls grey is drawn grey."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import steptrace
from steptrace.report.formats.renderers import renderer
from steptrace.report.sections.trace import report_document
from steptrace.report.svg import charts as svg
from tests import tracegen
from tests.browser import loaded

LABELS = (
    "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
    "a_rather_long_label_for_the_forward_pass_of_the_model",
    "optimizer_step",
)
STEPS = 12


def _page(tmp_path: Path) -> Path:
    """A 12-step trace with three labels, under a long path without spaces."""
    events = []
    for k in range(STEPS):
        start = k * 10_000.0
        events.append(tracegen.step(k + 1, start, 10_000 + 500 * k))
        events += [
            tracegen.label(name, start + 100 + 3000 * j, 2500) for j, name in enumerate(LABELS)
        ]
    folder = tmp_path / ("very_long_folder_name_" * 5) / ("another_long_folder_" * 6)
    folder.mkdir(parents=True)
    trace = folder / ("a_trace_file_with_a_long_name_" * 3 + ".json")
    trace.write_text(__import__("json").dumps(tracegen.document(events, gpu_devices=False)))
    report = steptrace.analyze(trace)
    page = tmp_path / "report.html"
    page.write_text(renderer("html").render([report_document(report)]), encoding="utf-8")
    return page


def test_the_outside_labels_series_is_grey_as_its_caption_says(tmp_path: Path) -> None:
    html = _page(tmp_path).read_text(encoding="utf-8")
    labels = html.split('id="labels"')[1].split("</section>")[0]
    swatch = re.search(r'<rect [^>]*fill="([^"]+)"><title>outside labels</title>', labels)
    assert swatch is not None and swatch.group(1) == svg.TEXT_GREY
    assert "dark grey is the step&#x27;s thread outside every label" in labels
    assert svg.TEXT_GREY not in [c.lower() for c in svg.PALETTE]


def _boxes(page: Any, selector: str) -> list[dict[str, float]]:
    boxes: list[dict[str, float]] = page.eval_on_selector_all(
        selector,
        "els => els.map(e => { const b = e.getBoundingClientRect();"
        " return {x: b.left, y: b.top, r: b.right, b: b.bottom, text: e.textContent}; })",
    )
    return boxes


def _overlapping(boxes: list[dict[str, float]]) -> list[tuple[Any, Any]]:
    return [
        (a["text"], b["text"])
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if a["x"] < b["r"] and b["x"] < a["r"] and a["y"] < b["b"] and b["y"] < a["b"]
    ]


@pytest.mark.slow
def test_titles_ticks_and_legends_fit_in_chromium(tmp_path: Path) -> None:
    with loaded(_page(tmp_path)) as (page, problems):
        title = page.eval_on_selector("h1", "e => [e.scrollWidth, e.clientWidth]")
        scroll = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        steps = _boxes(page, "#steps svg text")
        labels = _boxes(page, "#labels svg text")
        legend_room = page.eval_on_selector("#labels svg", "e => e.getBoundingClientRect().right")
    assert problems == []
    assert title[0] <= title[1] and scroll[0] <= scroll[1]  # the path wraps inside the page
    step_names = [b for b in steps if str(b["text"]).startswith("ProfilerStep#")]
    assert len(step_names) >= STEPS // 2  # labelled, thinned at most by half
    assert _overlapping(steps) == []
    assert _overlapping(labels) == []  # row names, time ticks, legend
    ticks = [b for b in labels if re.fullmatch(r"[0-9.]+", str(b["text"]))]
    assert len(ticks) == 5 and ticks[0]["text"] == "0"  # a time axis from 0
    legend = {str(b["text"]): b for b in labels if str(b["text"]) in (*LABELS, "outside labels")}
    assert set(legend) == {*LABELS, "outside labels"}  # every name whole
    assert all(b["r"] <= legend_room + 0.5 for b in legend.values())  # none clipped


@pytest.mark.parametrize("top_ms", [3.46, 365.26, 13_336.32, 9_876_543.2])
def test_the_bars_top_value_is_drawn_whole_in_plain_digits(tmp_path: Path, top_ms: float) -> None:
    page_path = tmp_path / "bars.html"
    page_path.write_text(f"<!doctype html><body>{svg.bars(['ProfilerStep#1'], [top_ms], 'ms')}")
    with loaded(page_path) as (page, problems):
        texts = _boxes(page, "svg text")
        left = page.eval_on_selector("svg", "e => e.getBoundingClientRect().left")
    assert problems == []
    (top,) = [b for b in texts if b["text"] not in ("0", "ms", "ProfilerStep#1")]
    assert "e" not in str(top["text"])  # 13,336, never 1.33e+04
    assert float(str(top["text"]).replace(",", "")) == pytest.approx(top_ms, rel=5e-3)
    assert top["x"] >= left  # not clipped at the chart's left edge
