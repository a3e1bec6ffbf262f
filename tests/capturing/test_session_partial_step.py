"""A capture loop that ends early: warned, counted, and its cut step marked partial.

Real torch.profiler captures on the CPU (a tiny model, a few steps), read back from the
trace's raw JSON; then the analysis on small synthetic traces whose steps are known.
"""

from __future__ import annotations

import json
import re
import statistics
import warnings
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="capture needs torch (installed by make test)")

import steptrace  # noqa: E402
from steptrace.analysis.measure import measure  # noqa: E402
from steptrace.capturing.session import Capture  # noqa: E402
from steptrace.errors import CaptureError, CaptureWarning  # noqa: E402
from steptrace.report.formats.renderers import renderer  # noqa: E402
from steptrace.report.sections.trace import report_document  # noqa: E402
from steptrace.scenario import sidecar_path  # noqa: E402
from steptrace.trace.load import load_trace  # noqa: E402
from tests import workloads  # noqa: E402
from tests.conftest import WriteTrace, read_json  # noqa: E402
from tests.tracegen import cpu, document, label, step  # noqa: E402

STEP = re.compile(r"^ProfilerStep#(\d+)$")
WINDOW = steptrace.Window(cold_steps=0, wait=1, warmup=1, active=3)


def run_loop(out: Path, steps: int, window: steptrace.Window = WINDOW) -> Capture:
    """A custom training loop that stops after ``steps`` calls of ``step()``."""
    work = workloads.tiny_training()
    model, optimizer, loader = work.model, work.optimizer, work.loader
    assert model is not None and optimizer is not None and loader is not None
    with steptrace.capture(workloads.training_scenario(), out=out, window=window) as run:
        for k, (x, y) in enumerate(loader):
            if k == steps:
                break
            with run.phase("forward"):
                loss = work.loss_fn(model(x), y)  # type: ignore[misc]
            loss.backward()
            optimizer.step()
            run.step()
    return run


def raw_steps(trace: Path) -> list[dict[str, Any]]:
    """The ProfilerStep# spans as the profiler wrote them, in time order."""
    events = read_json(trace)["traceEvents"]
    found = [e for e in events if e.get("ph") == "X" and STEP.match(str(e.get("name")))]
    return sorted(found, key=lambda e: e["ts"])


def test_a_loop_ending_inside_the_window_warns_and_marks_the_cut_step(tmp_path: Path) -> None:
    ran = WINDOW.wait + WINDOW.warmup + 1  # one of the three active steps completes
    with pytest.warns(CaptureWarning, match="1 of the 3 planned active steps ran") as caught:
        run = run_loop(tmp_path / "t.json", ran)
    assert run.result is not None
    facts = run.result.facts
    assert facts.active_steps_run == 1 and len(facts.profiled_step_ms) == 1
    assert facts.partial_step == ran  # the profiler numbers steps from 0: the next one was cut
    assert f"ProfilerStep#{ran} was cut short" in str(caught[0].message)
    assert facts.warnings == (str(caught[0].message),)

    raw = raw_steps(Path(facts.traces[0]))
    assert [e["name"] for e in raw] == [f"ProfilerStep#{ran - 1}", f"ProfilerStep#{ran}"]
    report = steptrace.analyze(facts.traces[0])
    analysis = report.analysis
    assert [(s.name, s.partial) for s in analysis.steps] == [
        (e["name"], False) for e in raw[:1]
    ] + [(raw[1]["name"], True)]
    # the summary counts the complete step only
    assert analysis.summary.count == 1
    assert analysis.summary.wall_ms.median == pytest.approx(raw[0]["dur"] / 1000, abs=1e-6)
    assert analysis.summary.wall_ms.max == analysis.summary.wall_ms.median
    assert "forward" in {p.name for p in analysis.summary.phases}
    assert {p.steps for p in analysis.summary.phases} == {1}
    said = [w for w in analysis.trace.warnings if "partial" in w]
    assert said == [
        f"ProfilerStep#{ran} is partial: the capture's loop ended inside it and the profiler's "
        "stop cut it short; it is listed but left out of the step figures"
    ]
    text = renderer("text").render([report_document(report)])
    assert f"ProfilerStep#{ran} (partial)" in text and "partial steps are listed" in text


def test_the_trace_alone_says_which_step_was_cut(tmp_path: Path) -> None:
    with pytest.warns(CaptureWarning):
        run = run_loop(tmp_path / "t.json", WINDOW.wait + WINDOW.warmup + 2)
    assert run.result is not None
    trace = Path(run.result.trace)
    embedded = read_json(trace)["steptrace"]
    if isinstance(embedded, str):
        embedded = json.loads(embedded)
    assert embedded["capture"]["partial_step"] == run.result.facts.partial_step == 4
    assert embedded["capture"]["active_steps_run"] == 2
    sidecar_path(trace).unlink()
    steps = steptrace.analyze(trace).analysis.steps
    assert [s.partial for s in steps] == [False, False, True]
    assert steps[-1].name == "ProfilerStep#4"


