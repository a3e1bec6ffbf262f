"""The benchmarks' own parts on a small real trace, so that a change of the library's
internals they use (pieces, replicas) cannot leave them broken until the next long run."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tests.conftest import gpu_trace
from tests.paths import benchmark


def test_the_floors_pieces_are_the_events_of_the_trace() -> None:
    path = gpu_trace("df_index_resolver")  # the benchmarks' trace, 54 MB of JSON
    pieces = benchmark("throughput_floor").cut_pieces(path)
    assert len(pieces) > 5
    events = [e for piece in pieces for e in json.loads(piece)]
    written = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    assert events == written[: len(events)]
    assert len(events) > 0.9 * len(written)  # the rest, under one piece, goes with the end


def test_a_replica_is_a_longer_valid_trace(tmp_path: Path) -> None:
    path = gpu_trace("amd_mi250")
    target = tmp_path / "x2.json.gz"
    benchmark("scale_one_trace").build_replica(path, target, 2)
    one = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    two = json.loads(gzip.decompress(target.read_bytes()))["traceEvents"]
    assert len(two) == 2 * len(one)


def test_the_guard_fails_a_ratio_above_its_threshold_and_an_unsupported_demo() -> None:
    guard = benchmark("guard")
    judged = [guard.judge(ratio, 0.70) for ratio in (0.5, 0.70, 0.71, None)]
    assert judged == ["PASS", "PASS", "FAIL", "FAIL"]  # not measured: a failure
    assert guard.judge(3.0, None) == "info"
    check = {"rule": "input-pipeline", "check": "prepared-batch", "outcome": "supported"}
    found = {"findings": [{"rule": "input-pipeline"}, {"rule": "dispatch-bound"}]}
    assert guard.demo_outcome({**found, "checks": [{**check, "elapsed_s": 5.0}]})[0]
    not_run = {**check, "outcome": "not-testable", "elapsed_s": None}
    refuted = {**check, "outcome": "refuted", "elapsed_s": 5.0}
    for checks in ([not_run], [refuted], []):
        assert not guard.demo_outcome({**found, "checks": checks})[0]
    ok, said = guard.demo_outcome({"findings": [{"rule": "dispatch-bound"}], "checks": []})
    assert not ok and "NOT found" in said
    row = guard.Measure("1x analyze / json.loads", "0.56 s", "0.70 s", 0.8, 0.7, "FAIL", 1.5, 5)
    line = guard.table([row]).splitlines()[1].split()
    assert line[-6:] == ["0.80", "<=", "0.70", "FAIL", "1.50", "5"]
