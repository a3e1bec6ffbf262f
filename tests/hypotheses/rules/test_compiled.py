"""Rule ``recompilation`` on torch.compile traces recorded on the CPU with torch 2.13
(tests/fixtures/compile/): it fires where a frame compiled again, with the ids and time
the raw events give, and stays silent on a steady compiled model and a first compile."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

import steptrace
from steptrace.hypotheses import Case, Thresholds
from steptrace.hypotheses import complete_steps as steps_for_rules
from steptrace.hypotheses.rules.compiled import recompilation
from tests import reference
from tests.paths import FIXTURES

COMPILE = FIXTURES / "compile"
ID = re.compile(r"compile_id=(\d+)/(\d+)")
TIMED = re.compile(r" \(dynamo_timed\)$")


def _recompiles(path: Path) -> tuple[list[str], int, int]:
    """From the raw events: the recompiled ids (C > 0) in order, their steps' compile time
    (the union of their (dynamo_timed) events, ns) and every step's wall (ns) summed."""
    evs = reference.events(reference.read_exact(path))
    ids: list[str] = []
    spent = wall = 0
    for _, lo, hi in reference.counted_windows(evs):
        wall += hi - lo
        mine = [
            f"{m.group(1)}/{m.group(2)}"
            for e in sorted(evs, key=lambda e: e.start)
            if lo <= e.start < hi and "_data: " in e.name and (m := ID.search(e.name))
        ]
        again = [i for i in dict.fromkeys(mine) if not i.endswith("/0")]
        if again:
            ids += again
            spans = [(max(e.start, lo), min(e.end, hi)) for e in evs if TIMED.search(e.name)]
            spent += reference.merged_length([(a, b) for a, b in spans if b > a])
    return ids, spent, wall


@pytest.mark.parametrize("kind", ["recompiles", "breaks"])
def test_a_frame_compiled_again_is_a_finding_with_its_ids_and_time(kind: str) -> None:
    path = COMPILE / f"cpu_compile_{kind}.json.gz"
    ids, spent, wall = _recompiles(path)
    assert ids  # the raw events: recompiles there are
    (found,) = [f for f in steptrace.analyze(path).findings if f.rule == "recompilation"]
    values = found.evidence.values()
    assert list(values["recompiled"]) == ids  # type: ignore[arg-type]
    assert values["compile_ms"] == pytest.approx(spent / 1e6, abs=1e-3)
    assert found.severity == pytest.approx(spent / wall, rel=1e-6)
    assert values["reasons"] is None and "TORCH_LOGS=recompiles" in found.next_check


def test_a_steady_compiled_model_and_a_first_compile_are_no_finding() -> None:
    assert not [
        f
        for f in steptrace.analyze(COMPILE / "cpu_compile_steady.json.gz").findings
        if f.rule == "recompilation"
    ]
    report = steptrace.analyze(COMPILE / "cpu_compile_recompiles.json.gz")
    case = steps_for_rules(Case(report.analysis))
    first = [s for s in case.compiled_apart if s.compile and s.compile.compiled == ("0/0",)]
    assert len(first) == 1  # step 0 compiled frame 0 the first time
    alone = msgspec.structs.replace(case, compiled_apart=tuple(first))
    assert recompilation(alone, Thresholds()) == []


# -- graph-break and recompile-limit ----------------------------------------------------------

REGION = "Torch-Compiled Region: "
GRAPH_CALLS = ("CompiledFunction", "## Call CompiledFxGraph")


def _steady_breaks(path: Path) -> tuple[int, int, int, int]:
    """From the raw events, over the steps that did not compile (compile < 10% of the wall):
    (the deepest region nesting less one, the steps with it > 0, their time in the
    outermost regions outside compiled graph calls, ns; every such step's wall summed)."""
    evs = reference.events(reference.read_exact(path))
    deepest = broken = eager = wall = 0
    for _, lo, hi in reference.counted_windows(evs):
        timed = [(max(e.start, lo), min(e.end, hi)) for e in evs if TIMED.search(e.name)]
        if reference.merged_length([(a, b) for a, b in timed if b > a]) >= 0.1 * (hi - lo):
            continue
        wall += hi - lo
        regions = [e for e in evs if lo <= e.start < hi and e.name.startswith(REGION)]
        depth = max(
            (sum(1 for o in regions if o.start <= r.start and r.end <= o.end) for r in regions),
            default=1,
        )
        if depth > 1:
            broken += 1
            deepest = max(deepest, depth - 1)
            spans = [(r.start, r.end) for r in regions]
            inside = [
                (max(g.start, a), min(g.end, b))
                for a, b in spans
                for g in evs
                if g.name.startswith(GRAPH_CALLS) and g.end > a and g.start < b
            ]
            eager += reference.merged_length(spans) - reference.merged_length(inside)
    return deepest, broken, eager, wall


def test_graph_breaks_are_a_finding_with_their_eager_time() -> None:
    path = COMPILE / "cpu_compile_breaks.json.gz"
    deepest, broken, eager, wall = _steady_breaks(path)
    assert deepest == 2 and broken == 3  # the raw events: two breaks in each steady step
    (found,) = [f for f in steptrace.analyze(path).findings if f.rule == "graph-break"]
    values = found.evidence.values()
    assert values["graph_breaks"] == deepest
    assert values["eager_ms"] == pytest.approx(eager / broken / 1e6, abs=1e-6)
    assert found.severity == pytest.approx(eager / wall, rel=1e-6)
    assert values["eager_ops"] == ("aten::item",) and "data-dependent" in found.hypothesis
    assert values["break_sites"] is None and "torch._dynamo.explain" in found.next_check


def test_a_frame_past_the_recompile_limit_is_a_finding() -> None:
    """The limit trace: recompile_limit 2, a new batch size each step; from step 2 each
    call is looked up and runs no compiled region (its raw events)."""
    path = COMPILE / "cpu_compile_limit.json.gz"
    evs = reference.events(reference.read_exact(path))
    windows = reference.counted_windows(evs)
    eager_steps = [
        name
        for name, lo, hi in windows
        if any(lo <= e.start < hi and e.name == "TorchDynamo Cache Lookup" for e in evs)
        and not any(lo <= e.start < hi and e.name.startswith(REGION) for e in evs)
    ]
    report = steptrace.analyze(path)
    (found,) = [f for f in report.findings if f.rule == "recompile-limit"]
    steady = {s.name for s in report.analysis.steps if not s.compiling}
    assert set(found.evidence.where.steps) == set(eager_steps) & steady
    assert found.evidence.values()["eager_calls"] == len(set(eager_steps) & steady)
    assert "recompile_limit" in found.hypothesis


@pytest.mark.parametrize("kind", ["steady", "warm_cache", "recompiles"])
def test_no_break_and_no_limit_where_the_frame_compiled_whole(kind: str) -> None:
    rules = {f.rule for f in steptrace.analyze(COMPILE / f"cpu_compile_{kind}.json.gz").findings}
    assert not rules & {"graph-break", "recompile-limit"}
    if kind != "recompiles":
        assert "recompilation" not in rules


def test_only_the_limit_trace_falls_back_to_eager() -> None:
    rules = {f.rule for f in steptrace.analyze(COMPILE / "cpu_compile_breaks.json.gz").findings}
    assert "recompile-limit" not in rules
