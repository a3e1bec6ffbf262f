"""A/B comparisons on real CPU steps: same start, correctness first, raw values kept."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch", reason="compare needs torch (installed by make test)")
pytest.importorskip("scipy")

import steptrace  # noqa: E402
from steptrace.cli import app  # noqa: E402
from steptrace.errors import CaptureError, NotTestable, TraceError  # noqa: E402
from steptrace.validate import (  # noqa: E402
    CheckPlan,
    Comparison,
    Instruments,
    OutputsDiffer,
    Slower,
    Timed,
    TimingPlan,
    operator_script,
    pinned_memory_check,
    prepared_batch_check,
)
from tests import compare_steps as steps  # noqa: E402
from tests.conftest import report_of  # noqa: E402

QUICK = TimingPlan(warmup=2, block_steps=3, min_blocks=6, max_blocks=9, budget_s=3)


def run(candidate: Any, plan: TimingPlan = QUICK, **options: Any) -> Comparison:
    return steptrace.compare(
        steps.step,
        candidate,
        make_state=steps.make_state,
        batches=steps.make_batches(),
        plan=plan,
        **options,
    )


def ticking_clock(tick_s: float = 0.001) -> Any:
    """A clock that advances by ``tick_s`` at every reading: timings that cannot be noisy."""
    now = [0.0]

    def clock() -> float:
        now[0] += tick_s
        return now[0]

    return clock


def test_identical_steps_agree() -> None:
    result = run(steps.same_step, instruments=Instruments(clock=ticking_clock()))
    check = result.correctness
    assert check.ok and check.start_identical and check.steps == 3
    names = {d.name for d in check.differences}
    assert {"step0.output", "step2.output", "param:0.weight", "grad:2.bias"} <= names
    assert all(d.max_abs == 0 for d in check.differences)
    assert isinstance(result, Timed), result.sentence
    # the fake clock makes every step 1 ms: the CI is exact once min_blocks (6) have run
    assert len(result.samples.a) == len(result.samples.b) == 6 * 3
    assert len(result.samples.warmup_a) == 2  # cold start kept apart
    assert result.ratio == pytest.approx(result.candidate.median / result.baseline.median)


def test_a_candidate_that_changes_results_is_caught() -> None:
    result = run(steps.step_that_changes_results)
    assert isinstance(result, OutputsDiffer) and result.verdict == "outputs-differ"
    assert not hasattr(result, "samples") and not hasattr(result, "ratio")  # no timing ran
    failing = [d for d in result.correctness.differences if not d.ok]
    assert failing and all(d.max_abs and d.max_abs > 0 for d in failing)
    assert "no speed verdict" in result.sentence


def test_an_accepted_difference_is_timed_and_said() -> None:
    result = run(steps.step_that_changes_results, check=CheckPlan(accept_difference=True))
    assert not isinstance(result, OutputsDiffer) and result.accepted_difference
    assert not result.correctness.ok


def test_both_sides_start_from_the_same_state() -> None:
    seen: dict[str, list[torch.Tensor]] = {"A": [], "B": []}

    def recording(name: str) -> Any:
        def run_step(state: dict[str, Any], batch: Any) -> torch.Tensor:
            if not seen[name]:
                seen[name] = [p.detach().clone() for p in state["model"].parameters()]
            return steps.step(state, batch)

        return run_step

    origin = steps.make_state()
    before = [p.detach().clone() for p in origin["model"].parameters()]
    steptrace.compare(
        recording("A"),
        recording("B"),
        make_state=lambda: origin,
        batches=steps.make_batches(),
        plan=QUICK,
    )
    assert all(torch.equal(a, b) for a, b in zip(seen["A"], seen["B"], strict=True))
    # the state the user built is never trained: each side works on its own copy
    assert all(torch.equal(a, b) for a, b in zip(before, origin["model"].parameters(), strict=True))


def test_known_extra_work_with_a_fake_clock_is_slower() -> None:
    now = [0.0]

    def clock() -> float:
        return now[0]

    def timed(ms: float) -> Any:
        def run_step(state: dict[str, Any], batch: Any) -> torch.Tensor:
            now[0] += ms / 1000
            return steps.step(state, batch)

        return run_step

    result = steptrace.compare(
        timed(10.0),
        timed(10.5),
        make_state=steps.make_state,
        batches=steps.make_batches(),
        plan=QUICK,
        instruments=Instruments(clock=clock),
    )
    assert isinstance(result, Slower) and result.verdict == "slower"
    assert result.ratio == pytest.approx(1.05)
    assert result.sentence.startswith("B is 1.05× slower: it takes 105.0% of A's time per step")
    assert result.estimate.estimator == "median"  # quiet


def test_raw_values_go_to_new_json_and_csv_files(tmp_path: Path) -> None:
    plan = msgspec.structs.replace(QUICK, loop_repeats=2)
    result = run(steps.same_step, plan=plan, loop_batches=steps.make_batches)
    assert isinstance(result, Timed), result.sentence
    written = json.loads(result.write_json(tmp_path / "ab.json").read_text())
    assert written["verdict"] == result.verdict
    assert written["samples"]["a"] == list(result.samples.a)
    assert len(written["loop"]["a_ms"]) == 2
    rows = list(csv.DictReader(result.write_csv(tmp_path / "ab.csv").open()))
    assert {r["phase"] for r in rows} == {"warmup", "steady", "loop"}
    assert sum(r["side"] == "A" and r["phase"] == "steady" for r in rows) == len(result.samples.a)
    with pytest.raises(FileExistsError):
        result.write_json(tmp_path / "ab.json")


def test_input_pipeline_check_runs_the_same_compute_on_a_prepared_batch() -> None:
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.randn(64, steps.FEATURES), torch.randint(0, 4, (64,))),
        batch_size=steps.BATCH,
    )
    result = prepared_batch_check(
        steps.step, make_state=steps.make_state, loader=loader, plan=QUICK
    )
    assert result.verdict in ("faster", "slower", "no-detectable-difference")
    assert result.accepted_difference  # different batches by design, said so


def test_pinned_memory_check_needs_a_gpu() -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the refusal cannot be shown here")
    with pytest.raises(NotTestable, match="needs a CUDA device"):
        pinned_memory_check(steps.step, make_state=steps.make_state, batches=steps.make_batches())


@pytest.mark.slow
def test_operator_script_runs(tmp_path: Path) -> None:
    analysis = report_of("cpu_train_trace_all").analysis
    script = tmp_path / "addmm.py"
    script.write_text(operator_script(analysis, "aten::addmm"))
    assert "torch.randn((64, 256), dtype=torch.float32" in script.read_text()
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "median" in done.stdout
    without_shapes = report_of("cpu_train_trace.json").analysis
    with pytest.raises(TraceError, match="record_shapes=True"):
        operator_script(without_shapes, "aten::addmm")


@pytest.mark.slow
def test_the_command_line(tmp_path: Path) -> None:
    runner = CliRunner()
    args = [
        "compare",
        "tests.compare_steps:step",
        "tests.compare_steps:step_with_extra_work",
        "--state",
        "tests.compare_steps:make_state",
        "--batches",
        "tests.compare_steps:make_batches",
        "--budget",
        "2",
        "--json",
        str(tmp_path / "ab.json"),
        "--csv",
        str(tmp_path / "ab.csv"),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    for expected in ("Correctness after 3 steps", "Steady-state step time", "Verdict:"):
        assert expected in result.stdout
    assert json.loads((tmp_path / "ab.json").read_text())["correctness"]["ok"] is True
    again = runner.invoke(app, args)
    assert again.exit_code == 2 and "exists already" in again.stderr
    bad = runner.invoke(
        app,
        [
            "compare",
            "tests.compare_steps:nope",
            "tests.compare_steps:step",
            "--state",
            "tests.compare_steps:make_state",
            "--batches",
            "tests.compare_steps:make_batches",
        ],
    )
    assert bad.exit_code == 2 and "has no function 'nope'" in bad.stderr


def test_a_candidate_with_fewer_outputs_fails_correctness() -> None:
    def two(state: dict[str, Any], batch: Any) -> Any:
        loss = steps.step(state, batch)
        return {"loss": loss, "logits": state["model"](batch[0]).detach()}

    def one(state: dict[str, Any], batch: Any) -> Any:
        return {"loss": steps.step(state, batch)}

    result = steptrace.compare(
        two, one, make_state=steps.make_state, batches=steps.make_batches(), plan=QUICK
    )
    assert result.verdict == "outputs-differ"
    missing = [d for d in result.correctness.differences if not d.ok]
    assert missing and all(d.note == "only A returns it" for d in missing)


def test_values_that_agree_even_when_odd() -> None:
    from steptrace.validate.correctness import compare_values

    inf = torch.tensor([float("-inf"), 1.0])
    assert compare_values("x", inf, inf.clone(), None, None).ok
    nan = torch.tensor([float("nan")])
    assert compare_values("x", nan, nan.clone(), None, None).ok
    assert not compare_values("z", torch.tensor([1 + 1j]), torch.tensor([1 + 5j]), None, None).ok
    import numpy as np

    assert compare_values("n", np.ones(3), np.ones(3), None, None).ok
    assert not compare_values("n", np.ones(3), np.zeros(3), None, None).ok


def test_a_clock_too_coarse_is_refused() -> None:
    with pytest.raises(CaptureError, match="too coarse"):
        steptrace.compare(
            steps.step,
            steps.same_step,
            make_state=steps.make_state,
            batches=steps.make_batches(),
            plan=QUICK,
            instruments=Instruments(clock=lambda: 0.0),
        )


def test_the_command_line_refuses_bad_requests_before_running(tmp_path: Path) -> None:
    runner = CliRunner()
    base = [
        "compare",
        "tests.compare_steps:step",
        "tests.compare_steps:same_step",
        "--state",
        "tests.compare_steps:make_state",
        "--batches",
        "tests.compare_steps:make_batches",
    ]
    same = runner.invoke(app, [*base, "--json", str(tmp_path / "x"), "--csv", str(tmp_path / "x")])
    assert same.exit_code == 2 and "two different files" in same.stderr
    nowhere = runner.invoke(app, [*base, "--json", str(tmp_path / "no" / "x.json")])
    assert nowhere.exit_code == 2 and "no such folder" in nowhere.stderr
    if not torch.cuda.is_available():
        cuda = runner.invoke(app, [*base, "--device", "cuda"])
        assert cuda.exit_code == 2 and "sees no GPU" in cuda.stderr


def test_operator_names_are_checked_before_writing_a_script() -> None:
    analysis = report_of("cpu_train_trace_all").analysis
    for bad in ("my_label", "aten::mm'); import os; ('", "aten::"):
        with pytest.raises(TraceError, match="not an operator name"):
            operator_script(analysis, bad)


def test_the_plans_reach_the_comparison_and_the_same_seed_repeats_it() -> None:
    def once(seed: int) -> Timed:
        result = steptrace.compare(
            steps.step,
            steps.same_step,
            make_state=steps.make_state,
            batches=steps.make_batches(),
            check=CheckPlan(steps=2, rtol=1e-3),
            plan=msgspec.structs.replace(QUICK, seed=seed),
            instruments=Instruments(clock=ticking_clock()),
        )
        assert isinstance(result, Timed), result.sentence
        return result

    first, again, other = once(4), once(4), once(5)
    assert first.correctness == again.correctness and first.correctness.steps == 2
    assert {d.rtol for d in first.correctness.differences} == {1e-3}
    assert first.samples == again.samples  # same seed, same clock: the same blocks
    assert other.samples.order != first.samples.order  # the seed orders the blocks


def test_a_failing_user_module_or_step_is_a_one_line_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("raise ValueError('no config')\n")
    raising = tmp_path / "raising.py"
    raising.write_text(
        "from tests.compare_steps import make_state, make_batches\n"
        "def step(state, batch):\n    raise RuntimeError('shape mismatch')\n"
    )
    runner = CliRunner()
    for args in (
        [f"{broken}:step", f"{broken}:step", "--state", f"{broken}:s", "--batches", f"{broken}:b"],
        [
            f"{raising}:step",
            f"{raising}:step",
            "--state",
            f"{raising}:make_state",
            "--batches",
            f"{raising}:make_batches",
        ],
    ):
        result = runner.invoke(app, ["compare", *args])
        assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.stderr
        assert "no config" in result.stderr or "shape mismatch" in result.stderr
