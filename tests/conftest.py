"""Shared fixtures: the real traces (``STEPTRACE_TRACES``, default ../shared/traces), their
reports computed once per session, and a writer of synthetic traces.

Without the real traces, every test that needs one is skipped with the same one-line
reason, and everything else runs.
"""

from __future__ import annotations

import functools
import gzip
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest

import steptrace
from steptrace import pipeline
from steptrace.analysis.measure import TraceAnalysis
from steptrace.analysis.timeline.model import Lanes
from tests import paths, reference

REPO = paths.REPO
TRACES = Path(os.environ.get("STEPTRACE_TRACES", REPO.parent / "shared" / "traces"))
NOT_A_TRACE = "memory_timeline_export_raw__memory_analysis.raw.gz"
NO_TRACES = f"real traces not found in {TRACES} (set STEPTRACE_TRACES to their folder)"


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C as a terminal gives it: a suite started in the background of a shell without
    job control (``cmd &`` in a script) inherits SIGINT ignored, and so would every process
    it starts; the Ctrl-C tests then fail for a reason of the launch, not of steptrace."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        help="Rewrite tests/golden/ from the current renderers (review the diff).",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` are skipped, with the reason, where torch sees no CUDA device."""
    marked = [item for item in items if item.get_closest_marker("gpu")]
    if not marked:
        return
    try:
        import torch

        reason = None if torch.cuda.is_available() else "no CUDA device: run make test-gpu on one"
    except ImportError:
        reason = "torch is not installed"
    if reason is not None:
        for item in marked:
            item.add_marker(pytest.mark.skip(reason=reason))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Skipped tests, one line per reason (a missing traces folder is one line, not fifty)."""
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    for reason, count in sorted(reasons.items()):
        terminalreporter.write_line(f"SKIPPED {count}: {reason}", yellow=True)


def pytest_report_header() -> str:
    found = real_traces()
    return f"real traces: {len(found)} in {TRACES}" if found else f"real traces: {NO_TRACES}"


def real_traces() -> list[Path]:
    """Every Chrome trace in the traces folder (the memory-timeline export is not one)."""
    return sorted(p for p in TRACES.glob("*/*.gz") if p.name != NOT_A_TRACE)


def trace_params() -> list[Any]:
    """``parametrize`` values over every real trace, or one skipped case without them."""
    found = real_traces()
    if not found:
        return [pytest.param(None, marks=pytest.mark.skip(reason=NO_TRACES), id="no-traces")]
    return [pytest.param(p, id=p.name[:40]) for p in found]


def gpu_trace(name_part: str) -> Path:
    """The one real trace whose name contains ``name_part``; skips the test without them."""
    found = [p for p in real_traces() if name_part in p.name]
    if not found:
        pytest.skip(NO_TRACES)
    (match,) = found
    return match


def shared_file(relative: str) -> Path:
    """A file of the traces folder (not necessarily a trace); skips the test without it."""
    path = TRACES / relative
    if not path.exists():
        pytest.skip(NO_TRACES)
    return path


@functools.cache
def _report(path: Path) -> steptrace.Report:
    return steptrace.analyze(path)


def report_of(name_part: str) -> steptrace.Report:
    """The report of a real trace, computed once per session (reports are immutable)."""
    return _report(gpu_trace(name_part))


@functools.cache
def lanes_of(name_part: str) -> Lanes:
    """The steps' lanes of a real trace (what the HTML report draws), once per session."""
    return pipeline.lanes_of(gpu_trace(name_part))


def read_json(path: Path) -> Any:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


WriteTrace = Callable[..., Path]


@pytest.fixture
def write_trace(tmp_path: Path) -> WriteTrace:
    """Write a trace document (or raw text) to a fresh file and return its path."""
    counter = iter(range(1_000_000))

    def write(document: Any, *, name: str | None = None, gz: bool = False) -> Path:
        path = tmp_path / (name or f"trace{next(counter)}.json{'.gz' if gz else ''}")
        data = document if isinstance(document, bytes | str) else json.dumps(document)
        raw = data.encode() if isinstance(data, str) else data
        path.write_bytes(gzip.compress(raw) if gz else raw)
        return path

    return write


class Case(NamedTuple):
    """A real trace: its events read exactly (integer ns) and its analysis."""

    path: Path
    evs: list[reference.Ev]
    result: TraceAnalysis


@pytest.fixture(scope="session", params=trace_params())
def analyzed(request: pytest.FixtureRequest) -> Case:
    """Each shared trace in turn, with the integer-ns reference's view of its events.

    Session-scoped: pytest runs every test of every module on one trace before the next, so
    each trace is read exactly once per run and only one is held at a time.
    """
    path: Path = request.param
    evs = reference.events(reference.read_exact(path))
    return Case(path, evs, report_of(path.name).analysis)
