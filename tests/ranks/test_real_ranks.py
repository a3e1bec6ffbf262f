"""The shared GPU rank traces: every collective matched or reported unmatched with a reason.

The expected instances are recounted from the raw JSON in plain Python: a collective call is
a ``record_param_comms`` operator naming a collective (not ``wait``), else a ``c10d::``
operator (with no such ``record_param_comms`` inside it), else an NCCL kernel whose launch
call lies inside none of those operators.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from steptrace.pipeline import analyze_ranks
from tests.conftest import gpu_trace, read_json


def _complete(path: Path) -> list[dict[str, Any]]:
    return [e for e in read_json(path)["traceEvents"] if e.get("ph") == "X"]


def recount(path: Path) -> int:
    """Collective calls in one rank's raw trace (see the module docstring)."""
    events = _complete(path)
    rpc = [e for e in events if e["name"] == "record_param_comms"
           and e.get("args", {}).get("Collective name") not in (None, "wait")]  # fmt: skip
    c10d = [e for e in events if e.get("cat") == "cpu_op" and e["name"].startswith("c10d::")]
    c10d = [op for op in c10d if not any(_inside(r, op) for r in rpc)]
    c10d = [op for op in c10d if not any(_inside(op, o) for o in c10d if o is not op)]
    ops = rpc + c10d
    runtime = [e for e in events if e.get("cat") == "cuda_runtime"]
    launches = {e["args"]["correlation"]: e for e in runtime if "correlation" in e.get("args", {})}
    alone = 0
    for k in (e for e in events if e.get("cat") == "kernel" and "nccl" in e["name"].lower()):
        launch = launches.get(k["args"].get("correlation"))
        if launch is None or not any(_inside(launch, op) for op in ops):
            alone += 1
    return len(ops) + alone


def _inside(inner: dict[str, Any], outer: dict[str, Any]) -> bool:
    return bool(
        inner["tid"] == outer["tid"]
        and outer["ts"] <= inner["ts"]
        and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]
    )


def test_the_a100_rank_alone_reports_every_collective_unmatched() -> None:
    path = gpu_trace("a100_2rank_rank0")
    report = analyze_ranks([path], progress=False)
    expected = recount(path)
    assert expected == 21  # 15 all-reduces and 6 broadcasts, by reading the file
    assert sum(c.matched for c in report.collectives) == 0
    assert sum(u.instances for u in report.unmatched) == expected
    assert {u.reason for u in report.unmatched} == {
        "group larger than the ranks given (2 ranks in the group, 1 given)"
    }
    assert any("ranks 1 are missing" in w for w in report.warnings)
    kinds = {c.kind: c.count for c in report.collectives}
    assert kinds == {"all_reduce": 15, "broadcast": 6}


def test_the_sampled_128_rank_pair_reports_every_collective_unmatched() -> None:
    paths = [gpu_trace("sampled_128rank_rank0"), gpu_trace("sampled_128rank_rank1")]
    report = analyze_ranks(paths, progress=False)
    assert [r.rank for r in report.ranks] == [0, 1]
    assert [r.rank_from for r in report.ranks] == ["distributedInfo"] * 2
    expected = sum(recount(p) for p in paths)
    assert expected > 0
    assert sum(u.instances for u in report.unmatched) == expected
    assert sum(c.matched for c in report.collectives) == 0
    assert all(u.reason.startswith("group larger than the ranks given (128 ranks")
               for u in report.unmatched)  # fmt: skip
    assert report.clocks.trusted is False
    assert report.stragglers == ()
    assert all(r.collectives == recount(p) for r, p in zip(report.ranks, paths, strict=True))
