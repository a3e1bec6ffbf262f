"""investigate on live loaders with workers (``tests/loader_workloads.py``): every eighth
sample slow names worker 1 and those samples, and its check (the samples read alone)
supports it, in fork and spawn; workers all busy are checked by twice as many, a slow
collate by the collate alone, each supported; cheap samples make no input finding; without
workers the check is the prepared batch, as before."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="investigate runs torch")

from steptrace.capturing import Workload  # noqa: E402
from steptrace.investigation import investigate  # noqa: E402
from steptrace.report.model import Report  # noqa: E402
from tests import loader_workloads  # noqa: E402


@pytest.fixture(autouse=True)
def threads_kept() -> object:
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def _investigated(workload: Workload, tmp_path: Path, budget_s: float = 40) -> Report:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return investigate(workload, out=tmp_path / "t.json", budget_s=budget_s, checks=1)


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_slow_samples_name_worker_1_and_are_slow_alone(tmp_path: Path, context: str) -> None:
    report = _investigated(loader_workloads.slow_samples(context), tmp_path)
    found = report.findings[0]
    assert found.rule == "input-pipeline"
    values = found.evidence.values()
    assert values["cause"] == "slow-samples" and values["workers_waited_for"] == (1,)
    named = [int(i) for i in values["slow_sample_indices"]]  # type: ignore[union-attr]
    assert named and all(i % loader_workloads.SLOW_EVERY == loader_workloads.SLOW_AT for i in named)
    check = report.checks[0]
    assert check.check == "samples-alone" and check.outcome == "supported", check.sentence
    times = {f.name: f.value for f in check.measured}["times_slower_alone"]
    planted = loader_workloads.SLOW_S / loader_workloads.READ_S
    assert isinstance(times, float) and times >= 0.3 * planted  # the planted ratio, 150x


def test_cheap_samples_make_no_input_finding(tmp_path: Path) -> None:
    report = _investigated(loader_workloads.cheap("fork"), tmp_path)
    assert not [f for f in report.findings if f.rule == "input-pipeline"]
    assert report.analysis.loader is not None and report.analysis.loader.steps


def test_without_workers_the_check_is_the_prepared_batch(tmp_path: Path) -> None:
    report = _investigated(loader_workloads.in_process(), tmp_path, budget_s=8)
    assert report.findings[0].rule == "input-pipeline"
    assert report.checks[0].check == "prepared-batch"
    assert report.analysis.loader is None


def test_workers_all_busy_are_checked_with_twice_as_many(tmp_path: Path) -> None:
    """Each sample waits 10 ms: a batch takes 40 ms a worker, 20 ms with 2 against a step of
    about 1 ms (a few on a busy machine); 4 workers make them twice as fast (waits, not the
    two cores). The budget leaves the check the 10 s it needs after a capture of up to 6 s
    (2 s in CI beside another test: 12 s left it 9.9 s)."""
    report = _investigated(loader_workloads.busy_workers("fork"), tmp_path, budget_s=16)
    found = report.findings[0]
    assert found.rule == "input-pipeline" and found.evidence.values()["cause"] == "workers-busy"
    check = report.checks[0]
    assert check.check == "more-workers" and check.outcome == "supported", check.sentence


def test_a_slow_collate_is_checked_alone(tmp_path: Path) -> None:
    report = _investigated(loader_workloads.slow_collate("fork"), tmp_path)
    found = report.findings[0]
    assert found.rule == "input-pipeline" and found.evidence.values()["cause"] == "collate"
    check = report.checks[0]
    assert check.check == "collate-alone" and check.outcome == "supported", check.sentence
    share = {f.name: f.value for f in check.measured}["collate_share"]
    assert isinstance(share, float) and share >= 0.5
