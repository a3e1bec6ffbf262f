"""``steptrace investigate``: each finding's check run for the user, on real CPU workloads
whose truth is known by construction (``tests/investigate_workloads.py``)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="investigate captures with torch")

from steptrace.hypotheses import RULES  # noqa: E402
from steptrace.hypotheses.rules.job import RANK_RULES  # noqa: E402
from steptrace.investigation import CHECKS, investigate  # noqa: E402
from steptrace.validate import Faster, Timed  # noqa: E402
from tests import investigate_workloads as planted  # noqa: E402 (after the torch check)
from tests.paths import DOCS, TESTS  # noqa: E402

pytestmark = pytest.mark.slow  # each captures and times a real workload


@pytest.fixture(autouse=True)
def one_thread() -> object:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # 2 shared cores: one intra-op thread keeps timings sane
    yield
    torch.set_num_threads(threads)


def test_the_registry_has_a_check_for_every_rule() -> None:
    ids = {rule for rule, _ in RULES} | set(RANK_RULES)
    assert set(CHECKS) == ids
    for rule, check in CHECKS.items():
        assert check.run is not None or check.manual, f"{rule}: neither automated nor explained"


def test_the_docs_list_every_check() -> None:
    docs = (DOCS / "findings.md").read_text()
    listed = docs.split("## Each finding's check, run by `steptrace investigate`")[1]
    for rule, check in CHECKS.items():
        assert f"| `{rule}` | `{check.name}` |" in listed, rule


def test_a_slow_loader_is_supported_with_a_ratio_beyond_the_noise(tmp_path: Path) -> None:
    workload = planted.slow_loader()
    before = copy.deepcopy(workload.model.state_dict())
    report = investigate(workload, out=tmp_path / "t.json", checks=3, budget_s=20)
    (check,) = [c for c in report.checks if c.rule == "input-pipeline"]
    assert check.outcome == "supported" and isinstance(check.comparison, Faster)
    ratio, high = check.comparison.ratio, check.comparison.ci[1]
    assert high < 1 - check.comparison.band  # the whole CI beyond the noise band
    assert ratio < 0.5  # 24 ms of reading in front of ~1 ms of compute
    assert check.elapsed_s is not None and check.budget_s is not None
    assert check.elapsed_s <= check.budget_s
    # the verdict says what the check showed, where it said what to check
    top = {t.rule: t for t in report.verdict.top}
    assert report.verdict.bound == "input"
    assert top["input-pipeline"].outcome == f"supported: {check.sentence}"
    # the user's objects are untouched: the checks ran on deep copies
    after = workload.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_a_model_served_with_autograd_is_checked_under_inference_mode(tmp_path: Path) -> None:
    report = investigate(planted.served_with_autograd(), out=tmp_path / "t.json", budget_s=20)
    assert "inference-autograd" in {f.rule for f in report.findings}
    (check,) = [c for c in report.checks if c.rule == "inference-autograd"]
    assert check.check == "inference-mode" and isinstance(check.comparison, Timed)
    assert check.comparison.correctness.ok  # outputs identical with and without recording
    assert check.outcome in ("supported", "not-supported")  # measured, either way
    assert len(check.comparison.samples.a) >= 6


def test_a_healthy_workload_gets_no_supported_check(tmp_path: Path) -> None:
    report = investigate(planted.healthy(), out=tmp_path / "t.json", budget_s=20)
    assert all(c.outcome != "supported" for c in report.checks), report.checks


def test_no_check_runs_past_the_count_or_the_budget(tmp_path: Path) -> None:
    none = investigate(planted.slow_loader(), out=tmp_path / "a.json", checks=0, budget_s=20)
    spent = investigate(planted.slow_loader(), out=tmp_path / "b.json", checks=3, budget_s=1)
    for report, said in ((none, "0 checks were asked for"), (spent, "allow more with --budget")):
        assert report.checks and all(c.outcome == "not-testable" for c in report.checks)
        assert all(said in c.sentence and c.elapsed_s is None for c in report.checks)
        assert all(c.instead for c in report.checks)  # what to run by hand, always


def test_a_gpu_only_check_on_the_cpu_is_not_testable_with_its_reason() -> None:
    from steptrace.investigation.run import _reason_not_run
    from steptrace.investigation.subject import subject_of

    workload = planted.slow_loader()
    subject = subject_of(workload, torch.device("cpu"))
    finding = _finding("pageable-memcpy")
    reason = _reason_not_run(finding, subject)
    assert reason is not None and "needs a CUDA GPU" in reason


def test_the_command_writes_checks_with_every_raw_sample(tmp_path: Path) -> None:
    import subprocess

    here = TESTS
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "steptrace"),
            "investigate",
            f"{here / 'investigate_workloads.py'}:slow_loader",
            "--out",
            str(tmp_path / "t.json"),
            "--budget",
            "20",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    (check,) = [c for c in report["checks"] if c["rule"] == "input-pipeline"]
    samples = check["comparison"]["samples"]
    assert check["outcome"] == "supported"
    assert list(report)[:2] == ["schema", "verdict"]  # the verdict first, with the outcome
    (top,) = [t for t in report["verdict"]["top"] if t["rule"] == "input-pipeline"]
    assert top["outcome"].startswith("supported: ")
    assert len(samples["a"]) == len(samples["b"]) >= 6
    assert check["comparison"]["correctness"]["steps"] >= 1
    assert "Checking input-pipeline" in result.stderr


def _finding(rule: str) -> object:
    from steptrace.hypotheses.finding import Evidence, Where, finding

    place = Where(steps=("ProfilerStep#2",), time_us=(0.0, 1.0), thread=None, streams=None)
    return finding(
        rule, 0.5, observation="o", evidence=Evidence((), place), hypothesis="h", next_check="n"
    )
