"""compare with B's own state, batches and loop; helpful refusals; strict JSON."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch", reason="compare needs torch (installed by make test)")
pytest.importorskip("scipy")

import steptrace  # noqa: E402
from steptrace.cli import app  # noqa: E402
from steptrace.errors import CaptureError  # noqa: E402
from steptrace.validate import (  # noqa: E402
    CandidateInputs,
    CheckPlan,
    Comparison,
    Instruments,
    OutputsDiffer,
    Timed,
    TimingPlan,
    TooFewSamples,
)
from steptrace.validate.correctness import compare_values  # noqa: E402
from tests import compare_steps as steps  # noqa: E402

QUICK = TimingPlan(warmup=1, block_steps=2, min_blocks=6, max_blocks=6, budget_s=3)


def adam_state(foreach: bool, seed: int = 0) -> dict[str, Any]:
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(steps.FEATURES, 64), torch.nn.ReLU(), torch.nn.Linear(64, steps.CLASSES)
    )
    return {"model": model, "optimizer": torch.optim.Adam(model.parameters(), foreach=foreach)}


def ab(**options: Any) -> Comparison:
    options.setdefault("make_state", lambda: adam_state(False))
    options.setdefault("batches", steps.make_batches())
    options.setdefault("plan", QUICK)
    return steptrace.compare(steps.step, steps.step, **options)


def b_own(**inputs: Any) -> dict[str, CandidateInputs]:
    """compare's keyword giving B its own ``make_state``, ``batches`` or ``loop_batches``."""
    return {"candidate_inputs": CandidateInputs(**inputs)}


def test_two_real_states_are_compared_and_what_differs_is_said() -> None:
    result = ab(**b_own(make_state=lambda: adam_state(True)))
    assert result.correctness.ok and result.correctness.start_identical
    assert any(d.name.startswith("param:") for d in result.correctness.differences)
    assert "optimizer foreach: A False, B True" in result.by_design
    assert "state: B's own make_state" in result.by_design
    assert result.verdict in ("faster", "slower", "no-detectable-difference")


def test_other_starting_weights_are_not_a_speed_verdict() -> None:
    result = ab(**b_own(make_state=lambda: adam_state(False, seed=1)))
    assert isinstance(result, OutputsDiffer) and not result.correctness.start_identical
    assert "do not start from the same weights" in result.sentence


def test_batches_b_with_the_same_values_agree_and_other_values_are_explained() -> None:
    same = [(x.clone(), y.clone()) for x, y in steps.make_batches()]
    agreed = ab(**b_own(batches=same))
    assert agreed.correctness.ok and "batches: B reads its own batches" in agreed.by_design
    other = [(x * 1.5, y) for x, y in steps.make_batches()]
    differ = ab(**b_own(batches=other))
    assert differ.verdict == "outputs-differ"
    worst = max(
        (d for d in differ.correctness.differences if not d.ok), key=lambda d: d.max_rel or 0
    )
    assert worst.name in differ.sentence and f"{worst.max_abs:.3g}" in differ.sentence
    for hint in ("CheckPlan(steps=1)", "tolerances for the dtype", "accept_difference=True"):
        assert hint in differ.sentence


def test_the_whole_loop_per_side_and_its_loader_differences() -> None:
    data = torch.utils.data.TensorDataset(
        torch.randn(40, steps.FEATURES), torch.randint(0, steps.CLASSES, (40,))
    )
    result = ab(
        loop_batches=lambda: torch.utils.data.DataLoader(data, batch_size=16),
        **b_own(
            loop_batches=lambda: torch.utils.data.DataLoader(data, batch_size=16, drop_last=True)
        ),
        plan=msgspec.structs.replace(QUICK, loop_repeats=1),
    )
    assert result.loop is not None and len(result.loop.b_ms) == 1
    assert "loader drop_last: A False, B True" in result.by_design