@pytest.mark.parametrize("ran", [1, 2])
def test_a_loop_ending_before_any_active_step_completes_is_an_error(
    tmp_path: Path, ran: int
) -> None:
    """After warm-up the profiler records the step it is in: that lone cut step is no trace."""
    with pytest.raises(CaptureError) as error:
        run_loop(tmp_path / "t.json", ran)
    message = str(error.value)
    assert f"ran {ran} of the 5 scheduled steps" in message
    assert "no active step completed" in message and "\n" not in message
    assert list(tmp_path.iterdir()) == []


def test_a_complete_loop_warns_nothing_and_marks_nothing(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureWarning)
        run = run_loop(tmp_path / "t.json", 99)  # stops at the loader's end: past the window
    assert run.result is not None and run.done
    facts = run.result.facts
    assert facts.active_steps_run == WINDOW.active and facts.partial_step is None
    assert facts.warnings == ()
    analysis = steptrace.analyze(facts.traces[0]).analysis
    assert [s.partial for s in analysis.steps] == [False] * WINDOW.active
    assert analysis.summary.count == WINDOW.active


def test_a_second_window_holding_only_the_cut_step_is_not_kept(tmp_path: Path) -> None:
    window = steptrace.Window(cold_steps=0, wait=0, warmup=1, active=1, repeat=2)
    with pytest.warns(CaptureWarning) as caught:  # the 4th step (2nd cycle, active) is cut
        run = run_loop(tmp_path / "r.json", 3, window)
    assert run.result is not None
    (message,) = [str(w.message) for w in caught if w.category is CaptureWarning]
    assert "1 of the 2 planned active steps ran" in message
    assert "1 of the 2 windows were written" in message and "cut short" not in message
    assert run.result.facts.traces == (str(tmp_path / "r.json"),)
    assert run.result.facts.partial_step is None
    assert not (tmp_path / "r-2.json").exists()
    assert not sidecar_path(tmp_path / "r-2.json").exists()
    assert [s.name for s in steptrace.analyze(tmp_path / "r.json").analysis.steps] == [
        "ProfilerStep#1"
    ]


# -- the analysis, on synthetic traces -------------------------------------------------------
def three_steps(write_trace: WriteTrace) -> Path:
    """Steps of 11, 12 and 2 ms; a label of 4, 6 and 1 ms in each, an operator in it (a
    step with nothing recorded, the shortest and last, would be the profiler's stop)."""
    events = []
    for number, (at, wall, inside) in enumerate([(0, 11, 4), (11, 12, 6), (23, 2, 1)], start=1):
        events += [
            step(number, at * 1000, wall * 1000),
            label("work", at * 1000 + 100, inside * 1000),
            cpu("aten::mul", at * 1000 + 200, 500),
        ]
    return write_trace(document(events, gpu_devices=False))


def test_the_partial_step_is_listed_but_left_out_of_the_summary(write_trace: WriteTrace) -> None:
    trace = load_trace(three_steps(write_trace))
    whole, cut = measure(trace), measure(trace, partial_step=3)
    assert [s.partial for s in whole.steps] == [False, False, False]
    assert [s.partial for s in cut.steps] == [False, False, True]
    assert [s.wall_ms for s in cut.steps] == [s.wall_ms for s in whole.steps]  # still listed
    assert (whole.summary.count, cut.summary.count) == (3, 2)
    # whole: 11 ms against the others' 7 ms median, the first is shown apart, left out
    assert whole.summary.wall_ms.median == pytest.approx(statistics.median([12.0, 2.0]))
    # cut: 11 against 12 ms is within 10%, the first counts; the partial step does not
    assert cut.summary.wall_ms.median == pytest.approx(statistics.median([11.0, 12.0]))
    assert cut.summary.wall_ms.min == pytest.approx(11.0)
    work = cut.summary.phases[0]
    assert work.steps == 2 and work.exclusive_ms.median == pytest.approx(5.0)
    first = cut.summary.first_step
    assert first is not None and first.others_median_ms == pytest.approx(12.0)
    assert any("ProfilerStep#3 is partial" in w for w in cut.trace.warnings)
    assert not any("partial" in w for w in whole.trace.warnings)


def test_a_step_number_absent_from_the_trace_marks_nothing(write_trace: WriteTrace) -> None:
    trace = load_trace(three_steps(write_trace))
    assert measure(trace, partial_step=9) == measure(trace)


def test_a_trace_whose_only_step_is_partial_still_has_figures(write_trace: WriteTrace) -> None:
    path = write_trace(document([step(5, 0, 3_000), label("work", 100, 1_000)], gpu_devices=False))
    analysis = measure(load_trace(path), partial_step=5)
    assert analysis.steps[0].partial and analysis.summary.count == 1
    assert analysis.summary.wall_ms.median == pytest.approx(3.0)
