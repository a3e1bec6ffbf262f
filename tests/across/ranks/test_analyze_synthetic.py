"""The cross-rank analysis on synthetic jobs whose answers are planted (ranks/synthetic.py)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from steptrace.pipeline import analyze_ranks
from steptrace.report.model import RanksReport
from tests.across.ranks.synthetic import Plan, Truth, write_job

STRAGGLER = Plan(ranks=8, slow_rank=3, delay_ns=5_000_000, max_offset_ns=50_000_000, seed=1)


def run(plan: Plan, folder: Path) -> tuple[RanksReport, Truth]:
    folder.mkdir(parents=True, exist_ok=True)
    paths, truth = write_job(plan, folder)
    return analyze_ranks(paths, progress=False), truth


def test_offsets_are_recovered_within_10_us(tmp_path: Path) -> None:
    report, truth = run(STRAGGLER, tmp_path)
    assert report.clocks.trusted
    assert max(abs(o) for o in truth.offsets_ns.values()) > 20_000_000  # the plant is large
    assert_offsets(report, truth)


def assert_offsets(report: RanksReport, truth: Truth) -> None:
    """Offsets are relative to the reference rank (the consensus clock): so is the truth."""
    reference = report.clocks.reference_rank
    assert reference is not None
    for rank in report.ranks:
        planted = truth.offsets_ns[rank.rank] - truth.offsets_ns[reference]
        assert rank.clock_offset_us is not None
        assert abs(rank.clock_offset_us * 1000 - planted) <= 10_000


def test_the_planted_straggler_is_found_with_its_phase(tmp_path: Path) -> None:
    report, truth = run(STRAGGLER, tmp_path)
    (straggler,) = report.stragglers
    assert (straggler.rank, straggler.phase) == (3, "read_batch")
    assert straggler.excess_ms == pytest.approx(5.0, abs=1e-6)
    assert straggler.steps_late == straggler.steps == STRAGGLER.steps
    assert straggler.times_last == truth.last_rank.count(3) == straggler.of
    assert [f.rule for f in report.findings if f.rule == "straggler"] == ["straggler"]


def test_the_straggler_is_the_same_with_and_without_clock_offsets(tmp_path: Path) -> None:
    shifted, _ = run(STRAGGLER, tmp_path / "shifted")
    plain, _ = run(Plan(**{**STRAGGLER.__dict__, "max_offset_ns": 0}), tmp_path / "plain")
    assert shifted.stragglers == plain.stragglers
    assert all(r.clock_offset_us is not None and abs(r.clock_offset_us) <= 10 for r in plain.ranks)


def test_each_ranks_wait_is_within_1_us_of_the_truth(tmp_path: Path) -> None:
    report, truth = run(STRAGGLER, tmp_path)
    (summary,) = report.collectives
    for rank in range(STRAGGLER.ranks):
        planted_ns = sum(w[rank] for w in truth.waits_ns)
        assert abs(summary.wait_ms[rank] * 1e6 - planted_ns) <= 1_000
    per_step = STRAGGLER.collectives
    for rank in report.ranks:
        for k, step in enumerate(rank.steps):
            planted_ns = sum(
                w[rank.rank] for w in truth.waits_ns[k * per_step : (k + 1) * per_step]
            )
            assert step.comm_wait_ms is not None
            assert abs(step.comm_wait_ms * 1e6 - planted_ns) <= 1_000


def test_transfer_and_bandwidths_follow_from_the_plan(tmp_path: Path) -> None:
    report, truth = run(STRAGGLER, tmp_path)
    (summary,) = report.collectives
    n = STRAGGLER.ranks
    assert summary.count == summary.matched == truth.instances
    assert summary.match_key == "seq" and summary.process_group == "0"
    assert summary.transfer_ms == pytest.approx(truth.instances * STRAGGLER.transfer_ns / 1e6)
    nbytes = STRAGGLER.nelems * 4
    assert summary.bytes_per_instance == nbytes
    assert summary.algbw_gbps == pytest.approx(nbytes / STRAGGLER.transfer_ns)
    assert summary.busbw_gbps == pytest.approx(nbytes / STRAGGLER.transfer_ns * 2 * (n - 1) / n)


def test_a_balanced_noisy_job_has_no_straggler(tmp_path: Path) -> None:
    plan = Plan(ranks=8, noise_ns=600_000, max_offset_ns=50_000_000, seed=7)
    report, _ = run(plan, tmp_path)
    assert report.stragglers == ()
    assert "straggler" not in {f.rule for f in report.findings}


def test_a_missing_instance_is_reported_with_its_reason(tmp_path: Path) -> None:
    plan = Plan(ranks=4, steps=3, drop=(2, 5), seed=3)
    report, truth = run(plan, tmp_path)
    (summary,) = report.collectives
    assert summary.matched == truth.instances - 1
    (lost,) = report.unmatched
    assert lost.reason == "missing on some ranks of the group"
    assert lost.instances == plan.ranks - 1 and lost.ranks == (0, 1, 3)
    assert lost.first_key == "seq 5"
    recorded = plan.ranks * truth.instances - 1
    assert summary.matched * plan.ranks + lost.instances == recorded
    assert any("could not be matched" in w for w in report.warnings)


def test_64_ranks(tmp_path: Path) -> None:
    plan = Plan(
        ranks=64,
        steps=3,
        collectives=2,
        slow_rank=41,
        slow_phase="forward",
        delay_ns=3_000_000,
        max_offset_ns=50_000_000,
        seed=5,
    )
    report, truth = run(plan, tmp_path)
    assert [(s.rank, s.phase) for s in report.stragglers] == [(41, "forward")]
    assert report.unmatched == ()
    assert_offsets(report, truth)


def test_the_report_writes_and_reads_back_as_documented(tmp_path: Path) -> None:
    report, _ = run(Plan(ranks=3, steps=2, seed=2), tmp_path)
    data = msgspec.json.decode(msgspec.json.encode(report))
    assert list(data) == [
        "schema",
        "world_size",
        "ranks",
        "clocks",
        "collectives",
        "unmatched",
        "stragglers",
        "findings",
        "thresholds",
        "warnings",
        "critical_path",
    ]
    assert data["schema"] == "steptrace.ranks/2"
    assert set(data["collectives"][0]["wait_ms"]) == {"0", "1", "2"}
    assert msgspec.json.decode(msgspec.json.encode(report), type=RanksReport) == report


def test_rank_findings_fire_where_planted_and_only_there(tmp_path: Path) -> None:
    plain, _ = run(Plan(ranks=4, steps=3, seed=4), tmp_path / "plain")
    assert plain.clocks.trusted
    assert {f.rule for f in plain.findings} <= {"exposed-communication"}
    uneven = Plan(ranks=4, steps=3, heavy=(2, 3), transfer_ns=2_000_000, collective="alltoall")
    heavy, _ = run(uneven, tmp_path / "heavy")
    (imbalance,) = [f for f in heavy.findings if f.rule == "collective-imbalance"]
    assert imbalance.evidence.values()["rank"] == 2
    assert imbalance.evidence.values()["ratio"] == pytest.approx(3.0)
    shifted, _ = run(Plan(ranks=4, steps=3, max_offset_ns=50_000_000, seed=4), tmp_path / "s")
    (skew,) = [f for f in shifted.findings if f.rule == "clock-skew"]
    assert skew.evidence.values()["trusted"] == "yes"
    assert not shifted.stragglers and not plain.stragglers
