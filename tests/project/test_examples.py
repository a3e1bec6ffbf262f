"""Every example in examples/ runs as a user would run it, on the CPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import EXAMPLES as EXAMPLE_FOLDER

pytest.importorskip("torch", reason="the examples need torch (installed by make test)")

pytestmark = pytest.mark.slow  # end to end
EXAMPLES = sorted(EXAMPLE_FOLDER.glob("0*.py"))


FRAMEWORK = {"05_lightning": "lightning", "06_hf_trainer": "transformers"}  # dev extras


def test_there_are_seven_examples() -> None:
    assert [p.name for p in EXAMPLES] == [
        "01_matmul_add.py",
        "02_training_step.py",
        "03_inference.py",
        "04_compare.py",
        "05_lightning.py",
        "06_hf_trainer.py",
        "07_own_step.py",
    ]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs(example: Path, tmp_path: Path) -> None:
    if example.stem in FRAMEWORK:
        pytest.importorskip(FRAMEWORK[example.stem])
    done = subprocess.run(
        [sys.executable, str(example), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    written = list((tmp_path / "out").iterdir())
    assert written, "each example writes its trace or raw values into the folder it is given"
    expected = {
        "01_matmul_add": "Self CPU",
        "02_training_step": "question: Does the step wait for data?",
        "03_inference": "outside the profiled window",
        "04_compare": "correctness: agree",
        "05_lightning": "question: Which part of the Lightning step takes the time?",
        "06_hf_trainer": "question: Is the BERT step dominated by the backward pass?",
        "07_own_step": "question: Where does the time of a clipped, accumulated bf16 GRU step go?",
    }[example.stem]
    assert expected in done.stdout
