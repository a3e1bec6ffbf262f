"""``find`` (every rule, most severe first), the rule list, findings' levels, thresholds."""

from __future__ import annotations

import math
import re

import msgspec
import pytest

from steptrace.hypotheses import RULES, Case, Thresholds, find
from steptrace.hypotheses.finding import Evidence, Where, finding
from steptrace.hypotheses.rules.job import RANK_RULES
from steptrace.scenario import Scenario
from tests.analyses import analysis, cpu, gpu_step, operator, reading, steps
from tests.paths import DOCS as DOC_FOLDER

DOCS = DOC_FOLDER / "findings.md"


def busy_cpu_trace() -> Case:
    """A CPU trace where four rules fire, explaining 1.0, 0.3, 0.1 and 0 of the step."""
    data = analysis(
        steps(10.0, 10.0, 10.0, reading=reading(3.0), cpu=cpu(6.0, operators=250, operator_us=4.0)),
        operators=[operator("aten::conv2d", self_ms=3.0)],  # 3 ms of 30: dominant, 10%
    )
    return Case(data, scenario=Scenario(question="q", device="cuda"))


def test_rules_are_listed_in_the_documented_order() -> None:
    rules = DOCS.read_text(encoding="utf-8").partition("## Each finding's check")[0]
    single, _, ranks = rules.partition("## Rules over several ranks")
    documented = re.findall(r"^\| `([a-z-]+)` \|", single, re.M)
    assert [rule_id for rule_id, _ in RULES] == documented
    assert len(RULES) == 26
    assert re.findall(r"^\| `([a-z-]+)` \|", ranks, re.M) == list(RANK_RULES)


def test_each_rule_reports_under_its_own_id() -> None:
    fired = {
        rule_id: [f.rule for f in rule(busy_cpu_trace(), Thresholds())] for rule_id, rule in RULES
    }
    expected = {"input-pipeline", "dominant-op", "gpu-not-observed"}
    assert fired == {rule_id: [rule_id] if rule_id in expected else [] for rule_id, _ in RULES}


def test_find_ranks_by_severity() -> None:
    found = find(busy_cpu_trace())
    assert [(f.rule, f.severity) for f in found] == [
        ("gpu-not-observed", 1.0),
        ("input-pipeline", 0.3),
        ("dominant-op", 0.1),
    ]
    assert [f.level for f in found] == ["high", "high", "medium"]


def test_find_keeps_the_documented_order_on_ties() -> None:
    data = analysis(
        steps(10.0, 10.0, reading=reading(3.0), cpu=cpu(6.0)),
        operators=[operator("aten::conv2d", self_ms=6.0)],  # 6 ms of 20: 0.3, as reading
    )
    found = find(Case(data))
    assert [(f.rule, f.severity) for f in found] == [
        ("input-pipeline", 0.3),
        ("dominant-op", 0.3),
    ]


def test_find_uses_the_default_thresholds_unless_told() -> None:
    case = busy_cpu_trace()
    assert find(case) == find(case, Thresholds())
    quieter = find(case, Thresholds(input_share=0.31, short_operator_count=251))
    assert [f.rule for f in quieter] == ["gpu-not-observed", "dominant-op"]


def test_find_on_a_quiet_trace() -> None:
    data = analysis(steps(10.0, 10.0, gpu=gpu_step(9.0)), operators=[operator("a", gpu_ms=0.9)])
    assert find(Case(data)) == ()


# -- the level of a finding -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("severity", "share", "level"),
    [
        (1.5, 1.0, "high"),
        (0.2, 0.2, "high"),
        (0.1999, 0.1999, "medium"),
        (0.05, 0.05, "medium"),
        (0.0499, 0.0499, "low"),
        (0.0, 0.0, "low"),
        (-0.3, 0.0, "low"),
    ],
)
def test_severity_is_clipped_and_given_a_level(severity: float, share: float, level: str) -> None:
    made = finding(
        "x",
        severity,
        observation="o",
        hypothesis="h",
        next_check="n",
        evidence=Evidence((), Where(("s",), (0.0, 1.0), None, None)),
    )
    assert (made.severity, made.level) == (share, level)


# -- thresholds -------------------------------------------------------------------------------
def test_replace_returns_a_validated_copy() -> None:
    base = Thresholds()
    changed = base.replace(["input_share=0.2", " small_kernel_count = 150 ", "pageable_bytes=0"])
    assert isinstance(changed.small_kernel_count, int)
    assert base == Thresholds()  # unchanged
    assert changed.to_dict() == base.to_dict() | {
        "input_share": 0.2,
        "small_kernel_count": 150,
        "pageable_bytes": 0,
    }


def test_replace_refuses_unknown_names_and_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="unknown threshold 'input_shares'") as error:
        Thresholds().replace(["input_shares=0.2"])
    assert f"the thresholds are: {', '.join(Thresholds().to_dict())}" in str(error.value)
    assert "field" not in str(error.value) and "Object" not in str(error.value)


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("input_share=abc", "input_share='abc': must be a number"),
        ("small_kernel_count=1.5", "small_kernel_count='1.5': must be a whole number"),
    ],
)
def test_replace_says_what_kind_a_value_must_be(assignment: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Thresholds().replace([assignment])


@pytest.mark.parametrize(
    "assignment",
    [
        "input_share=-0.1",
        "small_kernel_count=-1",
        "input_share=nan",
        "input_share=inf",
        "overhead_ratio=-inf",
    ],
)
def test_replace_refuses_negative_and_non_finite_values(assignment: str) -> None:
    with pytest.raises(ValueError, match="must be a finite, non-negative number"):
        Thresholds().replace([assignment])


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("input_share", "expected NAME=VALUE"),
        ("input_share=abc", "must be a number"),
        ("small_kernel_count=2.5", "must be a whole number"),
    ],
)
def test_replace_refuses_malformed_assignments(assignment: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Thresholds().replace([assignment])


def test_thresholds_are_all_finite_numbers_by_default() -> None:
    values = Thresholds().to_dict()
    assert set(values) == set(Thresholds.__struct_fields__)
    assert all(isinstance(v, int | float) and math.isfinite(v) and v >= 0 for v in values.values())
    assert Thresholds().replace([]) == Thresholds()


def test_a_partial_step_is_left_out_of_every_rule() -> None:
    """A tiny step cut short by the profiler's stop would drag every median: rules skip it."""
    complete = steps(10.0, reading=reading(3.0), cpu=cpu(6.0))
    cut = msgspec.structs.replace(steps(0.2, reading=reading(0.2))[0], name="cut", partial=True)
    with_cut = Case(analysis([*complete, cut]), scenario=Scenario(question="q", device="cuda"))
    without = Case(analysis(complete), scenario=Scenario(question="q", device="cuda"))
    assert [(f.rule, f.severity) for f in find(with_cut)] == [
        (f.rule, f.severity) for f in find(without)
    ]
    only_cut = Case(analysis([cut]))  # every step partial: they are all that is known
    assert find(only_cut) == find(Case(analysis([msgspec.structs.replace(cut, partial=False)])))
