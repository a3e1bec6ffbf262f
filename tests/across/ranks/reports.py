"""Rank reports for the report tests: a committed fixture set, and jobs of any size.

``fixture_report`` analyzes a recorded gloo set with its paths relative to the fixtures
folder (so renders do not name this machine). ``widened`` builds an N-rank report by
construction from a recorded one: every rank a copy of one quiet rank, renumbered, and one
chosen rank made slower in one phase by a known number of ms, so that what a folded table
must name is known without running the analysis again.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import msgspec

from steptrace.across.ranks.figures import RankResult, Straggler
from steptrace.pipeline import Job, analyze_job
from steptrace.report.model import RanksReport
from tests.paths import FIXTURES as FIXTURE_FOLDER

FIXTURES = FIXTURE_FOLDER / "ranks"
GOLDEN_SET = "slow-read-4"


def rank_paths(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("rank-*.json*") if not p.name.endswith(".scenario.json"))


@functools.cache
def fixture_job(name: str = GOLDEN_SET) -> Job:
    """The fixture set analyzed, with the ranks' lanes (what the HTML report draws)."""
    here = Path.cwd()
    os.chdir(FIXTURES)
    try:
        return analyze_job(rank_paths(Path(name)), progress=False, lanes=True)
    finally:
        os.chdir(here)


def fixture_report(name: str = GOLDEN_SET) -> RanksReport:
    return fixture_job(name).report


def widened(
    ranks: int, slow_rank: int, phase: str = "read_batch", extra_ms: float = 40.0
) -> RanksReport:
    """``ranks`` copies of the fixture's rank 0; ``slow_rank`` spends ``extra_ms`` more in
    ``phase`` (and in its wall time) every step, and is the one straggler."""
    base = fixture_report()
    quiet = base.ranks[0]
    results = []
    for rank in range(ranks):
        steps = quiet.steps
        if rank == slow_rank:
            steps = tuple(
                msgspec.structs.replace(
                    s,
                    wall_ms=s.wall_ms + extra_ms,
                    phases_ms={**s.phases_ms, phase: s.phases_ms.get(phase, 0.0) + extra_ms},
                )
                for s in steps
            )
        results.append(_renumbered(quiet, rank, steps))
    straggler = Straggler(
        rank=slow_rank,
        phase=phase,
        excess_ms=extra_ms,
        steps_late=len(quiet.steps),
        steps=len(quiet.steps),
        others_wait_ms=extra_ms,
        own_wait_ms=0.0,
        times_last=None,
        of=quiet.collectives,
    )
    return msgspec.structs.replace(
        base,
        world_size=ranks,
        ranks=tuple(results),
        stragglers=(straggler,),
        findings=(),
        clocks=msgspec.structs.replace(base.clocks, ranks=()),
        collectives=(),
        unmatched=(),
    )


def _renumbered(result: RankResult, rank: int, steps: tuple) -> RankResult:  # type: ignore[type-arg]
    path = str(Path(result.path).with_name(f"rank-{rank}.json.gz"))
    return msgspec.structs.replace(result, rank=rank, path=path, steps=steps)
