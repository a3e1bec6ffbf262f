"""The shared GPU rank traces: every collective matched or reported unmatched with a reason.

The expected instances are recounted from the raw JSON in plain Python: a collective call is
a ``record_param_comms`` operator naming a collective (not ``wait``), else a ``c10d::``
operator (with no such ``record_param_comms`` inside it), else an NCCL kernel whose launch
call lies inside none of those operators; a ``gloo:*`` event is one, and then an operator
counts only if it launched a kernel.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from steptrace.pipeline import analyze_ranks
from tests.conftest import gpu_trace, read_json


def _complete(path: Path) -> list[dict[str, Any]]:
    return [e for e in read_json(path)["traceEvents"] if e.get("ph") == "X"]


def recount(path: Path) -> int:
    """Collective calls in one rank's raw trace (see the module docstring)."""
    events = _complete(path)
    rpc = [
        e
        for e in events
        if e["name"] == "record_param_comms"
        and e.get("args", {}).get("Collective name") not in (None, "wait")
    ]
    c10d = [e for e in events if e.get("cat") == "cpu_op" and e["name"].startswith("c10d::")]
    c10d = [op for op in c10d if not any(_inside(r, op) for r in rpc)]
    c10d = [op for op in c10d if not any(_inside(op, o) for o in c10d if o is not op)]
    ops = rpc + c10d
    runtime = [e for e in events if e.get("cat") == "cuda_runtime"]
    launches = {e["args"]["correlation"]: e for e in runtime if "correlation" in e.get("args", {})}
    alone, launching = 0, set()
    for k in (e for e in events if e.get("cat") == "kernel" and "nccl" in e["name"].lower()):
        launch = launches.get(k["args"].get("correlation"))
        owners = [i for i, op in enumerate(ops) if launch is not None and _inside(launch, op)]
        launching.update(owners)
        alone += not owners
    gloo = [
        e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("gloo:")
    ]
    if gloo:  # the gloo events stand for the calls; only operators that launched kernels count
        ops = [op for i, op in enumerate(ops) if i in launching]
    return len(ops) + alone + len(gloo)


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
    assert all(
        u.reason.startswith("group larger than the ranks given (128 ranks")
        for u in report.unmatched
    )
    assert report.clocks.trusted is False
    assert report.stragglers == ()
    assert all(r.collectives == recount(p) for r, p in zip(report.ranks, paths, strict=True))


@pytest.mark.parametrize(
    ("name", "world"),
    [
        pytest.param("v100_ddp2_rank1", 2, marks=pytest.mark.slow),  # 54 MB: 8 s with the recount
        ("cpu_only_gloo_rank34", 300),
    ],
)
def test_one_rank_of_a_larger_job(name: str, world: int) -> None:
    path = gpu_trace(name)
    report = analyze_ranks([path], progress=False)
    assert report.world_size == world
    assert sum(u.instances for u in report.unmatched) == recount(path) > 0
    reason = f"group larger than the ranks given ({world} ranks in the group, 1 given)"
    assert {u.reason for u in report.unmatched} == {reason}


def test_a_one_rank_job_matches_every_collective_with_itself() -> None:
    path = gpu_trace("v100_1rank_train_nsres")
    report = analyze_ranks([path], progress=False)
    assert report.unmatched == ()
    assert sum(c.matched for c in report.collectives) == recount(path) > 0
    assert report.stragglers == ()


def test_the_cpu_ddp_pair_matches_every_gloo_collective() -> None:
    paths = [gpu_trace("ddp_rank0_trace_shapes"), gpu_trace("ddp_rank1_trace_shapes")]
    report = analyze_ranks(paths, progress=False)
    assert report.unmatched == ()
    assert sum(c.matched for c in report.collectives) == recount(paths[0]) == recount(paths[1])
    assert all(c.source == "gloo" and c.match_key == "order" for c in report.collectives)
    (reduce,) = [c for c in report.collectives if c.kind == "all_reduce"]
    # the gloo events record their input (with_shapes): 131584 floats twice, 267786 twice,
    # two scalars (no size): the median of the four sized ones, rounded down, is 131584 floats
    assert reduce.bytes_per_instance == 131584 * 4
    assert reduce.algbw_gbps is not None and reduce.busbw_gbps == reduce.algbw_gbps  # 2(n-1)/n
