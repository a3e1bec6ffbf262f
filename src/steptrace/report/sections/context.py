"""The sections around the figures: the title, the question first, what the trace can
and cannot tell, warnings, and how to open the trace on a timeline."""

from __future__ import annotations

from steptrace import units
from steptrace.analysis.efficiency.hardware import is_amd
from steptrace.hypotheses import complete_steps
from steptrace.hypotheses.case import Case
from steptrace.hypotheses.rules.dominance import distortion_note
from steptrace.report.document import Paragraph, Section
from steptrace.report.model import Report
from steptrace.scenario import OPTION_COSTS, CaptureFacts, ProfilerCost, Scenario

NO_QUESTION = (
    "No question recorded: state it, and the step's boundaries, before reading "
    "(steptrace.profile_training and steptrace.capture record them)."
)
GPU_ABSENT = (
    "GPU not observed: the trace holds no kernel, memcpy or memset event, so GPU "
    "collection was absent or failed. Every GPU figure is 'not observed', not zero; "
    "nothing here describes the GPU."
)
CPU_ONLY = (
    "CPU-only trace, as the scenario states (device {device}): no GPU was asked for, so "
    "every GPU figure is 'not observed'."
)
NO_STEPS = (
    "No ProfilerStep markers: the whole trace is analyzed as one window. Use "
    "torch.profiler's schedule and prof.step() to get per-step figures."
)
PERFETTO = (
    "Open ui.perfetto.dev in a browser and drag the trace file into it (Perfetto reads it "
    "locally; the file is not uploaded): {trace}. chrome://tracing also opens it. Look at "
    "the steps, time ranges, threads and streams named in the findings."
)
_ON = ("1", "true", "True")


# -- the question --------------------------------------------------------------------------
def question(report: Report) -> Section:
    """The question and the step first: what this trace was captured to answer."""
    scenario = report.scenario
    if scenario is None:
        return Section("question", "Question", (Paragraph(NO_QUESTION, "warning"),))
    lines = [Paragraph(line, "question") for line in scenario_lines(scenario)]
    lines += [Paragraph(line) for line in capture_lines(report.capture)]
    return Section("question", "Question", tuple(lines))


def scenario_lines(scenario: Scenario) -> list[str]:
    step = ", ".join(scenario.parts)
    if scenario.kind == "inference":
        step += "; model loading " + ("inside" if scenario.model_load_in_step else "excluded")
    shapes = ", ".join("×".join(map(str, s)) for s in scenario.input_shapes) or "not stated"
    return [
        f"Question: {scenario.question}",
        f"Step ({scenario.kind}): {step}",
        f"Batch {scenario.batch_size or 'not stated'}"
        + (f" · sequence {scenario.sequence_length}" if scenario.sequence_length else "")
        + f" · shapes {shapes} · {scenario.dtype} · "
        f"{scenario.mode} mode · compile {scenario.compile} · {scenario.device} · "
        f"data {scenario.data_origin} · unit {scenario.unit}",
        f"Simplified: {scenario.simplifications or 'nothing stated'}",
    ]


def capture_lines(capture: CaptureFacts | None) -> list[str]:
    if capture is None:
        return []
    lines = []
    if capture.model_load_ms is not None:
        lines.append(f"Model load (outside every request): {units.ms(capture.model_load_ms)} ms")
    if capture.cold_start_ms:
        cold = ", ".join(units.ms(v) for v in capture.cold_start_ms)
        lines.append(f"Cold start (first step(s), before the profiler): {cold} ms — kept apart")
    if capture.overhead is not None:
        lines.append(_profiler_cost(capture.overhead))
    elif capture.overhead_ratio is not None:
        lines.append(
            f"Profiler distortion: profiled steps took {capture.overhead_ratio:.2f}× the "
            "same steps without the profiler (medians, timed afterwards: not interleaved, no CI)"
        )
    if capture.flops_per_step:
        mfu = capture.mfu
        lines.append(
            f"FLOPs per step {capture.flops_per_step:,}; achieved "
            f"{capture.achieved_tflops or 0:.3g} TFLOP/s; "
            + (
                f"MFU {100 * mfu:.1f}%"
                if mfu is not None
                else "MFU unknown (no peak for this device)"
            )
        )
    return lines


