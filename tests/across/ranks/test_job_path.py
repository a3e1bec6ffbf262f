"""The job's critical path across ranks (``across.ranks.job_path``): a real gloo run with
a planted straggler, and the shared CPU DDP pair."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptrace import units
from steptrace.capturing.ranks.distributed import Plant, record_gloo_run
from steptrace.pipeline import analyze_job
from tests.conftest import gpu_trace


@pytest.mark.slow
def test_the_planted_straggler_and_its_phase_bound_every_step(tmp_path: Path) -> None:
    plant = Plant(1, "optimizer_step", 60.0, "compute")
    paths = record_gloo_run(tmp_path / "run", world_size=2, plant=plant, mode="explicit")
    job = analyze_job([str(p) for p in paths], critical_path=True)
    bounds = job.report.critical_path
    assert bounds, "every rank's path joined"
    # on a shared 2-core machine a descheduled rank can arrive last once: most steps, then
    planted = [b for b in bounds if (b.rank, b.phase) == (1, "optimizer_step")]
    assert len(planted) >= len(bounds) - 1 >= 1, bounds
    for bound in planted:
        assert bound.via == "collective"
        assert bound.phase_on_path_ms >= 0.8 * plant.extra_ms
        assert bound.others_waited_ms is not None and bound.others_waited_ms > 0.5 * plant.extra_ms
    # the straggler finding names the same rank and phase, and the path through it
    (straggler,) = [s for s in job.report.stragglers if s.rank == 1]
    assert straggler.phase == "optimizer_step"
    (finding,) = [f for f in job.report.findings if f.rule == "straggler"]
    on_rank = sum(b.rank == 1 for b in bounds)
    assert finding.evidence.values()["bounds_steps"] == on_rank
    assert f"ends on rank 1 in {on_rank} of {len(bounds)} steps" in finding.observation


def test_the_shared_ddp_pair_is_bounded_by_a_rank_at_each_step() -> None:
    ranks = [str(gpu_trace("ddp_rank0_trace")), str(gpu_trace("ddp_rank1_trace"))]
    job = analyze_job(ranks, critical_path=True)
    bounds = job.report.critical_path
    assert bounds is not None
    steps = [s.name for s in job.report.ranks[0].steps]
    assert [b.step for b in bounds] == steps
    for bound in bounds:
        assert bound.rank in (0, 1) and bound.via == "collective"
        assert 0 < bound.phase_on_path_ms <= bound.length_ms


def test_without_asking_there_is_no_job_path() -> None:
    ranks = [str(gpu_trace("ddp_rank0_trace")), str(gpu_trace("ddp_rank1_trace"))]
    report = analyze_job(ranks).report
    assert report.critical_path is None
    for finding in report.findings:
        if finding.rule == "straggler":
            assert finding.evidence.values()["bounds_steps"] is None


@pytest.mark.parametrize("fmt", ["text", "md", "html"])
def test_the_job_path_is_a_section_of_the_ranks_report(fmt: str) -> None:
    from steptrace.report.formats.renderers import renderer
    from steptrace.report.ranks.sections import ranks_document

    ranks = [str(gpu_trace("ddp_rank0_trace")), str(gpu_trace("ddp_rank1_trace"))]
    job = analyze_job(ranks, critical_path=True)
    out = renderer(fmt).render([ranks_document(job.report)])
    assert "Critical path of the job" in out
    bounds = job.report.critical_path
    assert bounds is not None
    for bound in bounds:
        assert bound.step in out and units.ms(bound.length_ms) in out
    plain = analyze_job(ranks).report
    assert "Critical path of the job" not in renderer(fmt).render([ranks_document(plain)])
