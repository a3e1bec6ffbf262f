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
