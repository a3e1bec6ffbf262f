"""The timeline as a user works with it, in a real headless Chromium at 1400 x 900.

It spans the window; the names drawn on bars and gaps never take the pointer from the bar
or gap under them; a finding's link outlines its place and lanes and leaves every idle
gap its cause's colour; each GPU stream's launch queue is drawn below the lanes; the
consecutive steps around the median one are drawn together, with their boundaries and the
launch links across them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from steptrace.report.svg.timeline import CAUSES, GAP_COLORS
from tests import reference
from tests.browser import loaded
from tests.conftest import gpu_trace
from tests.report.svg.test_timeline_browser import VISIBLE, page_of, shot

pytestmark = pytest.mark.slow
SCREEN = (1400, 900)


def rgb(hex_colour: str) -> str:
    r, g, b = (int(hex_colour[k : k + 2], 16) for k in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


def test_the_figure_spans_the_window_and_names_never_block_the_pointer(tmp_path: Path) -> None:
    path, _, _ = page_of("kineto_v100_resnet50", tmp_path)
    with loaded(path, SCREEN) as (page, problems):
        page.locator(".tl").first.scroll_into_view_if_needed()
        figure = page.locator(".tl svg.tlv:visible").bounding_box()
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        named = page.evaluate(
            f"""(() => {{
              const out = [];
              for (const t of {VISIBLE}.querySelectorAll('g.tx text')) {{
                const r = t.getBoundingClientRect();
                if (r.width < 20 || r.top < 0 || r.bottom > window.innerHeight) continue;
                const x = r.left + r.width / 2, y = r.top + r.height / 2;
                const hit = document.elementFromPoint(x, y);
                out.push([hit.tagName, hit.dataset.s !== undefined, x, y]);
              }}
              return out;
            }})()"""
        )
        x, y = named[0][2], named[0][3]
        page.mouse.move(x, y)
        said = page.evaluate("document.querySelector('.tl .info').textContent")
    assert problems == []
    assert figure is not None and figure["width"] >= SCREEN[0] - 100 and overflow <= 0
    assert named and all(tag == "rect" and timed for tag, timed, _, _ in named)
    assert said != "hover or click a bar"


def test_a_finding_link_keeps_every_idle_gap_its_causes_colour(tmp_path: Path) -> None:
    path, report, _ = page_of("kineto_v100_resnet50", tmp_path)
    assert report.findings
    fills = (
        f"[...{VISIBLE}.querySelectorAll('rect.gap')]"
        ".map(g => [g.dataset.c, getComputedStyle(g).fill])"
    )
    with loaded(path, SCREEN) as (page, problems):
        before = page.evaluate(fills)
        jumps = page.locator("a.tl-jump")
        seen = []
        for k in range(jumps.count()):
            page.evaluate("window.scrollTo(0, 0)")
            jumps.nth(k).click()
            lit = page.evaluate(f"{VISIBLE}.querySelectorAll('rect.lane.hl').length")
            on_top = page.evaluate(
                f"""[...{VISIBLE}.querySelectorAll('rect.lane.hl, rect.mark')]
                    .map(r => getComputedStyle(r).fill)"""
            )
            seen.append((lit, on_top, page.evaluate(fills)))
        shot(page, "resnet50-timeline-finding.png")
    assert problems == []
    assert before and all(fill == rgb(GAP_COLORS[int(c)]) for c, fill in before)
    assert len(CAUSES) == len(GAP_COLORS)
    assert any(lit for lit, _, _ in seen)  # some link outlined its lanes
    for _, on_top, after in seen:
        assert all(fill == "none" for fill in on_top)
        assert after == before


def test_each_streams_launch_queue_is_drawn_with_its_peak(tmp_path: Path) -> None:
    path, _, timeline = page_of("v100_1rank_train_nsres", tmp_path)
    shown = timeline.steps[timeline.shown]
    peaks = [lane.queue.peak for lane in shown.lanes if lane.queue is not None]
    with loaded(path, SCREEN) as (page, problems):
        polygons = page.evaluate(f"{VISIBLE}.querySelectorAll('polygon.que').length")
        labels = page.evaluate(
            f"[...{VISIBLE}.querySelectorAll('text')].map(t => t.lastChild.textContent)"
            ".filter(t => t.startsWith('queued: '))"
        )
        legend = page.evaluate("document.querySelector('.tl').textContent")
    assert problems == []
    assert peaks and polygons == len(peaks)
    assert labels == [f"queued: up to {p}" for p in peaks]
    assert "launch queue (launched, not started)" in legend


def test_consecutive_steps_together_with_their_boundaries_and_links_across(
    tmp_path: Path,
) -> None:
    path, _, timeline = page_of("v100_1rank_train_nsres", tmp_path)
    both = timeline.together
    assert both is not None
    evs = reference.events(reference.read_exact(gpu_trace("v100_1rank_train_nsres")))
    windows = reference.step_windows(evs)
    names = [name for name, _, _ in windows]
    first = names.index(both.name.split(" to ")[0])
    # the raw JSON: where each later step begins, from the first one's start
    lo = windows[first][1]
    expected = [(start - lo, name) for name, start, _ in windows[first + 1 : first + 3]]
    assert list(both.boundaries) == expected
    with loaded(path, SCREEN) as (page, problems):
        options = page.evaluate("document.querySelector('.tl .pick').options.length")
        page.locator(".tl .pick").select_option(str(options - 1))
        lines = page.evaluate(f"{VISIBLE}.querySelectorAll('line.bd').length")
        across = page.evaluate(
            f"""(() => {{
              const v = {VISIBLE};
              const edges = [...v.querySelectorAll('line.bd')].map(l => +l.getAttribute('x1'));
              for (const k of v.querySelectorAll('rect.b[data-o][data-l]')) {{
                const owner = v.querySelector('rect.b[data-i="' + k.dataset.o + '"]');
                const a = +owner.getAttribute('x'), b = +k.getAttribute('x');
                if (edges.some(e => a < e && e <= b)) {{
                  k.dispatchEvent(new MouseEvent('click', {{bubbles: true}}));
                  return v.querySelectorAll('line.lnk').length;
                }}
              }}
              return -1;
            }})()"""
        )
        shot(page, "v100-steps-together.png")
    assert problems == []
    assert lines == len(expected) == 2
    assert across == 1  # a kernel launched in one step, run in the next, linked to its launch


def test_a_gap_while_the_batch_is_read_says_so(tmp_path: Path) -> None:
    path, _, timeline = page_of("kineto_v100_resnet50", tmp_path)
    evs = reference.events(reference.read_exact(gpu_trace("kineto_v100_resnet50")))
    loads = [e for e in evs if e.name.startswith("enumerate(DataLoader)#")]
    for (name, lo, hi), step in zip(reference.step_windows(evs), timeline.steps, strict=True):
        # the raw JSON: the DataLoader's spans inside the step, from its start
        spans = [(max(e.start, lo) - lo, min(e.end, hi) - lo) for e in loads]
        assert step.name == name and step.reading == tuple((a, b) for a, b in spans if a < b)
    with loaded(path, SCREEN) as (page, problems):
        widest = page.evaluate(
            f"""(() => {{
              const gaps = [...{VISIBLE}.querySelectorAll('rect.gap')];
              gaps.sort((a, b) => b.dataset.d - a.dataset.d);
              return [gaps[0].dataset.r, +gaps[0].dataset.s];
            }})()"""
        )
        page.locator(".tl").first.scroll_into_view_if_needed()
        gap = page.locator(".tl svg.tlv:visible rect.gap").nth(0)
        box = gap.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] - 2)
        said = page.evaluate("document.querySelector('.tl .info').textContent")
    assert problems == []
    assert widest[0] == "1" and widest[1] == 0  # the read at the step's start
    assert said.startswith("GPU idle, waiting on the host, while the batch is read: ")