def _profiler_cost(cost: ProfilerCost) -> str:
    """The profiler's measured cost, said as compare says a verdict."""
    low, high = cost.ci
    how = (
        f"{len(cost.order)} pairs of interleaved blocks of {cost.block_steps} step(s), "
        f"{100 * cost.confidence:g}% CI {low:.2f}–{high:.2f}×"
    )
    if not cost.detected:
        return f"Profiler distortion: no detectable difference with and without it ({how})"
    if cost.ratio < 1:
        return (
            f"Profiler distortion: profiled steps took {cost.ratio:.2f}× the bare ones ({how}): "
            "faster while recorded, which no profiler causes; read it as the noise of this run"
        )
    return f"Profiler distortion: profiled steps took {cost.ratio:.2f}× the bare ones ({how})"


def notes(report: Report) -> Section:
    """What the trace can say: the GPU observed or not, steps or one window, costly options."""
    analysis = report.analysis
    trace = analysis.trace
    blocks: list[Paragraph] = []
    if trace.gpu_observed:
        blocks.append(Paragraph(f"GPU: {devices(report)}"))
    else:
        absent = gpu_absent_note(report.scenario)
        blocks.append(Paragraph(absent, "warning" if absent == GPU_ABSENT else "plain"))
    if not trace.steps_from_markers:
        blocks.append(Paragraph(NO_STEPS, "warning"))
    case = complete_steps(Case(analysis, report.scenario, report.capture))
    if (distortion := distortion_note(case, report.thresholds)) is not None:
        blocks.append(Paragraph(distortion))
    if compiling := [st for st in analysis.steps if st.compiling and st.compile is not None]:
        said = "; ".join(
            f"{st.name} compiled {', '.join(st.compile.compiled) or 'a backward graph'} in "
            f"{units.ms(st.compile.compile_ms)} of its {units.ms(st.wall_ms)} ms"
            + (" (a recompile)" if st.compile.recompiled else "")
            for st in compiling
            if st.compile is not None
        )
        kept = (
            "shown apart, out of the steady figures"
            if analysis.summary.compiling
            else ("every step compiled: the figures are theirs")
        )
        blocks.append(Paragraph(f"torch.compile: {said}: {kept}.", "warning"))
    first = analysis.summary.first_step
    if first is not None and first.differs and first.ratio is not None:
        blocks.append(
            Paragraph(
                f"First step {first.name} took {units.ms(first.wall_ms)} ms, {first.ratio:.2f}× "
                f"the median of the other steps ({units.ms(first.others_median_ms)} ms): shown "
                "apart, not averaged away.",
                "warning",
            )
        )
    blocks += [
        Paragraph(f"{k} was on: {cost}", "warning")
        for k, cost in OPTION_COSTS.items()
        if trace.options.get(k) in _ON
    ]
    return Section("notes", "What this trace can tell", tuple(blocks))


def devices(report: Report) -> str:
    found = report.analysis.trace.devices
    if not found:
        return "no deviceProperties in the trace"
    named = [f"{d.name} ({'gfx' if is_amd(d) else 'cc'} {d.compute_capability})" for d in found]
    return ", ".join(f"{named.count(n)} × {n}" for n in dict.fromkeys(named))


def gpu_absent_note(scenario: Scenario | None) -> str:
    """Why there are no GPU figures: expected (a CPU scenario) or a warning."""
    if scenario is not None and not scenario.device.startswith("cuda"):
        return CPU_ONLY.format(device=scenario.device)
    return GPU_ABSENT


def warnings(report: Report) -> tuple[Section, ...]:
    """The trace's warnings and the report's, when there are any."""
    found = report.analysis.trace.warnings + report.warnings
    if not found:
        return ()
    return (Section("warnings", "Warnings", tuple(Paragraph(w, "warning") for w in found)),)


def timeline(trace: str) -> Section:
    return Section(
        "timeline", "Open the trace on the timeline", (Paragraph(PERFETTO.format(trace=trace)),)
    )
