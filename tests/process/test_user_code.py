"""The user's code cannot corrupt, end or hang the tool (issues #36 and #37).

What the user's model, factory or step prints goes to stderr (stdout holds the report
alone); an exception, ``sys.exit``, ``os._exit`` or a ``BaseException`` in their code is one
line naming where, with exit code 2; a step that outlives the budget is stopped (the side
and the step named), and the correctness steps count inside the budget. The commands run
as real processes where the user's code could end the test's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("torch", reason="the user's code runs torch")

from steptrace.cli import app
from tests.paths import TESTS
from tests.user_code_workloads import SAID

STEPTRACE = str(Path(sys.executable).parent / "steptrace")
HERE = TESTS
WORKLOADS = f"{HERE / 'user_code_workloads.py'}"
STEPS = "tests.compare_steps"


def compare_args(baseline: str, candidate: str, *more: str) -> list[str]:
    return [
        "compare",
        f"{WORKLOADS}:{baseline}" if ":" not in baseline else baseline,
        f"{WORKLOADS}:{candidate}" if ":" not in candidate else candidate,
        "--state",
        f"{STEPS}:make_state",
        "--batches",
        f"{STEPS}:make_batches",
        *more,
    ]


def run(args: list[str], timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [STEPTRACE, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=HERE.parent,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **env},
    )


def assert_one_line(done: subprocess.CompletedProcess[str], *words: str) -> None:
    """Exit code 2 and one error line, the last (investigate's progress lines come before)."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("steptrace: error: ")]
    assert errors == lines[-1:] and "Traceback" not in done.stderr, done.stderr
    assert all(word in errors[0] for word in words), errors[0]


def test_what_a_step_prints_goes_to_stderr() -> None:
    done = CliRunner().invoke(app, compare_args("chatty_step", "chatty_step", "--budget", "1"))
    assert done.exit_code == 0, done.stderr
    assert SAID not in done.stdout and SAID in done.stderr
    assert done.stdout.lstrip().startswith("──") or "Verdict" in done.stdout


@pytest.mark.parametrize(
    ("step", "said"),
    [
        ("exiting_step", "sys.exit(0)"),
        ("hard_exiting_step", "os._exit(0)"),
        ("interrupting_step", "GeneratorExit"),
    ],
)
def test_a_step_that_ends_the_process_is_one_line(tmp_path: Path, step: str, said: str) -> None:
    out = tmp_path / "ab.json"  # a budget the steps before B's first reach under load
    done = run(compare_args(f"{STEPS}:step", step, "--budget", "5", "--json", str(out)))
    assert_one_line(done, said, "B's step")
    assert not out.exists()


@pytest.mark.parametrize(
    "option", [["--budget", "nan"], ["--budget", "inf"], ["--rtol", "nan"], ["--atol", "-1"]]
)
def test_a_number_that_is_not_finite_is_refused(option: list[str]) -> None:
    done = CliRunner().invoke(app, compare_args(f"{STEPS}:step", f"{STEPS}:step", *option))
    assert done.exit_code == 2 and done.stderr.count("\n") == 1, done.stderr
    assert option[0] in done.stderr


def test_a_step_that_hangs_after_its_correctness_steps_is_stopped() -> None:
    began = time.monotonic()
    # a budget its correctness steps fit in under load (2 s: they took 2.9 s beside two
    # spinners and a third process), so that the step that hangs is the one stopped
    done = run(compare_args(f"{STEPS}:step", "late_sleeper", "--budget", "8"), timeout=90)
    assert_one_line(done, "B's step", "budget")
    assert time.monotonic() - began < 40  # 8 s of budget, the grace, the start-up


def test_the_correctness_steps_count_inside_the_budget() -> None:
    began = time.monotonic()
    done = run(
        compare_args(f"{STEPS}:step", f"{STEPS}:step", "--budget", "2", "--check-steps", "100000"),
        timeout=90,
    )
    assert_one_line(done, "correctness step", "budget")
    assert time.monotonic() - began < 30


# ---------------------------------------------------------------------------- investigate
def investigate(
    name: str, tmp_path: Path, checks: int = 1, **env: str
) -> subprocess.CompletedProcess[str]:
    args = ["investigate", f"{WORKLOADS}:{name}", "--out", str(tmp_path / "t.json")]
    budget = ["--budget", str(4 * checks), "--checks", str(checks)]
    return run([*args, *budget, "--format", "json"], timeout=300, **env)


@pytest.mark.slow
def test_investigate_writes_pure_json_whatever_the_workload_prints(tmp_path: Path) -> None:
    done = investigate("chatty", tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # nothing but the report
    assert report["checks"] and SAID in done.stderr


@pytest.mark.slow
def test_profile_writes_pure_json_whatever_the_workload_prints(tmp_path: Path) -> None:
    args = ["profile", f"{WORKLOADS}:chatty", "--out", str(tmp_path / "t.json")]
    done = run([*args, "--format", "json"], timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["analysis"]["steps"] and SAID in done.stderr


@pytest.mark.slow
def test_an_exception_in_the_capture_is_one_line_naming_where(tmp_path: Path) -> None:
    done = investigate("raises_in_capture", tmp_path)
    assert_one_line(done, "capture", "planted failure", "user_code_workloads.py:")
    assert not list(tmp_path.iterdir())  # no trace, no sidecar left


@pytest.mark.slow
@pytest.mark.parametrize("how", ["sys", "os"])
def test_an_exit_in_the_capture_is_one_line(tmp_path: Path, how: str) -> None:
    done = investigate("exits", tmp_path, STEPTRACE_TEST_EXIT=how)
    assert_one_line(done, "capture", f"{how}.")


@pytest.mark.slow
def test_an_exception_in_one_check_is_said_in_the_report(tmp_path: Path) -> None:
    done = investigate("raises_in_check", tmp_path, checks=3)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    (check,) = [c for c in report["checks"] if c["rule"] == "inference-autograd"]
    assert check["outcome"] == "not-testable"
    assert "planted: this model refuses inference_mode" in check["sentence"]
    assert "user_code_workloads.py:" in check["sentence"]
    assert "Traceback" not in done.stderr
