"""``diff``: synthetic traces whose changes are known by construction, real traces, inputs."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

import steptrace
import steptrace.pipeline
from steptrace.across.changes import ABSOLUTE_TOLERANCE_MS, RELATIVE_TOLERANCE
from steptrace.across.diff import (
    NO_QUESTION,
    REMINDER,
    SCHEMA,
    TraceDiff,
    diff_analyses,
)
from steptrace.errors import TraceError
from steptrace.pipeline import diff as diff_paths
from steptrace.report.model import SCHEMA as REPORT_SCHEMA
from steptrace.scenario import Scenario, record_payload, sidecar_path
from tests.conftest import WriteTrace, report_of, shared_file
from tests.tracegen import cpu, document, kernel, step


def cpu_train() -> Path:
    return shared_file("cpu/cpu_train_trace.json.gz")


def cpu_train_nw2() -> Path:
    return shared_file("cpu/cpu_train_trace_nw2.json.gz")


def one_step(number: int, t0: float, *, after: bool) -> list[dict[str, Any]]:
    """Before: 8 ms step, relu, one copy, gemm 3 ms. After: 6 ms, gelu, two copies, gemm 4 ms."""
    events = [
        step(number, t0, 6_000 if after else 8_000),
        cpu("aten::mm", t0 + 100, 1_000),
        cpu("aten::add", t0 + 1_200, 200),
        cpu("aten::gelu", t0 + 1_500, 400) if after else cpu("aten::relu", t0 + 1_500, 300),
        cpu("aten::copy_", t0 + 2_000, 100),
        kernel("gemm", t0 + 200, 4_000 if after else 3_000),
        kernel("add", t0 + 4_500, 500),
    ]
    return events + ([cpu("aten::copy_", t0 + 2_200, 100)] if after else [])


def pair(write_trace: WriteTrace) -> tuple[Path, Path]:
    before = write_trace(document(one_step(1, 0, after=False) + one_step(2, 8_000, after=False)))
    after = write_trace(document(one_step(1, 0, after=True) + one_step(2, 6_000, after=True)))
    return before, after


def moved(changes: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    return [
        (c.name, c.status, c.before_calls, c.after_calls, c.before_ms, c.after_ms) for c in changes
    ]


def test_changes_known_by_construction(write_trace: WriteTrace) -> None:
    before, after = pair(write_trace)
    result = diff_paths(before, after)
    assert result.schema == SCHEMA and result.reminder == REMINDER
    assert (result.before, result.after) == (str(before), str(after))
    assert (result.before_steps, result.after_steps) == (2, 2)
    assert result.step_ms.ratio == 0.75
    assert (result.step_ms.before.median, result.step_ms.after.median) == (8.0, 6.0)
    assert result.step_ms.delta_ms == -2.0
    busy, idle = result.gpu_busy_ms, result.gpu_idle_ms
    assert busy is not None and idle is not None
    assert (busy.before.median, busy.after.median) == pytest.approx((3.5, 4.5))
    assert (idle.before.median, idle.after.median) == pytest.approx((4.5, 1.5))
    approx = pytest.approx
    # two steps on each side: calls and times per step are half the window's
    assert moved(result.operators) == [
        ("aten::gelu", "appeared", None, 1, None, approx(0.4)),
        ("aten::relu", "disappeared", 1, None, approx(0.3), None),
        ("aten::copy_", "changed", 1, 2, approx(0.1), approx(0.2)),
    ]
    assert [c.delta_ms for c in result.operators] == approx([0.4, -0.3, 0.1])
    counts = result.operator_counts
    assert (counts.appeared, counts.disappeared, counts.changed, counts.unknown) == (1, 1, 1, 0)
    assert counts.unchanged == len(steptrace.analyze(before).analysis.operators) - 2  # relu, copy_
    assert moved(result.kernels) == [("gemm", "changed", 1, 1, approx(3.0), approx(4.0))]
    assert result.kernel_counts.unchanged == 1  # add
    assert result.warnings == (f"before and after: {NO_QUESTION}",)


def test_a_trace_against_itself_changes_nothing(write_trace: WriteTrace) -> None:
    path, _ = pair(write_trace)
    result = diff_paths(path, path)
    assert result.step_ms.ratio == 1.0 and result.step_ms.delta_ms == 0.0
    assert result.operators == () and result.kernels == ()
    assert result.operator_counts.unchanged == len(steptrace.analyze(path).analysis.operators)
    assert result.kernel_counts.unchanged == 2
    assert result.warnings == (f"before and after: {NO_QUESTION}",)


def test_small_time_changes_are_within_tolerance(write_trace: WriteTrace) -> None:
    def trace(mm_us: float, add_us: float) -> Path:
        return write_trace(
            document([step(1, 0, 10_000), cpu("mm", 100, mm_us), cpu("add", 2_000, add_us)])
        )

    # mm: +2.5% of 1 ms (above the floor, below the share); add: +50% of 8 µs (below the floor)
    assert RELATIVE_TOLERANCE == 0.05 and ABSOLUTE_TOLERANCE_MS == 0.01
    assert diff_paths(trace(1_000, 8), trace(1_025, 12)).operators == ()
    changed = diff_paths(trace(1_000, 8), trace(1_100, 20)).operators
    assert [(c.name, c.status) for c in changed] == [("mm", "changed"), ("add", "changed")]


def expected_changes(
    old: dict[str, tuple[float, float]], new: dict[str, tuple[float, float]]
) -> Any:
    """Status of every name, recomputed from the two analyses' rows."""
    status = {}
    for name in old.keys() | new.keys():
        if name not in old:
            status[name] = "appeared"
        elif name not in new:
            status[name] = "disappeared"
        else:
            (c0, t0), (c1, t1) = old[name], new[name]
            far = abs(t1 - t0) > RELATIVE_TOLERANCE * t0 and abs(t1 - t0) > ABSOLUTE_TOLERANCE_MS
            status[name] = "changed" if c0 != c1 or far else "unchanged"
    return status


