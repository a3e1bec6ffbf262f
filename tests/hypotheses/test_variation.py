"""Steps that differ by more than ``step_spread`` (slowest / fastest): a warning that more
steps are needed, overridable like every threshold."""

from __future__ import annotations

from click.testing import CliRunner

import steptrace
from steptrace.cli import app
from tests import tracegen
from tests.conftest import WriteTrace


def _trace(write_trace: WriteTrace, *walls_us: float) -> str:
    events, start = [], 0.0
    for number, wall in enumerate(walls_us, start=1):
        events.append(tracegen.step(number, start, wall))
        start += wall
    return str(write_trace(tracegen.document(events, gpu_devices=False)))


def test_steps_three_times_apart_get_a_warning(write_trace: WriteTrace) -> None:
    report = steptrace.analyze(_trace(write_trace, 10_000, 30_000, 12_000))
    (warning,) = [w for w in report.warnings if "step_spread" in w]
    assert "differ by 3.00×" in warning and "more active steps" in warning
    assert "ProfilerStep#2" in warning and "ProfilerStep#1" in warning


def test_alike_steps_and_a_single_step_get_none(write_trace: WriteTrace) -> None:
    for walls in ((10_000, 14_000, 12_000), (10_000,)):
        report = steptrace.analyze(_trace(write_trace, *walls))
        assert not [w for w in report.warnings if "step_spread" in w]


def test_the_threshold_is_overridable_on_the_command_line(write_trace: WriteTrace) -> None:
    path = _trace(write_trace, 10_000, 30_000)
    runner = CliRunner()
    loud = runner.invoke(app, ["analyze", path, "--format", "md"])
    quiet = runner.invoke(app, ["analyze", path, "--format", "md", "--threshold", "step_spread=4"])
    assert loud.exit_code == 0 and quiet.exit_code == 0
    assert "step_spread=1.5" in loud.stderr and "more active steps" in loud.stdout
    assert "step_spread" not in quiet.stderr and "more active steps" not in quiet.stdout
