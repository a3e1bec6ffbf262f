"""``steptrace demo`` end to end (quick A/B checks), and what it writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

pytest.importorskip("torch", reason="the demo needs torch (installed by make test)")

from steptrace.cli import app
from steptrace.pipeline import read_report
from steptrace.report.model import Report

pytestmark = pytest.mark.slow  # end to end
REPORTS = {"trace.json", "trace.scenario.json", "report.json", "report.md", "report.html"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Result, Path]:
    """One whole demo, the ranks part included (the default), shared by the tests that read
    what it says and writes: the CLI's result and the folder it made."""
    out = tmp_path_factory.mktemp("demo")
    args = ["demo", "--out", str(out), "--quick", "--device", "cpu", "--ranks"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.stderr
    (folder,) = out.iterdir()
    return result, folder


def test_demo_runs_the_method_and_writes_every_report(demo: tuple[Result, Path]) -> None:
    result, folder = demo
    names = {p.name for p in folder.iterdir()}
    assert names >= REPORTS
    assert "Question:" in result.stderr and "Findings:" in result.stderr
    report = json.loads((folder / "report.json").read_text())
    # the folder was renamed when complete: files are named relative to it, never stale
    assert report["analysis"]["trace"]["path"] == "trace.json"
    assert report["capture"]["traces"] == ["trace.json"]
    sidecar = json.loads((folder / "trace.scenario.json").read_text())
    assert sidecar["capture"]["traces"] == ["trace.json"] and ".partial" not in json.dumps(sidecar)
    assert report["scenario"]["question"].startswith("Why is a training step")
    rules = {f["rule"] for f in report["findings"]}
    assert "input-pipeline" in rules  # the planted slow pipeline is found
    # the demo is investigate: the planted pipeline's check ran and supports its hypothesis
    checks = {c["rule"]: c for c in report["checks"]}
    assert set(checks) == rules  # every finding has its check's outcome
    pipeline = checks["input-pipeline"]
    assert pipeline["outcome"] == "supported" and pipeline["check"] == "prepared-batch"
    assert len(pipeline["comparison"]["samples"]["a"]) >= 6  # every raw sample is kept
    assert pipeline["elapsed_s"] <= pipeline["budget_s"]
    # one claim, told once: the verdict's top findings as the findings say, after checks
    said = {f["rule"]: (f["severity"], f["level"]) for f in report["findings"]}
    assert [(t["share"], t["level"]) for t in report["verdict"]["top"]] == [
        said[t["rule"]] for t in report["verdict"]["top"]
    ]
    # the constant rebuilt every step cannot show on the CPU: the report says why
    html = (folder / "report.html").read_text()
    assert 'class="tl"' in html and html.count("<script>") == 1  # the timeline's one script
    markdown = (folder / "report.md").read_text()  # every format shows the same sections
    html = (folder / "report.html").read_text()
    for page in (markdown, html):
        assert "constant rebuilt from a Python list" in page and "no finding on the CPU" in page
        assert ".partial" not in page  # titles name the final folder's files
    # the page holds the job's report after the trace's: the trace's ids are the first's (d0-)
    assert "## Checks" in markdown and 'id="d0-checks"' in html
    assert markdown.count("## A/B outside the profiler") == sum(
        c["comparison"] is not None for c in report["checks"]
    )
    assert "supported" in markdown.split("## Checks")[1]
    assert str(folder) in result.stdout


def test_demo_refusals_leave_nothing(tmp_path: Path) -> None:
    import torch

    runner = CliRunner()
    if not torch.cuda.is_available():
        cuda = runner.invoke(app, ["demo", "--out", str(tmp_path), "--device", "cuda"])
        assert cuda.exit_code == 2 and "sees no GPU" in cuda.stderr
    banana = runner.invoke(app, ["demo", "--out", str(tmp_path), "--device", "banana"])
    assert banana.exit_code == 2 and "unknown device" in banana.stderr
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert runner.invoke(app, ["demo", "--out", str(a_file)]).exit_code == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_demo_ranks_part_finds_the_planted_straggler(demo: tuple[Result, Path]) -> None:
    result, folder = demo
    names = {p.name for p in folder.iterdir()}
    assert {"ranks.json", "ranks.md", "ranks.html", "ranks", "report.html"} <= names
    job = json.loads((folder / "ranks.json").read_text())
    assert job["schema"] == "steptrace.ranks/2"
    assert [r["path"] for r in job["ranks"]] == [f"ranks/rank-{k}.json.gz" for k in range(4)]
    assert all((folder / r["path"]).is_file() for r in job["ranks"])
    first = job["stragglers"][0]
    assert (first["rank"], first["phase"]) == (2, "read_batch")  # DEMO_PLANT
    line = [x for x in result.stderr.splitlines() if "Ranks: rank 2 is the straggler" in x]
    assert len(line) == 1 and "in read_batch" in line[0]
    page = (folder / "report.html").read_text()
    assert page.count("<h1>") == 2 and "Rank x step matrix" in page  # the job after the trace
    assert page.count('<div class="tl"') == 2 and page.count("<script>") == 1  # two figures
    assert "## Rank x step matrix" in (folder / "ranks.md").read_text()
    assert "ranks.html" in result.stdout


def test_without_ranks_the_demo_writes_the_trace_s_reports_alone(
    demo: tuple[Result, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--no-ranks: no ranks recorded, none written, the page the trace's report alone. The
    investigation is the shared demo's, read back: what it finds is the first test's."""
    _, ran = demo

    def investigated(workload: object, *, out: Path, **_: Any) -> Report:
        shutil.copyfile(ran / "trace.json", out)
        return read_report(ran / "report.json")

    def recorded(folder: object) -> object:
        raise AssertionError("--no-ranks recorded the ranks")

    monkeypatch.setattr("steptrace.investigation.investigate", investigated)
    monkeypatch.setattr("steptrace.capturing.ranks.distributed.record_demo_ranks", recorded)
    args = ["demo", "--out", str(tmp_path), "--quick", "--device", "cpu", "--no-ranks"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.stderr
    (folder,) = tmp_path.iterdir()
    names = {p.name for p in folder.iterdir()}
    assert names == REPORTS  # no ranks.json, ranks.md, ranks.html nor ranks/
    page = (folder / "report.html").read_text()
    assert page.count("<h1>") == 1 and "Rank x step matrix" not in page
    assert 'id="checks"' in page  # the one report's sections, their ids unprefixed
    assert "Recording 4 gloo ranks" not in result.stderr and "ranks.html" not in result.stdout
    assert str(folder) in result.stdout
