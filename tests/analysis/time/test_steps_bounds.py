"""Time bounded by design (issue #36.4): deep nesting and many steps are refused at once
past their documented bounds (``nesting.MOST_DEPTH``, ``steps.MOST_STEPS``), a Dask
scheduler's address where nothing answers ends in one line. (A user's step that hangs:
``test_user_code``.)
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from steptrace.analysis.time.steps import MOST_STEPS
from steptrace.trace.nesting import MOST_DEPTH
from tests.tracegen import PID, TID

STEPTRACE = str(Path(sys.executable).parent / "steptrace")


def run(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    began = time.monotonic()
    done = subprocess.run(
        [STEPTRACE, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    return done, time.monotonic() - began


def assert_refused(done: subprocess.CompletedProcess[str], problem: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("steptrace: error: "), done.stderr
    assert problem in lines[0], lines[0]


def annotation(name: str, ts: float, dur: float) -> dict[str, object]:
    event = {"ph": "X", "cat": "user_annotation", "name": name, "pid": PID, "tid": TID}
    return {**event, "ts": ts, "dur": dur}


@pytest.mark.parametrize("output", ["json", "html"])
def test_100000_nested_spans_are_refused_at_once(tmp_path: Path, output: str) -> None:
    depth = 100_000
    events = [annotation("ProfilerStep#1", 0, 20 * depth)]
    events += [annotation(f"n{k % 7}", 1 + k, 10 * depth - 2 * k) for k in range(depth)]
    path = tmp_path / "nested.json"
    path.write_text(json.dumps({"traceEvents": events}))
    done, seconds = run("analyze", str(path), "--format", output)
    assert_refused(done, f"nested more than {MOST_DEPTH} levels deep")
    assert seconds < 20


def test_nesting_within_the_bound_is_measured(tmp_path: Path) -> None:
    depth = 2_000
    events = [annotation("ProfilerStep#1", 0, 20 * depth)]
    events += [annotation(f"n{k}", 1 + k, 10 * depth - 2 * k) for k in range(depth)]
    path = tmp_path / "nested.json"
    path.write_text(json.dumps({"traceEvents": events}))
    done, seconds = run("analyze", str(path), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["analysis"]["steps"][0]["phases"]) == depth
    assert seconds < 30


@pytest.mark.parametrize("output", ["text", "html"])
def test_100000_steps_are_refused_at_once(tmp_path: Path, output: str) -> None:
    events = [annotation(f"ProfilerStep#{k}", 10 * k, 9) for k in range(100_000)]
    path = tmp_path / "steps.json"
    path.write_text(json.dumps({"traceEvents": events}))
    done, seconds = run("analyze", str(path), "--format", output)
    assert_refused(done, f"100,000 steps, more than the {MOST_STEPS:,}")
    assert seconds < 20


def test_a_scheduler_that_never_answers_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    events = [annotation("ProfilerStep#1", 0, 9)]
    for rank in (0, 1):
        doc = {"traceEvents": events, "distributedInfo": {"rank": rank, "world_size": 2}}
        (tmp_path / f"rank{rank}.json").write_text(json.dumps(doc))
    with socket.socket() as listener:  # accepts connections (the kernel does), says nothing
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        address = f"tcp://127.0.0.1:{listener.getsockname()[1]}"
        done, seconds = run("analyze", str(tmp_path), "--scheduler", address)
    assert_refused(done, f"Dask scheduler {address}: cannot connect (no answer within")
    assert seconds < 40


def test_a_rank_with_too_many_steps_is_refused_and_the_job_reported_without_it(
    tmp_path: Path,
) -> None:
    """A rank is a trace like any other: past the bound it is one warning line naming it,
    the other ranks' report is written, exit code 1."""
    world = 3
    for rank in range(world):
        count = MOST_STEPS + 1 if rank == 2 else 3
        events = [annotation(f"ProfilerStep#{k}", 10 * k, 9) for k in range(count)]
        doc = {"distributedInfo": {"rank": rank, "world_size": world}, "traceEvents": events}
        # distributedInfo first, as Kineto writes it: what tells analyze the traces are ranks
        (tmp_path / f"rank{rank}.json").write_text(json.dumps(doc))
    done, seconds = run("analyze", str(tmp_path), "--format", "json", "--jobs", "1")
    assert done.returncode == 1, done.stderr
    refused = [line for line in done.stderr.splitlines() if "steps, more than the" in line]
    assert len(refused) == 1 and "rank2.json" in refused[0], done.stderr
    assert f"{MOST_STEPS + 1:,} steps, more than the {MOST_STEPS:,}" in refused[0]
    report = json.loads(done.stdout)
    assert report["schema"].startswith("steptrace.ranks/")
    assert seconds < 60
