"""The scenario: validation, defaults resolved in its plain form, sidecar naming, reading."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

import steptrace
from steptrace.scenario import (
    CaptureFacts,
    Scenario,
    decode_record,
    read_sidecar,
    record_payload,
    sidecar_path,
)
from tests.conftest import WriteTrace
from tests.tracegen import document, step


def test_defaults_follow_the_kind() -> None:
    training = Scenario(question="Does the step wait for data?")
    assert training.parts == ("data_read", "transfer", "forward", "backward", "optimizer_step")
    assert training.mode == "train"
    inference = Scenario(question="How long is a request?", kind="inference")
    assert inference.parts == ("transfer", "forward") and inference.mode == "eval"
    assert not inference.model_load_in_step


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"question": "  "}, "needs a question"),
        ({"question": "q", "kind": "inference", "step": ["forward", "backward"]}, "inference"),
        ({"question": "q", "kind": "serving"}, "Invalid enum value"),
        ({"question": "q", "step": ["forward", "fly"]}, "Invalid enum value"),
        ({"question": "q", "batch_size": 0}, "batch_size"),
        ({"question": "q", "colour": "blue"}, "unknown field"),
        ({"kind": "training"}, "missing required field `question`"),
    ],
)
def test_invalid_scenarios_are_refused(fields: dict[str, object], problem: str) -> None:
    with pytest.raises((ValueError, msgspec.ValidationError), match=problem):
        Scenario.from_dict(fields)


def test_plain_form_round_trips() -> None:
    scenario = Scenario(
        question="q", batch_size=8, input_shapes=((8, 3, 32, 32),), dtype="autocast-bfloat16"
    )
    plain = json.loads(json.dumps(scenario.to_dict()))
    assert Scenario.from_dict(plain).to_dict() == plain
    assert plain["step"][-1] == "optimizer_step" and plain["model_mode"] == "train"


def test_sidecar_names() -> None:
    assert sidecar_path(Path("run/trace.json.gz")) == Path("run/trace.scenario.json")
    assert sidecar_path(Path("run/rank-0.pt.trace.json")) == Path(
        "run/rank-0.pt.trace.scenario.json"
    )


def test_a_trace_without_scenario_says_no_question_was_recorded(write_trace: WriteTrace) -> None:
    from click.testing import CliRunner

    from steptrace.cli import app

    path = write_trace(document([step(1, 0, 100)]))
    assert steptrace.analyze(path).scenario is None
    result = CliRunner().invoke(app, ["analyze", str(path)])
    assert "No question recorded" in result.stdout
    out = CliRunner().invoke(app, ["analyze", str(path), "--format", "json"]).stdout
    assert json.loads(out)["scenario"] is None


def test_a_sidecar_scenario_is_reported_first(write_trace: WriteTrace) -> None:
    from click.testing import CliRunner

    from steptrace.cli import app

    path = write_trace(document([step(1, 0, 100)]), name="trace.json")
    scenario = Scenario(question="Is the copy repeated every step?", batch_size=32)
    capture = CaptureFacts(cold_start_ms=(12.5,), overhead_ratio=1.25)
    sidecar_path(path).write_text(json.dumps(record_payload(scenario, capture)))
    text = CliRunner().invoke(app, ["analyze", str(path)]).stdout
    assert text.index("Question: Is the copy repeated every step?") < text.index("Steps")
    assert "Cold start (first step(s), before the profiler): 12.50 ms" in text
    assert "1.25× the same steps without the profiler" in text
    out = json.loads(CliRunner().invoke(app, ["analyze", str(path), "--format", "json"]).stdout)
    assert out["scenario"]["question"] == "Is the copy repeated every step?"
    assert out["capture"]["cold_start_ms"] == [12.5]
    md = CliRunner().invoke(app, ["analyze", str(path), "--format", "md"]).stdout
    assert "- Question: Is the copy repeated every step?" in md


def test_an_unreadable_sidecar_is_a_warning(write_trace: WriteTrace) -> None:
    path = write_trace(document([step(1, 0, 100)]), name="trace.json")
    sidecar_path(path).write_text("{not json")
    payload, warnings = read_sidecar(path)
    assert payload is None
    assert "unreadable" in warnings[0]
    assert any("unreadable" in w for w in steptrace.analyze(path).warnings)


def test_decoding_a_record_is_pure_and_prefers_the_sidecar() -> None:
    ours = record_payload(Scenario(question="from the sidecar"), CaptureFacts(mfu=0.5))
    theirs = record_payload(Scenario(question="from the trace"), None)
    record, warnings = decode_record(ours, theirs)
    assert record is not None and warnings == []
    assert (record.scenario.question, record.source) == ("from the sidecar", "sidecar")
    assert record.capture == CaptureFacts(mfu=0.5)
    record, warnings = decode_record({"scenario": {"question": ""}}, theirs, "x.scenario.json")
    assert record is not None and record.scenario.question == "from the trace"
    assert warnings[0].startswith("scenario sidecar x.scenario.json is unreadable")
    record, warnings = decode_record(None, json.dumps(theirs))  # a JSON string, as kineto keeps
    assert record is not None and record.source == "trace" and record.capture is None


def test_a_cpu_scenario_explains_the_missing_gpu_calmly(write_trace: WriteTrace) -> None:
    from steptrace.report.sections.context import GPU_ABSENT, gpu_absent_note

    path = write_trace(document([step(1, 0, 100)]), name="trace.json")
    assert gpu_absent_note(steptrace.analyze(path).scenario) == GPU_ABSENT  # no scenario: warn
    for device, expected_warning in (("cpu", False), ("cuda", True)):
        sidecar_path(path).write_text(
            json.dumps(record_payload(Scenario(question="q", device=device), None))
        )
        note = gpu_absent_note(steptrace.analyze(path).scenario)
        assert (note == GPU_ABSENT) == expected_warning
