"""A Workload with the user's own ``step(model, batch, state) -> loss``: the capture and the
checks run that step, each on its own copy of the state; a step that raises is one line."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the user's step runs on torch")

import steptrace  # noqa: E402
from steptrace.capturing import Workload, run_workload  # noqa: E402
from steptrace.errors import CaptureError  # noqa: E402
from steptrace.investigation.subject import subject_of  # noqa: E402
from tests.paths import EXAMPLES  # noqa: E402

EXAMPLE = EXAMPLES / "07_own_step.py"
CPU = torch.device("cpu")
STEPTRACE = str(Path(sys.executable).parent / "steptrace")


def counted(model: Any, batch: Any, state: dict[str, Any]) -> Any:
    """Accumulates two micro-batches, clips, and counts its calls and optimizer steps."""
    x, y = batch
    loss = torch.nn.functional.cross_entropy(model(x), y)
    (loss / 2).backward()
    state["calls"] = state.get("calls", 0) + 1
    if state["calls"] % 2 == 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        state["optimizer"].step()
        state["optimizer"].zero_grad(set_to_none=True)
        state["steps"] = state.get("steps", 0) + 1
    return loss


def workload(step: Any = counted) -> Workload:
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 3)
    batches = [(torch.randn(4, 8), torch.randint(0, 3, (4,))) for _ in range(8)]
    return Workload(
        scenario=steptrace.Scenario(question="Does my own step run?"),
        model=model,
        optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        loader=batches,
        step=step,
    )


def test_the_capture_runs_the_users_step_and_gives_the_model_back(tmp_path: Path) -> None:
    made = workload()
    assert made.model is not None
    before = [p.detach().clone() for p in made.model.parameters()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        captured = run_workload(made, out=tmp_path / "t.json", window=steptrace.Window())
    report = steptrace.analyze(captured.trace)
    window = steptrace.Window()
    assert len(report.analysis.steps) == window.active
    names = {p.name for s in report.analysis.steps for p in s.phases}
    assert {"transfer", "train"} <= names  # steptrace's labels around the user's step
    assert any(n.startswith("Optimizer.step#SGD") for n in names)  # every second micro-batch
    assert all(torch.equal(a, b) for a, b in zip(before, made.model.parameters(), strict=True))


def test_each_check_gets_its_own_copy_of_the_state() -> None:
    made = workload()
    subject = subject_of(made, CPU)
    state = subject.make_state()
    assert state["optimizer"] is made.optimizer and "calls" not in state
    state = dict(state)  # compare deep-copies it; a plain copy is enough to count here
    for batch in subject.batches:
        loss = subject.step(state, batch)
        assert loss.shape == ()
    assert (state["calls"], state["steps"]) == (len(subject.batches), len(subject.batches) // 2)
    assert "calls" not in subject.make_state()  # each check starts from a fresh state


def test_a_training_workload_needs_a_loss_or_a_step() -> None:
    made = Workload(
        scenario=steptrace.Scenario(question="?"),
        model=torch.nn.Linear(2, 2),
        optimizer=torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1),
        loader=[(torch.randn(1, 2), torch.tensor([0]))],
    )
    with pytest.raises(CaptureError, match=r"loss_fn \(or its own step\)"):
        subject_of(made, CPU)


def broken(model: Any, batch: Any, state: dict[str, Any]) -> Any:
    raise ValueError("the user's step broke")


def broken_workload() -> Workload:
    return workload(broken)


@pytest.mark.slow
def test_a_user_step_that_raises_is_one_line_naming_it(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            STEPTRACE,
            "investigate",
            f"{__file__}:broken_workload",
            "--out",
            str(tmp_path / "t.json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and "the user's step broke" in errors[0], done.stderr
    assert f"{Path(__file__).name}:" in errors[0]  # where: the user's file and line
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_the_example_s_own_step_is_investigated(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            STEPTRACE,
            "investigate",
            f"{EXAMPLE}:workload",
            "--checks",
            "0",
            "--out",
            str(tmp_path / "t.json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "clipped, accumulated bf16 GRU" in done.stdout
    written = sorted(p.name for p in tmp_path.iterdir())
    assert {"t.report.json", "t.report.md", "t.report.html"} <= set(written), written
