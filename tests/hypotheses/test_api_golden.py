"""Golden findings: each trace's verdict and findings, one small text file per trace.

A change to a rule, a threshold or a claim shows up here as a readable diff of what it does
to every shared trace (and the public ones in tests/fixtures/public): the verdict's bound and
sentence, then each finding's rule, level and share in the report's order. Shares are whole
percents, as the report's Findings section shows them, so float noise does not churn the
files. Regenerate them on purpose, then review the diff before committing:

    .venv/bin/python -m pytest tests/hypotheses/test_api_golden.py --update-goldens
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import pytest

import steptrace
from tests.conftest import NO_TRACES, REPO, TRACES, real_traces, report_of, trace_params
from tests.paths import GOLDEN as GOLDEN_FOLDER
from tests.public_traces import B200, MI300X, public_report

GOLDEN = GOLDEN_FOLDER / "findings"
PUBLIC_TRACES = (B200, MI300X)  # tests/fixtures/public's traces (its .json is figures)
UPDATE = ".venv/bin/python -m pytest tests/hypotheses/test_api_golden.py --update-goldens"
BASIS = {  # what a share is of, as the report's Findings section names it
    "step time": "step",
    "memory peak": "memory peak",
    "reserved memory": "reserved memory",
    "allocated bytes": "allocated bytes",
}


def golden_name(trace: Path) -> str:
    """The golden file of a trace: its name without ``.json.gz`` (or ``.json``, ``.gz``)."""
    return trace.name.removesuffix(".gz").removesuffix(".json") + ".txt"


def summary(report: steptrace.Report, source: str) -> str:
    """The verdict and the findings, one finding a line: level, share, rule."""
    verdict = report.verdict
    bound = verdict.bound + (f" ({verdict.gpu_bound})" if verdict.gpu_bound else "")
    lines = [
        f"# {source}: verdict and findings (tests/hypotheses/test_api_golden.py)",
        f"bound: {bound} on {verdict.on}",
        f"sentence: {verdict.sentence}",
        f"top: {', '.join(t.rule for t in verdict.top) or '(none)'}",
        f"findings: {len(report.findings)}",
    ]
    for found in report.findings:
        share = f"{100 * found.severity:.0f}% of {BASIS[found.basis]}"
        minor = "  (minor)" if found.minor else ""
        lines.append(f"  {found.level:<6}  {share:<24}  {found.rule}{minor}")
    return "\n".join(lines) + "\n"


def check_golden(text: str, golden: Path, config: Any) -> None:
    """Equal to its golden file, or a failure showing the unified diff (golden -> now)."""
    if config.getoption("--update-goldens"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    if not golden.exists():
        pytest.fail(f"{golden.relative_to(REPO)} is missing: run {UPDATE}", pytrace=False)
    expected = golden.read_text(encoding="utf-8")
    if text != expected:
        diff = difflib.unified_diff(
            expected.splitlines(keepends=True),
            text.splitlines(keepends=True),
            fromfile=f"{golden.relative_to(REPO)} (golden)",
            tofile="now",
        )
        pytest.fail(
            f"the findings changed; if on purpose, run {UPDATE} and review the diff:\n"
            + "".join(diff),
            pytrace=False,
        )


@pytest.mark.parametrize("path", trace_params())
def test_shared_trace_findings_match_their_golden_file(
    path: Path, request: pytest.FixtureRequest
) -> None:
    source = path.relative_to(TRACES).as_posix()
    check_golden(summary(report_of(path.name), source), GOLDEN / golden_name(path), request.config)


@pytest.mark.parametrize("path", PUBLIC_TRACES, ids=lambda p: p.name[:40])
def test_public_trace_findings_match_their_golden_file(
    path: Path, request: pytest.FixtureRequest
) -> None:
    source = f"tests/fixtures/public/{path.name}"
    check_golden(summary(public_report(path), source), GOLDEN / golden_name(path), request.config)


def test_every_trace_has_one_golden_file_and_none_is_orphaned() -> None:
    shared = real_traces()
    if not shared:
        pytest.skip(NO_TRACES)
    traces = [*shared, *PUBLIC_TRACES]
    expected = {golden_name(p) for p in traces}
    assert len(expected) == len(traces), "two traces would share a golden file"
    present = {p.name for p in GOLDEN.glob("*")}
    missing = sorted(expected - present)
    orphaned = sorted(present - expected)
    assert not missing and not orphaned, (
        f"no golden file for {missing} (run {UPDATE}); "
        f"golden files without a trace (git rm them): {orphaned}"
    )
