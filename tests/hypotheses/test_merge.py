"""``one_per_rule``: findings of one rule merged into the most severe, never added up."""

from __future__ import annotations

from pathlib import Path

import pytest

from steptrace.hypotheses.finding import Basis, Evidence, Figure, Finding, Where, finding
from steptrace.hypotheses.merge import one_per_rule
from tests.conftest import report_of, trace_params

WHERE = Where(("ProfilerStep#1",), (0.0, 10.0), None, None)


def made(rule: str, share: float, *figures: Figure, basis: Basis = "step time") -> Finding:
    return finding(
        rule,
        share,
        observation=f"{rule} at {share}.",
        evidence=Evidence(figures, WHERE),
        hypothesis="h",
        next_check=f"check {rule}",
        caveats=("its own caveat",),
        basis=basis,
    )


def test_one_rule_is_merged_into_its_most_severe_finding() -> None:
    small, large, middle = (
        made("memory-peak", s, Figure("device", d, "text"), basis="memory peak")
        for s, d in ((0.1, "cuda:1"), (0.4, "cuda:0"), (0.2, "cuda:2"))
    )
    other = made("input-pipeline", 0.3)
    merged = one_per_rule([small, other, large, middle])
    assert [f.rule for f in merged] == ["memory-peak", "input-pipeline"]  # first-come order
    peak = merged[0]
    assert merged[1] is other
    assert (peak.severity, peak.level, peak.observation) == (0.4, "high", "memory-peak at 0.4.")
    assert peak.evidence.figures == (
        Figure("device", "cuda:0", "text"),
        Figure("instances", ("memory-peak at 0.1.", "memory-peak at 0.2."), "names"),
    )
    assert peak.caveats[0] == "its own caveat"
    assert peak.caveats[1].startswith("The rule fired 3 times; the 2 others (10.0% of the ")
    assert "memory peak, 20.0% of the memory peak" in peak.caveats[1]
    assert (
        "may add to this one, whose share is the largest of them, not their sum"
        in (peak.caveats[1])
    )


def test_the_severity_is_the_largest_never_a_sum() -> None:
    (merged,) = one_per_rule([made("sync-in-step", 0.004), made("sync-in-step", 0.003)])
    assert merged.severity == 0.004  # 0.7% added up; still under the noise floor
    assert merged.minor


def test_instances_already_held_come_first() -> None:
    held = Figure("instances", ("a", "b"), "names")
    first = made("fusion", 0.3, held, Figure("ms", 3.0, "ms"))
    (merged,) = one_per_rule([made("fusion", 0.1), first])
    assert merged.evidence.figures == (
        Figure("instances", ("a", "b", "fusion at 0.1."), "names"),
        Figure("ms", 3.0, "ms"),
    )


def test_the_same_finding_twice_is_listed_once_as_an_instance() -> None:
    twice = made("fusion", 0.2)
    (merged,) = one_per_rule([twice, twice])
    assert merged.evidence.values()["instances"] == ("fusion at 0.2.",)


def test_ties_keep_the_first() -> None:
    one, two = made("fusion", 0.2, Figure("n", 1, "count")), made("fusion", 0.2)
    (merged,) = one_per_rule([one, two])
    assert merged.evidence.values()["n"] == 1


def test_an_instances_figure_of_one_value_is_kept_as_the_first() -> None:
    first = made("fusion", 0.3, Figure("instances", "a", "names"))
    (merged,) = one_per_rule([first, made("fusion", 0.1)])
    assert merged.evidence.values()["instances"] == ("a", "fusion at 0.1.")


def test_findings_of_distinct_rules_are_left_as_they_are() -> None:
    found = [made("fusion", 0.2), made("precision", 0.1)]
    assert one_per_rule(found) == found
    assert one_per_rule([]) == []


@pytest.mark.parametrize("path", trace_params())
def test_no_shared_trace_lists_a_rule_twice(path: Path) -> None:
    """The rules that merge at the source leave the net nothing to do on the real traces."""
    found = list(report_of(path.name).findings)
    rules = [f.rule for f in found]
    assert len(rules) == len(set(rules)), rules
    assert one_per_rule(found) == found
