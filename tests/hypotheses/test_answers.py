"""The finding that answers the verdict comes first (issue #46.1): on every real trace, the
first finding addresses the bound the verdict names, and carries a check.

What addresses a bound is written here apart from ``answers.ANSWERS``, coarser: the
families of rules an expert would read as an answer to each bound.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import steptrace
from steptrace.hypotheses.rules.common import recorded_options
from tests.conftest import report_of, trace_params
from tests.public_traces import B200, MI300X, public_report

HOST_ON_GPU = {"cpu-bound", "small-launches", "sync-in-step", "unrecorded-time"}
HOST_ON_CPU = {
    "dispatch-bound",
    "per-tensor-optimizer",
    "thread-oversubscription",
    "dominant-op",
    "unrecorded-time",
    "inference-autograd",
}
GPU_WORK = {"precision", "dominant-op", "low-efficiency", "fusion"}
FAMILIES = {
    "input": {"input-pipeline"},
    "communication": {"comm-overlap"},
    "gpu": GPU_WORK,
}


def _reports() -> list[pytest.ParameterSet]:
    params = [p for p in trace_params() if p.values[0] is not None]
    public = [pytest.param(p, id=p.name[:40]) for p in (B200, MI300X) if p.exists()]
    return [*params, *public] or trace_params()


def _report(path: Path) -> steptrace.Report:
    return public_report(path) if path in (B200, MI300X) else report_of(path.name)


@pytest.mark.parametrize("path", _reports())
def test_the_first_finding_answers_the_verdict_with_a_check(path: Path) -> None:
    report = _report(path)
    verdict, findings = report.verdict, report.findings
    assert verdict.answered_by is not None, verdict.sentence
    first = findings[0]
    assert first.rule == verdict.answered_by and not first.minor
    assert verdict.top[0].rule == first.rule
    assert first.next_check.strip()
    family = FAMILIES.get(verdict.bound)
    if verdict.bound == "host":
        family = HOST_ON_GPU if verdict.on == "gpu" else HOST_ON_CPU
    assert family is not None and first.rule in family, (verdict.sentence, first.rule)
    # the bound's gpu side: a memory-bound claim is answered by fusion, compute by a kernel
    if verdict.gpu_bound == "memory":
        assert first.rule in {"fusion", "dominant-op"}
    if verdict.gpu_bound == "compute":
        assert first.rule in {"low-efficiency", "precision", "dominant-op"}


@pytest.mark.parametrize("path", _reports())
def test_no_report_lists_a_rule_twice(path: Path) -> None:
    rules = [f.rule for f in _report(path).findings]
    assert len(rules) == len(set(rules)), rules


def _raw_options(path: Path) -> set[str]:
    """The inflating options a trace's raw events show it was recorded with."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    found = set()
    for e in events:
        if e.get("cat") in ("python_function", "python"):
            found.add("with_stack")
        if e.get("cat") in ("cpu_op", "Operator") and e.get("args", {}).get("Input Dims"):
            found.add("record_shapes")
        if e.get("name") == "[memory]":
            found.add("profile_memory")
    return found


@pytest.mark.parametrize("path", trace_params())
def test_the_options_that_inflate_the_host_are_read_from_the_trace(path: Path) -> None:
    said = set(recorded_options(report_of(path.name).analysis))
    metadata = {k for k in said if k in ("with_flops", "with_modules")}
    assert said - metadata == _raw_options(path)


def test_a_host_bound_step_recorded_with_shapes_is_first_told_to_record_again() -> None:
    """cpu-bound on the MI250 toy loop (recorded with record_shapes) and small-launches on
    the B200 (with_stack and record_shapes, its metadata says): record again first."""
    for report, rule, options in (
        (report_of("amd_mi250"), "cpu-bound", "record_shapes"),
        (public_report(B200), "small-launches", "with_stack, record_shapes"),
    ):
        first = report.findings[0]
        assert (report.verdict.bound, first.rule) == ("host", rule)
        assert first.next_check.startswith(f"First record again without {options} (")
        assert "CUDA graph" in first.next_check
    values = report_of("amd_mi250").findings[0].evidence.values()
    assert values["recorded_options"] == ("record_shapes",)
    assert values["operators_per_step"] == report_of("amd_mi250").analysis.steps[0].cpu.operators