def test_relative_difference_against_zero_is_bounded() -> None:
    difference = compare_values(
        "x", torch.tensor([1e-3, 1.0]), torch.tensor([0.0, 1.0]), None, None
    )
    assert not difference.ok and difference.max_rel == pytest.approx(1.0)
    assert difference.max_abs == pytest.approx(1e-3)
    halves = compare_values("y", torch.tensor([2.0]), torch.tensor([4.0]), None, None)
    assert halves.max_rel == pytest.approx(0.5)  # |2 - 4| / max(2, 4)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"make_state": lambda: None}, "A: make_state() returned None"),
        ({"make_state": lambda: {"model": "resnet"}}, "A: make_state()['model'] is a str, not"),
        ({"make_state": lambda: {"optimizer": 1}}, "must return a mapping with a 'model'"),
        (b_own(make_state=lambda: None), "B: make_state() returned None"),
        (b_own(batches=[]), "B: batches is empty"),
        ({"batches": None}, "A: batches is None"),
        ({"batches": []}, "A: batches is empty"),
        ({**b_own(batches=None), "make_state": lambda: 1 / 0}, "A: make_state() raised Zero"),
    ],
)
def test_user_mistakes_are_one_line_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(CaptureError, match=re.escape(message)) as caught:
        ab(**options)
    assert "\n" not in str(caught.value)


def test_a_step_that_raises_names_its_side_and_step() -> None:
    calls = [0]

    def third_fails(state: Any, batch: Any) -> Any:
        calls[0] += 1
        if calls[0] == 3:
            raise ValueError("shapes (16, 32) and (16, 64)")
        return steps.step(state, batch)

    raised = r"B's step raised at correctness step 3 of 3: ValueError"
    with pytest.raises(CaptureError, match=raised):
        steptrace.compare(
            steps.step,
            third_fails,
            make_state=steps.make_state,
            batches=steps.make_batches(),
            plan=QUICK,
        )


def test_a_budget_too_small_for_a_verdict_says_how_much_is_needed() -> None:
    now = [0.0]

    def slow(state: Any, batch: Any) -> Any:
        now[0] += 0.5  # a 0.5 s step on the injected clock
        return steps.step(state, batch)

    result = steptrace.compare(
        slow,
        slow,
        make_state=steps.make_state,
        batches=steps.make_batches(),
        plan=TimingPlan(budget_s=0.5),
        instruments=Instruments(clock=lambda: now[0]),
    )
    assert isinstance(result, TooFewSamples) and result.verdict == "too-few-samples"
    assert not hasattr(result, "ratio") and result.samples.elapsed_s == 0
    # the 3 s of correctness steps count in the budget, then 7 pairs of 1 s
    assert "allow at least 10.0 s" in result.sentence


def test_json_is_strict_even_with_values_that_are_not_numbers(tmp_path: Path) -> None:
    result = ab(check=CheckPlan(steps=1))
    assert isinstance(result, Timed), result.sentence
    odd = msgspec.structs.replace(
        result, p_value=math.nan, baseline=msgspec.structs.replace(result.baseline, spread=math.inf)
    )

    def refuse(value: str) -> Any:
        raise AssertionError(f"{value} in JSON")

    written = json.loads(odd.write_json(tmp_path / "ab.json").read_text(), parse_constant=refuse)
    assert written["p_value"] is None and written["baseline"]["spread"] is None
    assert written["schema"] == "steptrace.compare/4" and written["estimate"]["estimator"]


def test_the_command_line_refuses_an_unwritable_json_before_timing(tmp_path: Path) -> None:
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
    unwritable = runner.invoke(app, [*base, "--json", "/proc/steptrace-ab.json"])
    assert unwritable.exit_code == 2 and "cannot be written" in unwritable.stderr
    assert unwritable.stderr.count("\n") == 1 and "Correctness" not in unwritable.stdout


