"""``trace_handler``: steptrace-ready files from any torch.profiler loop; the schedule probe."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from torch.profiler import ProfilerAction, profile, schedule  # noqa: E402

import steptrace  # noqa: E402
from steptrace.capturing import handler as handler_module  # noqa: E402
from steptrace.capturing import trace_handler  # noqa: E402
from steptrace.capturing.schedule_probe import probe  # noqa: E402
from steptrace.errors import CaptureWarning  # noqa: E402
from steptrace.scenario import Scenario, sidecar_path  # noqa: E402
from steptrace.window import Window  # noqa: E402

SCENARIO = Scenario(question="Does the handler keep my question?", batch_size=4)
NAME = re.compile(r"^worker-a\.\d+\.pt\.trace\.json\.gz$")


def run_loop(out: Path, steps: int, repeat: int) -> steptrace.capturing.handler.TraceHandler:
    handler = trace_handler(out, scenario=SCENARIO, worker_name="worker-a")
    model = torch.nn.Linear(8, 2)
    with profile(
        schedule=schedule(wait=1, warmup=1, active=2, repeat=repeat), on_trace_ready=handler
    ) as prof:
        for _ in range(steps):
            model(torch.randn(4, 8)).sum().backward()
            prof.step()
    return handler


def test_the_probe_reads_the_first_cycle_and_the_repeats() -> None:
    shape = probe(schedule(skip_first=1, wait=2, warmup=1, active=3, repeat=2))
    assert shape.window == Window(cold_steps=0, wait=3, warmup=1, active=3, repeat=2)
    assert not shape.forever


def test_the_probe_says_a_schedule_without_repeat_runs_forever() -> None:
    shape = probe(schedule(wait=0, warmup=1, active=1))
    assert shape.forever
    assert shape.window is not None and (shape.window.wait, shape.window.active) == (0, 1)


def test_the_probe_finds_no_window_in_a_schedule_that_never_saves() -> None:
    assert probe(lambda step: ProfilerAction.RECORD).window is None


def test_one_window_is_one_file_with_the_scenario_embedded_and_beside(tmp_path: Path) -> None:
    (path,) = run_loop(tmp_path, steps=4, repeat=1).written
    assert NAME.match(path.name), path.name
    with gzip.open(path, "rt", encoding="utf-8") as text:
        document = json.load(text)  # still a valid trace after the block was added
    embedded = document["steptrace"]
    assert embedded["scenario"]["question"] == SCENARIO.question
    assert embedded["capture"]["window"]["active"] == 2
    assert embedded["capture"]["partial_step"] is None
    side = json.loads(sidecar_path(path).read_text(encoding="utf-8"))
    assert side == embedded
    report = steptrace.analyze(path)
    assert report.scenario is not None and report.scenario.question == SCENARIO.question
    assert [s.name for s in report.analysis.steps] == ["ProfilerStep#2", "ProfilerStep#3"]


def test_a_schedule_forever_warns_and_the_stop_marks_its_cut_step(tmp_path: Path) -> None:
    # cycle of 4 (wait, warmup, 2 active): saves after steps 3 and 7; the stop comes in
    # step 11, the second active step of the third cycle, still recording: it is cut
    with pytest.warns(CaptureWarning, match="repeats its cycle of 4 steps forever"):
        written = run_loop(tmp_path, steps=11, repeat=0).written
    assert len(written) == 3
    facts = [json.loads(sidecar_path(p).read_text(encoding="utf-8"))["capture"] for p in written]
    assert [f["partial_step"] for f in facts] == [None, None, 11]
    assert all("forever" in f["warnings"][0] for f in facts)


def test_a_name_taken_is_never_overwritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handler_module.time, "time_ns", lambda: 1000)
    taken = tmp_path / "worker-a.1000.pt.trace.json.gz"
    taken.write_bytes(b"theirs")
    path = handler_module.new_trace_path(tmp_path, "worker-a")
    assert path.name == "worker-a.1001.pt.trace.json.gz"
    assert taken.read_bytes() == b"theirs"
    assert path.exists() and sidecar_path(path).exists()  # reserved, both


def test_without_torch_distributed_the_worker_name_is_made_safe() -> None:
    assert handler_module.worker_label("host/1 a") == "host_1_a"
