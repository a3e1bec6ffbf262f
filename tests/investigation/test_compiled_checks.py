"""torch.compile's findings on live CPU captures (``tests/compile_workloads.py``) and the
checks ``investigate`` runs for them: a graph break found where it was planted, its check
naming the planted line; a batch size that changes in the window recompiles, its check
naming the failed guard and finding that dynamic=True removes it with the same outputs;
a steady compiled model gets none of the three findings."""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the checks compile with torch")

import steptrace  # noqa: E402
from steptrace.capturing import Workload  # noqa: E402
from steptrace.capturing.training import training_step  # noqa: E402
from steptrace.capturing.workload import run_workload  # noqa: E402
from steptrace.errors import NotTestable  # noqa: E402
from steptrace.investigation import investigate  # noqa: E402
from steptrace.report.model import Report  # noqa: E402
from steptrace.validate.checks.compiler import break_sites, recompiles  # noqa: E402
from tests import compile_workloads  # noqa: E402

COMPILE_RULES = {"recompilation", "graph-break", "recompile-limit"}
CPU = torch.device("cpu")


@pytest.fixture(autouse=True)
def threads_kept() -> object:
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)
    torch._dynamo.reset()


def _investigated(workload: Workload, tmp_path: Path) -> Report:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return investigate(workload, out=tmp_path / "t.json", budget_s=60, checks=2)


def _check(report: Report, rule: str) -> tuple[str, str, dict[str, object]]:
    (check,) = [c for c in report.checks if c.rule == rule]
    assert check.elapsed_s is not None  # it ran
    return check.outcome, check.sentence, {f.name: f.value for f in check.measured}


def test_a_planted_break_is_found_and_its_check_names_its_line(tmp_path: Path) -> None:
    report = _investigated(compile_workloads.graph_break(), tmp_path)
    found = [f for f in report.findings if f.rule == "graph-break"]
    assert found and found[0].evidence.values()["eager_ops"] == ("aten::item",)
    outcome, sentence, figures = _check(report, "graph-break")
    lines, first = inspect.getsourcelines(compile_workloads.Breaking.forward)
    planted = first + next(k for k, line in enumerate(lines) if ".item()" in line)
    assert outcome == "supported", sentence
    assert figures["graph_breaks"] == 1 and figures["graphs"] == 2
    (site,) = figures["break_sites"]  # type: ignore[misc]
    assert f"compile_workloads.py:{planted} in forward" in site and "item()" in site


def test_a_changing_batch_size_recompiles_and_dynamic_removes_it(tmp_path: Path) -> None:
    report = _investigated(compile_workloads.batch_size_changes(), tmp_path)
    assert report.findings[0].rule == "recompilation"
    outcome, sentence, figures = _check(report, "recompilation")
    assert outcome == "supported", sentence
    assert figures["recompiles"] == 1 and figures["recompiles_dynamic"] == 0
    (reason,) = figures["reasons"]  # type: ignore[misc]
    rows = compile_workloads.ROWS
    assert f"size mismatch at index 0. expected {rows}, actual 24" in reason
    assert figures["outputs_differ"] is None


def test_a_steady_compiled_model_gets_no_compile_finding(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        captured = run_workload(
            compile_workloads.steady(), out=tmp_path / "t.json", window=steptrace.Window()
        )
    report = steptrace.analyze(captured.trace)
    assert all(s.compile is not None and s.compile.regions == 1 for s in report.analysis.steps)
    assert not {f.rule for f in report.findings} & COMPILE_RULES


def test_a_compiled_graph_is_never_named_a_dominant_operator(tmp_path: Path) -> None:
    """A compiled graph's records (``CompiledFunction``, its backward, the region) hold the
    most self time of a compiled step: with every limit at zero, ``dominant-op`` names the
    largest recorded operator instead, one of the trace's own."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        captured = run_workload(
            compile_workloads.batch_size_changes(),
            out=tmp_path / "t.json",
            window=steptrace.Window(),
        )
    anything = steptrace.Thresholds(dominant_share=0.0, dominant_step_share=0.0)
    report = steptrace.analyze(captured.trace, thresholds=anything)
    names = {o.name for o in report.analysis.operators}
    assert {"CompiledFunction", "CompiledFunctionBackward"} <= names  # the premise
    (found,) = [f for f in report.findings if f.rule == "dominant-op"]
    named = found.evidence.values()["operator"]
    assert isinstance(named, str) and named.startswith(("aten::", "prims::")), named


def _step(workload: Workload):  # type: ignore[no-untyped-def]
    loss_fn = workload.loss_fn
    assert loss_fn is not None
    return lambda state, batch: training_step(
        state["model"], state["optimizer"], loss_fn, batch, CPU
    )


def test_a_model_without_break_compiles_whole_and_fixed_shapes_never_recompile() -> None:
    workload = compile_workloads.steady()
    state = {"model": workload.model, "optimizer": workload.optimizer}
    batches = list(workload.loader or [])[:4]
    sites = break_sites(_step(workload), make_state=lambda: state, batches=batches, device=CPU)
    assert sites.graphs == 1 and sites.breaks == ()
    found = recompiles(_step(workload), make_state=lambda: state, batches=batches, device=CPU)
    assert found.recompiled == () and found.recompiled_dynamic == ()
    with pytest.raises(NotTestable):
        recompiles(_step(workload), make_state=lambda: state, batches=batches[:1], device=CPU)


def test_a_capture_keeps_dynamo_s_reasons_and_the_findings_say_them(tmp_path: Path) -> None:
    """Dynamo's own record of each compile (its failed guard) and of each graph break's
    reason, taken by the capture into the sidecar and joined to the steps by compile id."""
    reports = {}
    for name in ("batch_size_changes", "graph_break"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            captured = run_workload(
                getattr(compile_workloads, name)(),
                out=tmp_path / name / "t.json",
                window=steptrace.Window(),
            )
        reports[name] = steptrace.analyze(captured.trace)
    recompiled = reports["batch_size_changes"]
    capture = recompiled.capture
    assert capture is not None
    (again,) = [c for c in capture.compiles if c.reason and c.frame]
    (found,) = [f for f in recompiled.findings if f.rule == "recompilation"]
    assert found.evidence.values()["recompiled"] == (again.compile_id,)
    (reason,) = found.evidence.values()["reasons"]  # type: ignore[misc]
    assert "size mismatch at index 0" in reason and again.compile_id in reason
    assert "TORCH_LOGS" not in found.next_check  # nothing left to record
    broken = reports["graph_break"]
    (found,) = [f for f in broken.findings if f.rule == "graph-break"]
    (said,) = found.evidence.values()["break_reasons"]  # type: ignore[misc]
    assert "Tensor.item()" in said
