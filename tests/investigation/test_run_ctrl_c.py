"""Ctrl-C during ``investigate``'s checks: the report with the checks done so far, the
--out reports written, where the trace is kept said, exit 130 (a real process in its own
group, SIGINT to the whole group once the first check has begun); the same when the
workload's own step catches the Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.paths import TESTS

pytest.importorskip("torch", reason="investigate captures with torch")
pytestmark = pytest.mark.slow

STEPTRACE = str(Path(sys.executable).parent / "steptrace")
WORKLOADS = str(TESTS / "loop_workloads.py")


@pytest.mark.parametrize("workload", ["per_tensor_optimizer", "keeps_ctrl_c"])
def test_ctrl_c_during_the_checks_keeps_what_is_known(tmp_path: Path, workload: str) -> None:
    trace = tmp_path / "t.json"
    process = subprocess.Popen(
        [
            STEPTRACE,
            "investigate",
            f"{WORKLOADS}:{workload}",
            "--out",
            str(trace),
            "--budget",
            "300",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stderr is not None
    said = []
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        said.append(line)
        if not line or "Checking " in line:
            break
    time.sleep(2)  # inside the first check
    os.killpg(process.pid, signal.SIGINT)
    out, rest = process.communicate(timeout=120)
    errors = "".join(said) + rest
    assert process.returncode == 130, errors
    assert "Traceback" not in errors
    assert f"the trace is kept at {trace}" in errors
    assert "Not run: interrupted by Ctrl-C." in out  # the check that was running
    assert trace.is_file()
    written = {p.name for p in tmp_path.iterdir()}
    assert {"t.report.json", "t.report.md", "t.report.html"} <= written, written
