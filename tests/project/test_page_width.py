"""No shipped HTML page scrolls sideways at 1400 px: wide tables wrap their headers at a
name's separators, long names break, charts shrink (issue #34.5), checked in Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from steptrace.cli import app
from tests.browser import loaded
from tests.conftest import gpu_trace, shared_file
from tests.paths import GOLDEN


def overflow_px(page_path: Path) -> int:
    """How far the page is wider than a 1400 px window (0: no sideways scroll)."""
    with loaded(page_path, size=(1400, 900)) as (page, problems):
        assert problems == []
        wider: int = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    return wider


@pytest.mark.parametrize("kind", ["cpu", "gpu", "ranks"])
def test_the_reports_fit_1400_px(kind: str) -> None:
    """The single-trace reports and the ranks report (its matrix of labels: 12 columns,
    headers such as Optimizer.zero_grad#SGD.zero_grad ms)."""
    assert overflow_px(GOLDEN / f"{kind}.html") == 0


def html_of(tmp_path: Path, *args: str) -> Path:
    result = CliRunner().invoke(app, [*args, "--format", "html"])
    assert result.exit_code == 0, result.stderr
    page = tmp_path / "page.html"
    page.write_text(result.stdout)
    return page


def test_a_diff_fits_1400_px(tmp_path: Path) -> None:
    before = shared_file("cpu/cpu_train_trace.json.gz")
    after = shared_file("cpu/cpu_train_trace_nw2.json.gz")
    assert overflow_px(html_of(tmp_path, "diff", str(before), str(after))) == 0


def test_long_kernel_names_and_the_critical_path_fit_1400_px(tmp_path: Path) -> None:
    qwen = gpu_trace("tracelens_h100")
    page = html_of(tmp_path, "analyze", str(qwen), "--critical-path")
    assert overflow_px(page) == 0