def test_real_cpu_traces() -> None:
    old = report_of("cpu_train_trace.json").analysis
    new = report_of("cpu_train_trace_nw2").analysis
    result = diff_paths(cpu_train(), cpu_train_nw2())
    assert result.step_ms.ratio == pytest.approx(
        new.summary.wall_ms.median / old.summary.wall_ms.median
    )
    assert result.step_ms.before.min == old.summary.wall_ms.min
    assert result.step_ms.after.max == new.summary.wall_ms.max
    assert result.gpu_busy_ms is None and result.gpu_idle_ms is None  # CPU only: not zero
    n0, n1 = old.summary.count, new.summary.count  # compared per step
    status = expected_changes(
        {o.name: (o.calls / n0, o.self_ms / n0) for o in old.operators},
        {o.name: (o.calls / n1, o.self_ms / n1) for o in new.operators},
    )
    listed = {c.name: c.status for c in result.operators}
    assert listed == {n: s for n, s in status.items() if s != "unchanged"}
    assert result.operator_counts.unchanged == list(status.values()).count("unchanged")
    # with workers, batches are collated in their processes, which the trace does not hold
    assert {"aten::stack", "aten::cat"} <= {n for n, s in listed.items() if s == "disappeared"}
    deltas = [abs(c.delta_ms) for c in result.operators]
    assert deltas == sorted(deltas, reverse=True)
    assert result.kernels == () and result.warnings == (f"before and after: {NO_QUESTION}",)


def same_but_paths(one: TraceDiff, other: TraceDiff) -> bool:
    return msgspec.structs.replace(one, before="", after="") == msgspec.structs.replace(
        other, before="", after=""
    )


@pytest.mark.parametrize("gz", [False, True])
def test_an_analysis_json_diffs_like_its_trace(tmp_path: Path, gz: bool) -> None:
    raw = msgspec.json.encode(report_of("cpu_train_trace.json"))
    saved = tmp_path / ("analysis.json.gz" if gz else "analysis.json")
    saved.write_bytes(gzip.compress(raw) if gz else raw)
    from_json = diff_paths(saved, cpu_train_nw2())
    assert from_json.before == str(saved)
    assert same_but_paths(from_json, diff_paths(cpu_train(), cpu_train_nw2()))


def test_a_formatted_analysis_json_is_read(tmp_path: Path) -> None:
    from steptrace.report.formats.renderers import renderer
    from steptrace.report.sections.trace import report_document

    saved = tmp_path / "analysis.json"
    report = report_of("cpu_train_trace.json")
    saved.write_text(renderer("json").render([report_document(report)]))
    assert same_but_paths(diff_paths(saved, cpu_train()), diff_paths(cpu_train(), cpu_train()))


@pytest.mark.parametrize("old", ["steptrace.analysis/1", "steptrace.report/2"])
def test_a_report_of_an_earlier_schema_is_refused_in_one_line(tmp_path: Path, old: str) -> None:
    """No reader of earlier schemas is kept: the message says which schema is read."""
    report = report_of("cpu_train_trace.json")
    saved = tmp_path / "old.json"
    saved.write_text(json.dumps({**msgspec.to_builtins(report), "schema": old}))
    with pytest.raises(TraceError) as error:
        steptrace.pipeline.read_report(saved)
    assert f"schema {old!r} is not {REPORT_SCHEMA!r}" in str(error.value)
    assert "\n" not in str(error.value)


def test_a_list_cut_to_its_top_tells_no_absence(tmp_path: Path) -> None:
    full = report_of("cpu_train_trace.json")
    saved = tmp_path / "top5.json"
    saved.write_bytes(msgspec.json.encode(full.top(5)))
    result = diff_paths(saved, cpu_train())
    assert result.operators == ()  # the 5 listed ones are unchanged; the rest unknown
    assert result.operator_counts.unchanged == 5
    assert result.operator_counts.unknown == full.analysis.operators_total - 5
    assert f"before: the analysis lists 5 of {full.analysis.operators_total} operators" in "".join(
        result.warnings
    )


def with_scenario(write_trace: WriteTrace, name: str, scenario: Scenario | None) -> Path:
    path = write_trace(document(one_step(1, 0, after=False)), name=f"{name}.json")
    if scenario is not None:
        sidecar_path(path).write_text(json.dumps(record_payload(scenario, None)))
    return path


