"""``--critical-path`` and ``--what-if`` on the command line: the documented names, on
demand, and a one-line error for a malformed target."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from steptrace.cli import app
from tests import reference
from tests.conftest import gpu_trace

runner = CliRunner()
SEGMENT = {"kind", "name", "start_us", "end_us", "thread", "stream"}
STEP = {"step", "start_us", "end_us", "length_ms", "wall_ms", "by_kind_ms", "operators"}


def test_the_path_is_in_the_json_only_when_asked_for() -> None:
    path = gpu_trace("a100_cuda_event_sync__")
    plain = runner.invoke(app, ["analyze", str(path), "-f", "json"])
    assert plain.exit_code == 0, plain.stderr
    assert json.loads(plain.stdout)["analysis"]["critical_path"] is None
    asked = runner.invoke(app, ["analyze", str(path), "-f", "json", "--critical-path"])
    assert asked.exit_code == 0, asked.stderr
    found = json.loads(asked.stdout)["analysis"]["critical_path"]
    assert set(found) == {"steps", "what_if"}
    (step,) = found["steps"]
    assert set(step) >= STEP | {"kernels", "segments"}
    assert all(set(s) == SEGMENT for s in step["segments"])
    windows = reference.step_windows(reference.events(reference.read_exact(path)))
    assert [(name, lo) for name, lo, _ in windows] == [
        (step["step"], pytest.approx(step["start_us"] * 1000, abs=1))
    ]


@pytest.mark.parametrize("given", ["aten::mm", "aten::mm=0.5", "=2", "x=nan", "x=inf", "x=two"])
def test_a_malformed_what_if_is_one_line_and_exit_2(given: str) -> None:
    path = gpu_trace("a100_cuda_event_sync__")
    result = runner.invoke(app, ["analyze", str(path), "--what-if", given])
    assert result.exit_code == 2
    assert "--what-if" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_job_of_several_ranks_has_its_path_and_no_what_if() -> None:
    ranks = [gpu_trace("ddp_rank0_trace"), gpu_trace("ddp_rank1_trace")]
    args = ["analyze", *map(str, ranks), "-f", "json", "--what-if", "train=2", "-j", "1"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    assert "--what-if applies to one trace's report" in result.stderr
    bounds = json.loads(result.stdout)["critical_path"]
    assert [b["rank"] in (0, 1) for b in bounds] == [True] * len(bounds) and bounds
