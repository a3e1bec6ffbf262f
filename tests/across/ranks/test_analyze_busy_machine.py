"""A job recorded on a busy machine (issue #47.3): gloo ranks beside two spinning processes.

The ranks' collective ends then disagree by milliseconds, as they would if their clocks
differed; the traces name one host (``host_name``), so the ranks read one clock and arrival
order is claimed on it. Rank 1 is planted 20 ms slow in ``read_batch`` (known by
construction), far more than the machine's jitter: it is the straggler, and it arrives last.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from steptrace.capturing.ranks.distributed import Plant, record_gloo_run
from steptrace.pipeline import analyze_ranks
from tests.spinners import spinning


@pytest.mark.slow
def test_a_straggler_recorded_beside_two_spinners_arrives_last_on_the_host_s_clock(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "job"
    with spinning(2):
        plant = Plant(1, "read_batch", 20.0, "compute")
        record_gloo_run(folder, world_size=4, plant=plant, mode="ddp")
    paths = [p for p in sorted(folder.glob("rank-*.json.gz"))]
    report = analyze_ranks(paths, progress=False)
    assert report.clocks.trusted, report.clocks.reason
    assert "one host" in report.clocks.reason
    assert [c.offset_us for c in report.clocks.ranks] == [0.0] * 4
    first = report.stragglers[0]
    assert (first.rank, first.phase) == (1, "read_batch")
    assert first.times_last is not None and first.times_last >= first.of - 1, first
