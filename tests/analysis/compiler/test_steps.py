"""torch.compile read from the trace (issue #44.1): each step's compile time and ids, the
steps that compiled shown apart and out of the steady median, the compiler's events out
of the operator tables, the labels and every rule. Recorded on the CPU with torch 2.13
(tests/fixtures/compile/README.md); every figure against the raw events, in integer ns."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

import steptrace
from tests import reference
from tests.paths import FIXTURES

COMPILE = FIXTURES / "compile"
RECOMPILES = COMPILE / "cpu_compile_recompiles.json.gz"
BREAKS = COMPILE / "cpu_compile_breaks.json.gz"
STEADY = COMPILE / "cpu_compile_steady.json.gz"
LIMIT = COMPILE / "cpu_compile_limit.json.gz"
WARM = COMPILE / "cpu_compile_warm_cache.json.gz"
TIMED = re.compile(r" \(dynamo_timed\)$")
ID = re.compile(r"compile_id=(\d+/\d+)")
# the compiler's phases a step records without the (dynamo_timed) suffix, torch 2.13
PHASES = {"dynamo", "entire_frame_compile", "entire_backward_compile"}


def _reference(path: Path) -> list[tuple[str, int, int, list[str]]]:
    """Per step: (name, wall ns, compile ns: the union of its (dynamo_timed) events, the
    compile ids of its _data annotations in order)."""
    evs = reference.events(reference.read_exact(path))
    found = []
    for name, lo, hi in reference.counted_windows(evs):
        timed = [
            (max(e.start, lo), min(e.end, hi))
            for e in evs
            if TIMED.search(e.name) and e.end > lo and e.start < hi
        ]
        ids = [
            m.group(1)
            for e in sorted(evs, key=lambda e: e.start)
            if lo <= e.start < hi and "_data: " in e.name and (m := ID.search(e.name))
        ]
        found.append((name, hi - lo, reference.merged_length(timed), list(dict.fromkeys(ids))))
    return found


@pytest.mark.parametrize("path", [RECOMPILES, BREAKS, STEADY], ids=lambda p: p.name[13:-8])
def test_each_step_carries_its_compile_time_and_ids(path: Path) -> None:
    report = steptrace.analyze(path)
    expected = _reference(path)
    assert [s.name for s in report.analysis.steps] == [name for name, *_ in expected]
    for step, (_, wall, compiling, ids) in zip(report.analysis.steps, expected, strict=True):
        assert step.compile is not None  # every step runs a compiled region
        assert step.compile.compile_ms == pytest.approx(compiling / 1e6, abs=1e-6)
        assert list(step.compile.compiled) == ids
        assert list(step.compile.recompiled) == [i for i in ids if not i.endswith("/0")]
        assert step.compiling == (compiling >= 0.1 * wall)
        if ids:  # a step that compiled did little else: its compile is most of its wall
            assert compiling >= 0.9 * wall


def test_the_median_comes_from_the_steps_that_did_not_compile() -> None:
    """Steps of 10.5 s, 1.8 s, 1.1 s and 1.7 s compile; the others take 0.6 ms."""
    report = steptrace.analyze(RECOMPILES)
    expected = _reference(RECOMPILES)
    quiet = [wall for _, wall, compiling, _ in expected if compiling < 0.1 * wall]
    apart = [name for name, wall, compiling, _ in expected if compiling >= 0.1 * wall]
    assert len(quiet) == 3 and len(apart) == 4
    summary = report.analysis.summary
    assert summary.wall_ms.median == pytest.approx(statistics.median(quiet) / 1e6, abs=1e-6)
    assert summary.compiling == tuple(apart)
    assert [s.name for s in report.analysis.steps if s.compiling] == apart


def test_a_steady_compiled_model_has_no_step_apart() -> None:
    report = steptrace.analyze(STEADY)
    assert report.analysis.summary.compiling == ()
    assert not any(s.compiling for s in report.analysis.steps)
    assert all(s.compile is not None and s.compile.regions == 1 for s in report.analysis.steps)


def test_graph_breaks_show_as_regions_nested_in_regions() -> None:
    """.item() and print in forward: two breaks, each resumed frame a region inside the
    one before (raw events: the deepest nesting of regions in a steady step)."""
    report = steptrace.analyze(BREAKS)
    evs = reference.events(reference.read_exact(BREAKS))
    for name, lo, hi in reference.counted_windows(evs)[2:]:
        regions = [
            e for e in evs if lo <= e.start < hi and e.name.startswith("Torch-Compiled Region: ")
        ]
        depth = max(
            sum(1 for o in regions if o.start <= r.start and r.end <= o.end) for r in regions
        )
        (step,) = [s for s in report.analysis.steps if s.name == name]
        assert step.compile is not None
        assert step.compile.graph_breaks == depth - 1 == 2
        outer = [
            r
            for r in regions
            if not any(o is not r and o.start <= r.start and r.end <= o.end for o in regions)
        ]
        assert step.compile.regions == len(outer)


def _compiler_name(name: str) -> bool:
    return bool(TIMED.search(name)) or name in PHASES or "_data: " in name


@pytest.mark.parametrize("path", [RECOMPILES, BREAKS], ids=lambda p: p.name[13:-8])
def test_no_table_label_or_finding_names_a_compiler_phase(path: Path) -> None:
    report = steptrace.analyze(path)
    analysis = report.analysis
    assert not [o.name for o in analysis.operators if _compiler_name(o.name)]
    assert not [p.name for s in analysis.steps for p in s.phases if _compiler_name(p.name)]
    said = " ".join(t for f in report.findings for t in (f.observation, f.next_check, *f.caveats))
    named = [rf"(?<![\w.]){re.escape(n)}(?![\w.])" for n in (*PHASES, "compile_file")]
    assert not [n for n in named if re.search(n, said)]
    assert "dynamo_timed" not in said and "_data:" not in said
    # the operators' time is the steady steps': within a few ms of the raw steps' own
    total = sum(o.self_ms for o in analysis.operators)
    steady = sum(s.wall_ms for s in analysis.steps if not s.compiling)
    assert total <= steady


REGION = "Torch-Compiled Region: "
GRAPH_CALLS = ("CompiledFunction", "## Call CompiledFxGraph")
WRAPPERS = ("Pregraph bytecode", "AOTDispatcher Runtime Wrapper", "TorchDynamo Cache Lookup")


def _eager_reference(path: Path) -> list[tuple[int, int, list[str], int]]:
    """Per step, from the raw events: (the outermost regions' union, ns; the part of it
    outside every compiled graph call, ns; the outermost operators there outside Dynamo's
    wrappers, by name, most called first; the cache lookups after which no region began
    on the thread before its next lookup or the step's end)."""
    evs = reference.events(reference.read_exact(path))
    found = []
    for _, lo, hi in reference.counted_windows(evs):
        regions = [e for e in evs if lo <= e.start < hi and e.name.startswith(REGION)]
        spans = [(r.start, r.end) for r in regions]
        graphs = [e for e in evs if e.name.startswith(GRAPH_CALLS)]
        covered = reference.merged_length(spans)
        inside_graphs = reference.merged_length(
            [
                (max(g.start, a), min(g.end, b))
                for a, b in spans
                for g in graphs
                if g.end > a and g.start < b
            ]
        )
        twins = {TIMED.sub("", e.name) for e in evs if TIMED.search(e.name)}
        compiling = [  # the compiler's phases: what runs inside them is the compiler's
            e
            for e in evs
            if _compiler_name(e.name)
            or e.name in twins
            or re.match(r"compile_attempt_\d+$", e.name)
        ]
        masks = [(e.start, e.end) for e in graphs] + [
            (e.start, e.end) for e in evs if e.name.startswith(WRAPPERS)
        ]
        candidates = [
            e
            for e in evs
            if e.cat == "cpu_op"
            and not e.name.startswith(REGION)
            and not _compiler_name(e.name)
            and any(a <= e.start < b for a, b in spans)
            and not any(a <= e.start < b for a, b in masks)
            and not any(c.thread == e.thread and c.start <= e.start < c.end for c in compiling)
        ]
        outer = [
            e
            for e in candidates
            if not any(o is not e and o.start <= e.start and e.end <= o.end for o in candidates)
        ]
        counts: dict[str, int] = {}
        for e in outer:
            counts[e.name] = counts.get(e.name, 0) + 1
        lookups = sorted(
            (e for e in evs if lo <= e.start < hi and e.name == "TorchDynamo Cache Lookup"),
            key=lambda e: e.start,
        )
        eager = sum(
            1
            for k, e in enumerate(lookups)
            if not any(
                e.end <= r.start < (lookups[k + 1].start if k + 1 < len(lookups) else hi)
                for r in regions
                if r.thread == e.thread
            )
        )
        names = sorted(counts, key=lambda n: -counts[n])
        found.append((covered, covered - inside_graphs, names, eager))
    return found


@pytest.mark.parametrize(
    "path", [BREAKS, RECOMPILES, STEADY, LIMIT, WARM], ids=lambda p: p.name[13:-8]
)
def test_the_time_outside_compiled_graphs_and_the_eager_calls(path: Path) -> None:
    """Inside the regions, outside their compiled graphs: what a break leaves eager (its
    operators named), and the lookups after which the frame ran eagerly (the limit)."""
    report = steptrace.analyze(path)
    expected = _eager_reference(path)
    for step, (regions, eager, ops, calls) in zip(report.analysis.steps, expected, strict=True):
        assert step.compile is not None
        assert step.compile.region_ms == pytest.approx(regions / 1e6, abs=1e-6)
        assert step.compile.eager_ms == pytest.approx(eager / 1e6, abs=1e-6)
        assert sorted(step.compile.eager_ops) == sorted(ops)
        assert step.compile.eager_calls == calls


def test_a_break_leaves_its_item_eager_and_the_limit_its_frame() -> None:
    """What the recordings planted: ``.item()`` between graphs in every steady step of the
    breaks trace; from step 2 of the limit trace, each call looked up and ran eagerly."""
    broken = steptrace.analyze(BREAKS).analysis.steps[2:]
    assert all(s.compile and s.compile.eager_ops == ("aten::item",) for s in broken)
    limited = steptrace.analyze(LIMIT).analysis.steps
    assert [s.compile.eager_calls if s.compile else None for s in limited] == [0, 0] + [1] * 5
    assert all(s.compile and s.compile.regions == 0 for s in limited[2:])


def test_a_warm_cache_compiles_in_a_seventh_of_the_time_and_says_so() -> None:
    warm = steptrace.analyze(WARM).analysis.steps
    assert warm[0].compile is not None and warm[0].compile.cache_hit
    assert warm[0].compiling and not any(s.compiling for s in warm[1:])
    assert not any(
        s.compile and s.compile.cache_hit for s in steptrace.analyze(RECOMPILES).analysis.steps
    )


def test_a_trace_without_compile_is_read_as_before() -> None:
    """No (dynamo_timed) event: no step has compile figures beyond its regions."""
    from tests.conftest import report_of

    report = report_of("cpu_train_trace.json.gz")
    assert all(s.compile is None for s in report.analysis.steps)
    assert report.analysis.summary.compiling == ()
