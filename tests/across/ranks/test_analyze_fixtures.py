"""Real gloo rank sets recorded with torch 2.13 on this machine, each with its ``truth.json``.

They are read from ``STEPTRACE_RANK_FIXTURES`` (default: the committed sets in
``tests/fixtures/ranks``; other sets recorded the same way can be pointed to). A planted
straggler must rank first with its planted phase; a balanced set must give no straggler; a
set whose rank clock was shifted must have that offset recovered within 1 ms, and no
straggler.
"""

from __future__ import annotations

import gzip
import json
import os
import statistics
from pathlib import Path
from typing import Any

import pytest

from steptrace.pipeline import analyze_ranks
from steptrace.report.model import RanksReport
from tests.paths import FIXTURES

COMMITTED = FIXTURES / "ranks"
FIXTURES = Path(os.environ.get("STEPTRACE_RANK_FIXTURES", str(COMMITTED)))


def _sets() -> list[Any]:
    found = sorted(p.parent for p in FIXTURES.glob("*/truth.json")) if FIXTURES.is_dir() else []
    assert found, f"no rank sets (a folder with truth.json) in {FIXTURES}"
    return [pytest.param(p, id=p.name) for p in found]


def _analyze(folder: Path) -> tuple[RanksReport, dict[str, Any]]:
    truth = json.loads((folder / "truth.json").read_text(encoding="utf-8"))
    paths = sorted(folder.glob("rank-*.json*"))
    paths = [p for p in paths if not p.name.endswith(".scenario.json")]
    assert len(paths) == truth["world_size"]
    return analyze_ranks(paths, progress=False), truth


@pytest.mark.parametrize("folder", _sets())
def test_the_recorded_set_gives_its_planted_answer(folder: Path) -> None:
    report, truth = _analyze(folder)
    assert [r.rank for r in report.ranks] == list(range(truth["world_size"]))
    assert report.unmatched == ()
    assert all(c.matched == c.count > 0 for c in report.collectives)
    plant, shifted = truth.get("plant"), truth.get("shifted")
    rules = [f.rule for f in report.findings]
    if plant:
        first = report.stragglers[0]
        assert (first.rank, first.phase) == (plant["rank"], plant["phase"])
        assert first.excess_ms == pytest.approx(plant["extra_ms"], rel=0.25)
        assert rules.count("straggler") == len(report.stragglers)
    else:
        assert report.stragglers == ()
        assert "straggler" not in rules
    if shifted:
        (clock,) = [c for c in report.clocks.ranks if c.rank == shifted["rank"]]
        assert clock.offset_us is not None
        assert abs(clock.offset_us / 1000 - shifted["by_ms"]) <= 1.0


@pytest.mark.parametrize("folder", _sets())
def test_one_claim_per_millisecond_with_the_straggler_first(folder: Path) -> None:
    report, truth = _analyze(folder)
    timed = [f for f in report.findings if f.basis == "step time"]
    assert sum(f.severity for f in timed) <= 1.0
    plant = truth.get("plant")
    if not plant:
        return
    first = report.findings[0]
    assert first.rule == "straggler" and first.evidence.values()["rank"] == plant["rank"]
    # the wait it causes is about the planted delay: the others wait for it, each step
    walls = [s.wall_ms for r in report.ranks if r.rank != plant["rank"] for s in r.steps]
    caused_ms = first.severity * statistics.median(walls)
    assert 0.6 * plant["extra_ms"] <= caused_ms <= 1.1 * plant["extra_ms"]
    # exposed-communication keeps only the rest: at least half the delay is no longer its
    exposed = [f for f in report.findings if f.rule == "exposed-communication"]
    whole = statistics.median(
        s.exposed_comm_ms for r in report.ranks for s in r.steps if s.exposed_comm_ms
    )
    for f in exposed:
        assert float(f.evidence.values()["exposed_comm_ms"]) <= whole - plant["extra_ms"] / 2


def test_without_host_names_a_straggler_s_arrivals_are_given_with_the_clocks_uncertainty(
    tmp_path: Path,
) -> None:
    """The planted set's traces without ``host_name``: its collective ends disagree by more
    than the threshold, so the clocks are not trusted; rank 2, planted 25 ms late (far past
    that uncertainty), is still said to arrive last, by more than it, at every collective."""
    for path in sorted((COMMITTED / "slow-read-4").glob("rank-*.json.gz")):
        document = json.loads(gzip.decompress(path.read_bytes()))
        assert document.pop("host_name")
        (tmp_path / path.name).write_bytes(gzip.compress(json.dumps(document).encode()))
    report = analyze_ranks(sorted(tmp_path.glob("rank-*.json.gz")), progress=False)
    assert not report.clocks.trusted
    first = report.stragglers[0]
    assert (first.rank, first.times_last) == (2, None)
    assert first.times_last_beyond_uncertainty == first.of == 3
    (finding,) = [f for f in report.findings if f.rule == "straggler"]
    assert "by more than the clocks' uncertainty" in finding.observation