def test_the_command_line_one_line_errors_for_bad_user_functions(tmp_path: Path) -> None:
    module = tmp_path / "user_ab.py"
    module.write_text(
        "from tests.compare_steps import make_state, make_batches, step\n"
        "def none():\n    return None\n"
        "def not_a_module():\n    return {'model': 3}\n"
    )
    runner = CliRunner()
    cases = {
        "--batches": (
            "returned None",
            ["--state", "tests.compare_steps:make_state", "--batches", f"{module}:none"],
        ),
        "--state": (
            "make_state() returned None",
            ["--state", f"{module}:none", "--batches", f"{module}:make_batches"],
        ),
        "model": (
            "not a torch.nn.Module",
            ["--state", f"{module}:not_a_module", "--batches", f"{module}:make_batches"],
        ),
    }
    for name, (message, args) in cases.items():
        result = runner.invoke(app, ["compare", f"{module}:step", f"{module}:step", *args])
        assert result.exit_code == 2, (name, result.stderr)
        assert message in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_the_command_line_takes_b_s_own_state() -> None:
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "compare",
            "tests.compare_steps:step",
            "tests.compare_steps:step",
            "--state",
            "tests.compare_steps:make_state",
            "--state-b",
            "tests.compare_steps:make_state",
            "--batches",
            "tests.compare_steps:make_batches",
            "--budget",
            "1",
            "--check-steps",
            "1",
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert "Differs by design: state: B's own make_state" in result.stdout


def interfered_clock(seed: int) -> tuple[Any, Any]:
    """An injected clock and a way to make a step take ``ms`` on it, 40% of steps held
    back by 5-20 ms (another process's time slices): interference only adds time."""
    now = [0.0]
    rng = __import__("numpy").random.default_rng(seed)

    def spend(ms: float) -> None:
        jitter = abs(rng.normal(0, 0.01))  # a clean step varies a little, upwards
        now[0] += (ms * (1 + jitter) + (rng.random() < 0.4) * rng.uniform(5, 20)) / 1000

    return (lambda: now[0]), spend


@pytest.mark.parametrize(
    ("factor", "expected"), [(1.0, "no-detectable-difference"), (1.05, "slower"), (1.15, "slower")]
)
def test_under_interference_the_fastest_steps_decide(factor: float, expected: str) -> None:
    clock, spend = interfered_clock(int(factor * 100))

    def timed(ms: float) -> Any:
        def run(state: Any, batch: Any) -> Any:
            spend(ms)
            return steps.step(state, batch)

        return run

    result = steptrace.compare(
        timed(2.0),
        timed(2.0 * factor),
        make_state=steps.make_state,
        batches=steps.make_batches(),
        plan=TimingPlan(budget_s=3, max_blocks=60),
        instruments=Instruments(clock=clock),
    )
    assert isinstance(result, Timed), result.sentence
    assert result.interference.detected and result.estimate.estimator == "block-minimum"
    assert result.estimate.confidence == 0.99 and "99% CI" in result.sentence
    assert result.verdict == expected, result.sentence
    assert result.estimate.ci[0] <= factor <= result.estimate.ci[1]
    assert result.noise_warning is not None and "held back" in result.noise_warning
    assert result.other_estimate.estimator == "median"


def test_a_compiled_model_s_parameters_are_compared_under_their_own_names() -> None:
    """torch.compile wraps the model as ``_orig_mod``: the same parameters under a prefix.
    (A real torch.compile takes about 40 s here; its wrapper is reproduced.)"""

    class Wrapped(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self._orig_mod = inner

        def forward(self, x: Any) -> Any:
            return self._orig_mod(x)

    def wrapped_state() -> dict[str, Any]:
        state = steps.make_state()
        return state | {"model": Wrapped(state["model"])}

    result = ab(make_state=steps.make_state, **b_own(make_state=wrapped_state))
    assert result.correctness.ok and result.correctness.start_identical
    assert "model: A Sequential, B Wrapped" in result.by_design
    assert not any("_orig_mod" in d.name for d in result.correctness.differences)
