"""The multi-rank HTML report in a real headless Chromium at 8, 64 and 512 synthetic ranks.

Each page must load without a console error or a request, show its heatmaps, stay within
the window's width (no horizontal scrolling), and draw no two labels of a chart over each
other. Screenshots are written to ``STEPTRACE_SCREENSHOTS`` when it is set (to look at).
"""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from steptrace.pipeline import Job, analyze_job
from steptrace.report.formats.renderers import renderer
from steptrace.report.ranks.sections import ranks_document
from tests.across.ranks.synthetic import Plan, write_job
from tests.browser import loaded, need_chromium

pytestmark = pytest.mark.slow

# Overlapping text boxes of one SVG, as the browser laid them out (a 1 px tolerance).
OVERLAPS = """() => {
  const found = [];
  for (const svg of document.querySelectorAll('svg')) {
    const boxes = [...svg.querySelectorAll('text')]
      .map(t => [t.textContent, t.getBoundingClientRect()]);
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const [a, p] = boxes[i], [b, q] = boxes[j];
      if (p.left < q.right - 1 && q.left < p.right - 1
          && p.top < q.bottom - 1 && q.top < p.bottom - 1) found.push(a + ' / ' + b);
    }
  }
  return found;
}"""


@functools.cache
def synthetic(ranks: int) -> Job:
    """A job with rank 5 slower by 6 ms in read_batch, and scheduling noise, its lanes."""
    plan = Plan(
        ranks=ranks,
        steps=3,
        collectives=1,
        slow_rank=5,
        delay_ns=6_000_000,
        noise_ns=300_000,
        seed=ranks,
    )
    with tempfile.TemporaryDirectory() as folder:
        paths, _ = write_job(plan, Path(folder))
        return analyze_job(paths, progress=False, lanes=True)


def _browse(html: str, folder: Path, shot: str) -> dict[str, Any]:
    page_file = folder / "ranks.html"
    page_file.write_text(html, encoding="utf-8")
    with loaded(page_file) as (page, problems):
        out = {
            "problems": problems,
            "svgs": page.evaluate(
                "[...document.querySelectorAll('svg')].filter(s => !s.closest('.tl')).length"
            ),
            "rank_groups": page.evaluate(
                "[...document.querySelectorAll('.tl svg.tlv')]"
                ".filter(s => s.style.display !== 'none')[0].querySelectorAll('g.grp').length"
            ),
            "cells": page.locator("svg rect").count(),
            "scroll": page.evaluate("document.documentElement.scrollWidth"),
            "width": page.evaluate("document.documentElement.clientWidth"),
            "overlaps": page.evaluate(OVERLAPS),
            "svg_widths": page.evaluate(
                "[...document.querySelectorAll('svg')].map(s => s.getBoundingClientRect().right)"
            ),
        }
        where = os.environ.get("STEPTRACE_SCREENSHOTS")
        if where:
            page.screenshot(path=str(Path(where) / shot), full_page=True)
    return out


@pytest.mark.parametrize("ranks", [8, 64, 512])
def test_the_ranks_page_renders_cleanly(ranks: int, tmp_path: Path) -> None:
    need_chromium()  # before building 512 ranks
    job = synthetic(ranks)
    report = job.report
    assert len(report.ranks) == ranks and report.stragglers[0].rank == 5
    html = renderer("html").render([ranks_document(report, lanes=job.lanes)])
    seen = _browse(html, tmp_path, f"ranks-{ranks}.png")
    assert seen["problems"] == []
    assert seen["svgs"] == 2  # the rank x step heatmap and the phases one
    assert seen["rank_groups"] == min(ranks, 16)  # the timeline: a lane group per rank carried
    assert seen["cells"] >= min(ranks, 128) * 3  # every rank (or bin) drawn for each step
    assert seen["scroll"] <= seen["width"]  # no horizontal scrolling
    assert all(right <= seen["width"] for right in seen["svg_widths"])
    assert seen["overlaps"] == []
