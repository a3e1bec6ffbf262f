"""Ctrl-C at any time: exit code 130 and one line, no traceback from any process, nothing
partial left on disk (issues #36.6 and #37.5).

Each command runs as a real process in its own group, and SIGINT goes to the whole group,
as a terminal's Ctrl-C does (the fork server, the resource tracker and every worker get
it too), at times that hit its start-up imports, the workers' start, the decoding, the
report and the exit. A run that finished before the signal must have ended normally; one
interrupted before steptrace's first lines ran (the interpreter's start-up, which a
loaded machine stretches) is the interpreter's to report.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import gpu_trace
from tests.paths import REPO

pytestmark = pytest.mark.slow  # dozens of real processes

STEPTRACE = str(Path(sys.executable).parent / "steptrace")
ABORTED = ["", "steptrace: error: aborted"]
# what investigate says when Ctrl-C stops its checks, before "aborted"
REPORT_LINES = ("steptrace: reports ", "steptrace: interrupted by Ctrl-C during the checks")


def interrupted(args: list[str], delay_s: float) -> tuple[int, str, str]:
    """The command's exit code, stdout and stderr when the group gets SIGINT at ``delay_s``."""
    # faulthandler: a process that outlives its Ctrl-C prints every thread's stack on the
    # SIGABRT below, so a hang says where it is
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "PYTHONFAULTHANDLER": "1"}
    process = subprocess.Popen(
        [STEPTRACE, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
        start_new_session=True,
    )
    time.sleep(delay_s)
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
    try:
        out, err = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        tree = subprocess.run(
            ["ps", "-o", "pid,ppid,stat,etime,args", "-g", str(process.pid)],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        os.killpg(process.pid, signal.SIGABRT)
        _, err = process.communicate(timeout=30)
        pytest.fail(f"no exit 120 s after SIGINT at {delay_s} s:\n{tree}\n{err[-20000:]}")
    return process.returncode, out, err


def before_steptrace(code: int, err: str) -> bool:
    """Interrupted before steptrace's Ctrl-C guard was installed: in the interpreter's own
    start-up (killed by the signal, nothing said; or, inside its ``site`` import, its fatal
    error and exit code 1, seen under load) or in the few imports before the guard (the
    interpreter's traceback, through no steptrace code but those imports)."""
    ours = [f for f in re.findall(r'File "([^"]+)"', err) if f"{os.sep}steptrace{os.sep}" in f]
    in_site = err.startswith("Fatal Python error: init_import_site")
    if code == 1 and in_site and err.rstrip().endswith("KeyboardInterrupt") and not ours:
        return True
    if code != -signal.SIGINT:
        return False
    guard = ("steptrace/__init__.py", "steptrace/process/ctrl_c.py")
    return err == "" or (
        err.rstrip().endswith("KeyboardInterrupt") and all(f.endswith(guard) for f in ours)
    )


def assert_aborted_or_done(code: int, out: str, err: str) -> None:
    if before_steptrace(code, err):
        return
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "resource_tracker" not in err and "leaked" not in err, err
    lines = [line for line in err.splitlines() if "steptrace: warning:" not in line]
    if code == 130:
        assert [line for line in lines if line.strip()] == ABORTED[1:], err
        return
    assert code == 0 and out, (code, err)  # finished before the signal arrived


@pytest.fixture(scope="module")
def rank_doc() -> dict[str, Any]:
    """A real rank trace, decoded once for the fixtures below (which leave it as it is)."""
    doc: dict[str, Any] = json.loads(gzip.decompress(gpu_trace("v100_ddp2_rank1").read_bytes()))
    return doc


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory, rank_doc: dict[str, Any]) -> Path:
    """Six rank traces of one job (a real rank trace, renumbered): encoded once, each rank's
    number written in its place (the JSON text ``json.dumps`` gives that rank's document)."""
    folder = tmp_path_factory.mktemp("job")
    mark = 987_654_321  # a number the trace holds nowhere else
    info = {**rank_doc.get("distributedInfo", {}), "rank": mark, "world_size": 6}
    text = json.dumps({**rank_doc, "distributedInfo": info})
    assert text.count(f'"rank": {mark}') == 1
    for rank in range(6):
        data = text.replace(f'"rank": {mark}', f'"rank": {rank}').encode()
        (folder / f"rank{rank}.json.gz").write_bytes(gzip.compress(data, 1))
    return folder


@pytest.fixture(scope="module")
def large(tmp_path_factory: pytest.TempPathFactory, rank_doc: dict[str, Any]) -> Path:
    """A trace large enough to be decoded by worker processes (16 MB or more on disk)."""
    doc = rank_doc
    path = tmp_path_factory.mktemp("large") / "large.json"
    path.write_text(json.dumps(doc))
    assert path.stat().st_size >= 16 << 20
    return path


DELAYS = (0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.6, 0.9, 1.3)


def test_analyze_in_its_first_moments() -> None:
    trace = str(gpu_trace("v100_ddp2_rank1"))
    for delay in DELAYS:
        assert_aborted_or_done(*interrupted(["analyze", trace], delay))


def test_analyze_a_job_with_worker_processes(job: Path) -> None:
    for delay in DELAYS:
        assert_aborted_or_done(*interrupted(["analyze", str(job), "--jobs", "2"], delay))
        args = ["analyze", str(job), "--jobs", "2", "--per-rank"]
        assert_aborted_or_done(*interrupted(args, delay))


def test_analyze_a_large_trace_with_worker_processes(large: Path) -> None:
    for delay in DELAYS:
        assert_aborted_or_done(*interrupted(["analyze", str(large), "--jobs", "2"], delay))


def test_compare_leaves_no_partial_file(tmp_path: Path) -> None:
    steps = "tests.compare_steps"
    for delay in (0.3, 1.0, 1.6, 2.2, 2.6):
        out = tmp_path / f"ab{delay}.json"
        args = [
            "compare",
            f"{steps}:step",
            f"{steps}:step",
            "--state",
            f"{steps}:make_state",
            "--batches",
            f"{steps}:make_batches",
            "--budget",
            "2",
            "--json",
            str(out),
        ]
        code, stdout, err = interrupted(args, delay)
        assert_aborted_or_done(code, stdout, err)
        assert out.exists() == (code == 0)


def test_investigate_leaves_nothing_partial(tmp_path: Path) -> None:
    """Interrupted in the capture: nothing left; in the checks: the trace and its sidecar,
    both whole, and the report of the checks done so far in every format, each whole,
    with the one line saying where the trace is (issue #34.4)."""
    target = f"{REPO / 'tests' / 'investigate_workloads.py'}:served_with_autograd"
    for delay in (0.8, 1.2, 2.5):
        folder = tmp_path / f"at{delay}"
        folder.mkdir()
        args = ["investigate", target, "--out", str(folder / "t.json"), "--budget", "6"]
        code, out, err = interrupted(args, delay)
        said = [line for line in err.splitlines() if not line.startswith("[")]  # no progress
        left = sorted(p.name for p in folder.iterdir())
        reports = ["t.report.html", "t.report.json", "t.report.md"]
        if code == 130 and set(reports) <= set(left):  # in the checks: the report so far
            kept = f"the trace is kept at {folder / 't.json'}"
            assert any(kept in line for line in said), err  # and where the trace is
            said = [line for line in said if not line.startswith(REPORT_LINES)]
        assert_aborted_or_done(code, out, "\n".join(said))
        captured = ["t.json", "t.scenario.json"]
        assert left in ([], captured, sorted([*captured, *reports])), left
        for name in left:
            if name.endswith(".json"):
                json.loads((folder / name).read_text())  # whole
        if "t.report.html" in left:
            assert (folder / "t.report.html").read_text().rstrip().endswith("</html>")
