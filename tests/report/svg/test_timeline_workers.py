"""The DataLoader workers' lanes in the HTML report: labelled, coloured by batch, each
wait outlined and titled with the batch it received; an index read from a worker's file
stays text; a trace without worker files draws what it drew before.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from steptrace.pipeline import analyze_source
from steptrace.report.formats.renderers import renderer
from steptrace.report.sections.trace import View, report_document
from steptrace.report.svg.timeline_workers import batch_colors
from tests.analysis.timeline.test_workers import SLOW_FORK, Raw

MARKUP = "<img src=x onerror=alert(1)>&\"'"


def _html(path: Path) -> str:
    report, lanes = analyze_source(path, lanes=True)
    assert lanes is not None
    return renderer("html").render([report_document(report, View(lanes=lanes))])


def _views(page: str) -> list[str]:
    return re.findall(r'<svg class="tlv".*?</svg></svg>', page, flags=re.S)


def test_worker_lanes_are_labelled_and_each_wait_names_its_batch() -> None:
    raw = Raw(SLOW_FORK)
    page = _html(SLOW_FORK / "t.json.gz")
    views = _views(page)
    steps = sorted(raw.steps, key=lambda n: int(n[13:]))
    assert len(views) == len(steps) + 1  # and the steps together
    for view, step in zip(views, steps, strict=False):
        for head, _ in raw.workers:
            assert f">worker {head['worker']} (pid {head['pid']})</text>" in view
        ((_, k, worker),) = raw.received(step)
        pid = raw.pids[k % len(raw.pids)]
        said = f"waits for batch {k} from worker {worker} (pid {pid})"
        outlines = re.findall(r'<rect class="wait"[^>]*stroke="(#\w+)"[^>]*><title>([^<]*)', view)
        assert outlines == [(batch_colors(k)[1], said)]
        assert f"<title>{said}</title></rect>" in view.split('class="wait"')[0]  # on the bar
        # the batch's drawn bars: its colours, owned by the wait's bar
        (wait_id,) = re.findall(r'data-i="(\d+)"[^>]*><title>' + re.escape(said), view)
        owned = re.findall(r'<rect class="b k(\d+)" fill="(#\w+)"[^>]*data-o="(\d+)"', view)
        shades = {"9": batch_colors(k)[0], "10": batch_colors(k)[1]}
        assert all(o == wait_id and fill == shades[kind] for kind, fill, o in owned)
    assert "DataLoader worker" in page and "a hue per batch" in page


def test_an_index_with_markup_stays_text(tmp_path: Path) -> None:
    shutil.copy(SLOW_FORK / "t.json.gz", tmp_path / "t.json.gz")
    shutil.copytree(SLOW_FORK / "t.workers", tmp_path / "t.workers")
    (worker,) = (tmp_path / "t.workers").glob("worker-1-*.jsonl")
    head, *batches = [json.loads(line) for line in worker.read_text().splitlines()]
    for batch in batches:
        for sample in batch["samples"]:
            if sample[0] % 8 == 5:  # the slow ones: wide enough to carry their name
                sample[0] = f"{MARKUP}{sample[0]}"
    worker.write_text("\n".join(json.dumps(x) for x in [head, *batches]) + "\n")
    page = _html(tmp_path / "t.json.gz")
    assert "<img" not in page and "onerror=alert(1)>" not in page
    drawn = "&lt;img src=x onerror=alert(1)&gt;&amp;&quot;&#x27;13 (batch 3 from worker 1)"
    assert f">{drawn}</text>" in page  # the slow sample's name on its bar
    assert "\\u003cimg src=x onerror=alert(1)\\u003e\\u0026" in page  # in the names' JSON


def test_without_worker_files_nothing_of_them_is_drawn(tmp_path: Path) -> None:
    shutil.copy(SLOW_FORK / "t.json.gz", tmp_path / "t.json.gz")
    page = _html(tmp_path / "t.json.gz")
    assert 'class="wait"' not in page and "<title>waits for" not in page
    timeline = "".join(_views(page))
    assert timeline and "worker" not in timeline and ' fill="#' not in timeline
    assert "DataLoader samples" not in page and "a hue per batch" not in page