def test_scenario_mismatches_are_named_with_both_values(write_trace: WriteTrace) -> None:
    before = with_scenario(
        write_trace, "a", Scenario(question="q", batch_size=32, input_shapes=((32, 256),))
    )
    after = with_scenario(
        write_trace,
        "b",
        Scenario(question="q?", batch_size=64, dtype="bfloat16", step=("forward", "backward")),
    )
    assert diff_paths(before, after).warnings == (
        "scenarios differ in step: before data_read+transfer+forward+backward+optimizer_step, "
        "after forward+backward: only windows with the same boundaries may be compared",
        "scenarios differ in input_shapes: before 32x256, after not recorded",
        "scenarios differ in batch_size: before 32, after 64",
        "scenarios differ in dtype: before float32, after bfloat16",
    )


def test_same_scenarios_and_one_missing(write_trace: WriteTrace) -> None:
    scenario = Scenario(question="q", kind="inference", compile="default", device="cuda")
    before = with_scenario(write_trace, "a", scenario)
    assert diff_paths(before, with_scenario(write_trace, "b", scenario)).warnings == ()
    assert diff_paths(before, with_scenario(write_trace, "c", None)).warnings == (
        f"after: {NO_QUESTION}",
    )
    other = with_scenario(write_trace, "d", Scenario(question="q", model_mode="eval"))
    warnings = diff_paths(before, other).warnings
    assert "scenarios differ in compile: before default, after off" in warnings
    assert "scenarios differ in device: before cuda, after cpu" in warnings
    assert "scenarios differ in model_mode" not in "".join(warnings)  # eval on both sides


def test_gpu_observed_on_one_side_only(write_trace: WriteTrace) -> None:
    gpu_side, _ = pair(write_trace)
    cpu_side = write_trace(
        document([step(1, 0, 8_000), cpu("aten::mm", 100, 1_000)], gpu_devices=False)
    )
    result = diff_paths(gpu_side, cpu_side)
    assert result.gpu_busy_ms is None and result.gpu_idle_ms is None
    assert result.kernels == () and result.kernel_counts.unknown == 2  # unrecorded, not gone
    assert "GPU observed in before only" in "".join(result.warnings)


def test_step_markers_on_one_side_only(write_trace: WriteTrace) -> None:
    marked = write_trace(document([step(1, 0, 2_000), cpu("aten::mm", 100, 1_000)]))
    unmarked = write_trace(document([cpu("aten::mm", 100, 1_000)]))
    assert "ProfilerStep markers in before only" in "".join(diff_paths(marked, unmarked).warnings)


def test_diff_analyses_is_pure_and_keeps_trace_paths() -> None:
    old, new = report_of("cpu_train_trace.json"), report_of("cpu_train_trace_nw2")
    result = diff_analyses(old.analysis, new.analysis)
    assert (result.before, result.after) == (old.analysis.trace.path, new.analysis.trace.path)
    assert result == diff_analyses(old.analysis, new.analysis)
    assert msgspec.json.decode(msgspec.json.encode(result), type=TraceDiff) == result


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"schema": "steptrace.diff/1", "before": "a"}', "schema 'steptrace.diff/1' is not"),
        ('{"schema": "other"}', "schema 'other' is not"),
        ('[{"schema": "steptrace.report/4"}]', "holds a list of reports"),
        ('{"schema": "steptrace.findings/4"}', "holds only findings"),
        ('{"schema": "steptrace.report/4", "analysis": {}}', "not a complete steptrace report"),
        ('{"schema": "steptrace.report/4", ', "not a complete steptrace report"),
        ('{"schema": "steptrace.analysis/1", "trace": {}}', "is not 'steptrace.report/4'"),
        ('{"something": "else"}', "not a torch.profiler trace"),
        ("", "empty file"),
    ],
)
def test_bad_inputs_name_the_file(write_trace: WriteTrace, content: str, problem: str) -> None:
    bad = write_trace(content, name="bad.json")
    for args in ((bad, cpu_train()), (cpu_train(), bad)):
        with pytest.raises(TraceError) as error:
            diff_paths(*args)
        message = str(error.value)
        assert message.startswith(str(bad)) and problem in message
        assert "\n" not in message


def test_missing_file_and_folder(tmp_path: Path) -> None:
    for path, problem in ((tmp_path / "nope.json", "no such file"), (tmp_path, "is a folder")):
        with pytest.raises(TraceError, match=problem):
            diff_paths(path, cpu_train())


def test_windows_of_different_lengths_are_compared_per_step(write_trace: WriteTrace) -> None:
    def steps(count: int) -> Path:
        events = []
        for k in range(count):
            events += [step(k + 1, k * 1000, 1000), cpu("aten::mm", k * 1000 + 100, 500)]
        return write_trace(document(events))

    result = diff_paths(steps(2), steps(4))
    assert result.operators == () and result.operator_counts.unchanged == 1
    assert "2 steps before, 4 after: calls and times are compared per step" in result.warnings
