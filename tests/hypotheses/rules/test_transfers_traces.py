"""Rule ``repeated-copy`` on the sampled DLRM ranks: their two recurring copies make one
finding naming both, its severity their time together, checked against the raw JSON.

The reference reads the trace's events in plain Python (``tests.reference``): each
host-to-device copy's launch call (by ``correlation``), the step it began in, the
innermost label and operator open around it on its thread.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from steptrace.hypotheses.finding import NOISE_FLOOR
from tests import reference
from tests.conftest import gpu_trace, report_of
from tests.reference import Ev

BATCH_LABEL = "## data_load ##"  # the DLRM's reading of the batch: expected to copy
RUNTIME = ("cuda_runtime", "Runtime", "cuda_driver")
Key = tuple[str, object, str, str]  # copy name (direction, memory), bytes, operator, label


def launches(evs: list[Ev]) -> dict[object, Ev]:
    return {
        e.raw["args"]["correlation"]: e
        for e in evs
        if e.cat in RUNTIME and "correlation" in e.raw.get("args", {})
    }


def recurring_copies(
    evs: list[Ev], windows: list[tuple[str, int, int]]
) -> tuple[dict[Key, list[Ev]], list[int]]:
    """Host-to-device copies grouped by what they are, those found the same number of times
    in every step outside the batch's label; and each step's host-to-device copies' union."""
    by_thread: dict[tuple[str, str], tuple[list[Ev], list[Ev]]] = defaultdict(lambda: ([], []))
    for e in evs:  # in opening order
        if reference.is_label(e) and not reference.STEP.match(e.name):
            by_thread[e.thread][0].append(e)
        elif reference.is_cpu_op(e):
            by_thread[e.thread][1].append(e)
    calls = launches(evs)
    groups: dict[Key, list[list[Ev]]] = defaultdict(lambda: [[] for _ in windows])
    per_step: list[list[tuple[int, int]]] = [[] for _ in windows]
    for copy in reference.gpu_events(evs):
        call = calls.get(copy.raw.get("args", {}).get("correlation"))
        if "HtoD" not in copy.name or call is None:
            continue
        steps = [k for k, (_, lo, hi) in enumerate(windows) if lo <= call.start < hi]
        if not steps:
            continue
        k = steps[-1]
        labels, ops = by_thread[call.thread]
        label, op = reference.innermost(labels, call.start), reference.innermost(ops, call.start)
        per_step[k].append((copy.start, copy.end))
        if label is None or op is None:
            continue
        groups[copy.name, copy.raw["args"].get("bytes"), op.name, label.name][k].append(copy)
    recurring = {
        key: [c for step in found for c in step]
        for key, found in groups.items()
        if key[3] != BATCH_LABEL and len({len(s) for s in found}) == 1 and found[0]
    }
    return recurring, [reference.merged_length(s) for s in per_step]


@pytest.mark.parametrize("name", ["sampled_128rank_rank0", "sampled_128rank_rank1"])
def test_two_recurring_copies_make_one_finding_that_names_both(name: str) -> None:
    evs = reference.events(reference.read_exact(gpu_trace(name)))
    windows = reference.counted_windows(evs)
    recurring, unions = recurring_copies(evs, windows)
    # the raw JSON: two small copies recur in both steps, each inside its own label
    assert sorted((key[1], key[3]) for key in recurring) == [
        (1024, "## sdd_preprocess_splits ##"),
        (5120, "## all2all_data:recat_permute_gen ##"),
    ]
    copies_ns = sum(c.dur for found in recurring.values() for c in found)
    walls_ns = sum(hi - lo for _, lo, hi in windows)
    expected = min(copies_ns, sum(unions)) / walls_ns

    report = report_of(name)
    (found,) = [f for f in report.findings if f.rule == "repeated-copy"]
    assert found.severity == pytest.approx(expected, rel=1e-6)
    values = found.evidence.values()
    largest = max(recurring, key=lambda key: sum(c.dur for c in recurring[key]))
    assert values["bytes"] == largest[1]
    assert values["total_ms"] == pytest.approx(sum(c.dur for c in recurring[largest]) / 1e6)
    listed = values["instances"]
    assert isinstance(listed, tuple) and len(listed) == 2
    for (_, nbytes, operator, label), found_copies in recurring.items():
        (text,) = [t for t in listed if f"{nbytes:,} bytes" in str(t)]
        per_step = len(found_copies) // len(windows)
        assert f"by {operator} inside '{label}', {per_step}× a step" in str(text)
    assert "1 other such copy adds" in found.observation
    # tiny: listed apart, last, and out of the verdict
    assert found.minor and expected < NOISE_FLOOR
    assert report.findings[-1] == found
    assert "repeated-copy" not in {t.rule for t in report.verdict.top}
