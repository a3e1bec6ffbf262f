"""Number formatting shared by the text and Markdown renderers (no computation)."""

from __future__ import annotations

from typing import Any

from steptrace.analysis.analyze import TraceAnalysis
from steptrace.analysis.stats import Spread
from steptrace.scenario import OPTION_COSTS

NOT_OBSERVED = "not observed"
GPU_ABSENT = (
    "GPU not observed: the trace holds no kernel, memcpy or memset event, so GPU "
    "collection was absent or failed. Every GPU figure is 'not observed', not zero; "
    "nothing here describes the GPU."
)
NO_STEPS = (
    "No ProfilerStep markers: the whole trace is analyzed as one window. Use "
    "torch.profiler's schedule and prof.step() to get per-step figures."
)


NO_QUESTION = (
    "No question was recorded with this trace: state the question and the step's "
    "boundaries before reading it (steptrace.profile_training or steptrace.capture "
    "record them)."
)
_ON = ("1", "true", "True")


def scenario_lines(result: TraceAnalysis) -> list[str]:
    """The question and the step first: what this trace was captured to answer."""
    scenario = result.scenario
    if scenario is None:
        return [NO_QUESTION]
    step = ", ".join(scenario.parts)
    if scenario.kind == "inference":
        step += "; model loading " + ("inside" if scenario.model_load_in_step else "excluded")
    shapes = ", ".join("×".join(map(str, s)) for s in scenario.input_shapes) or "not stated"
    lines = [
        f"Question: {scenario.question}",
        f"Step ({scenario.kind}): {step}",
        f"Batch {scenario.batch_size or 'not stated'} · shapes {shapes} · {scenario.dtype} · "
        f"{scenario.mode} mode · compile {scenario.compile} · {scenario.device} · "
        f"data {scenario.data_origin} · unit {scenario.unit}",
        f"Simplified: {scenario.simplifications or 'nothing stated'}",
    ]
    return lines + _capture_lines(result.capture or {})


def _capture_lines(capture: dict[str, Any]) -> list[str]:
    lines = []
    if capture.get("model_load_ms") is not None:
        lines.append(f"Model load (outside every request): {ms(capture['model_load_ms'])} ms")
    if capture.get("cold_start_ms"):
        cold = ", ".join(ms(v) for v in capture["cold_start_ms"])
        lines.append(f"Cold start (first step(s), before the profiler): {cold} ms — kept apart")
    if capture.get("overhead_ratio") is not None:
        lines.append(
            f"Profiler distortion: profiled steps took {capture['overhead_ratio']:.2f}× the "
            "same steps without the profiler (medians, synchronized at step boundaries)"
        )
    if capture.get("flops_per_step"):
        mfu = capture.get("mfu")
        lines.append(
            f"FLOPs per step {capture['flops_per_step']:,}; achieved "
            f"{capture.get('achieved_tflops') or 0:.3g} TFLOP/s; "
            + (
                f"MFU {100 * mfu:.1f}%"
                if mfu is not None
                else "MFU unknown (no peak for this device)"
            )
        )
    return lines


def option_notes(result: TraceAnalysis) -> list[str]:
    """Profiler options that were on, and what each one costs."""
    options = result.trace.options
    return [f"{k} was on: {cost}" for k, cost in OPTION_COSTS.items() if options.get(k) in _ON]


CPU_ONLY = (
    "CPU-only trace, as the scenario states (device {device}): no GPU was asked for, so "
    "every GPU figure is 'not observed'."
)


def gpu_absent_note(result: TraceAnalysis) -> str:
    """Why there are no GPU figures: expected (a CPU scenario) or a warning."""
    scenario = result.scenario
    if scenario is not None and not scenario.device.startswith("cuda"):
        return CPU_ONLY.format(device=scenario.device)
    return GPU_ABSENT


FINDINGS_TITLE = (
    "Findings: possible readings of this trace, not verdicts. No duration or speed-up is "
    "promised; each ends with the controlled check that can confirm or refute it."
)


def no_findings(result: TraceAnalysis) -> str:
    thresholds = ", ".join(f"{k}={v}" for k, v in (result.thresholds or {}).items())
    return f"No finding above thresholds ({thresholds})."


def evidence_line(evidence: dict[str, Any]) -> str:
    """The evidence numbers in one line; where to look comes last."""
    parts = [
        f"{key}={_short_value(value)}"
        for key, value in evidence.items()
        if key != "where" and value not in (None, [], {})
    ]
    place = evidence.get("where") or {}
    if place:
        steps = place.get("steps", [])
        span = f"{steps[0]}–{steps[-1]}" if len(steps) > 1 else (steps[0] if steps else "")
        look = f"look at {span} (ts {place['time_us'][0]:.0f}–{place['time_us'][1]:.0f} µs"
        if place.get("thread"):
            look += f", {place['thread']}"
        if place.get("streams"):
            look += f", streams {', '.join(map(str, place['streams']))}"
        parts.append(look + ")")
    return "; ".join(parts)


def _short_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.0f}" if value.is_integer() and abs(value) >= 100 else f"{value:.3g}"
    if isinstance(value, list) and value and isinstance(value[0], str):
        first = short(value[0], 60)
        return first if len(value) == 1 else f"{first} (+{len(value) - 1} more)"
    return short(str(value), 80)


def ms(value: float | None) -> str:
    if value is None:
        return NOT_OBSERVED
    return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.2f}"


def us(value: float | None) -> str:
    return NOT_OBSERVED if value is None else f"{value:,.2f}"


def pct(value: float | None) -> str:
    return NOT_OBSERVED if value is None else f"{100 * value:.1f}%"


def spread(value: Spread | None, unit: str = "ms") -> str:
    if value is None:
        return NOT_OBSERVED
    show = ms if unit == "ms" else pct if unit == "%" else us
    if value.min == value.max:
        return show(value.median)
    return f"{show(value.median)} [{show(value.min)}–{show(value.max)}]"


def size(nbytes: int | None) -> str:
    if nbytes is None:
        return "bytes not recorded"
    for unit in ("B", "KB", "MB", "GB"):
        if nbytes < 1000 or unit == "GB":
            return f"{nbytes:,.0f} {unit}" if unit == "B" else f"{nbytes:,.1f} {unit}"
        nbytes /= 1000  # type: ignore[assignment]
    raise AssertionError("unreachable")


def title(result: TraceAnalysis) -> str:
    trace = result.trace
    rank = f" (rank {trace.rank} of {trace.world_size})" if trace.rank is not None else ""
    return f"{trace.path}{rank}"


def devices(result: TraceAnalysis) -> str:
    found = result.trace.devices
    if not found:
        return "no deviceProperties in the trace"
    named = [f"{d.name} (cc {d.compute_capability})" for d in found]
    return ", ".join(f"{named.count(n)} × {n}" for n in dict.fromkeys(named))


def first_step_note(result: TraceAnalysis) -> str | None:
    first = result.summary.first_step
    if first is None or not first.differs or first.ratio is None:
        return None
    return (
        f"First step {first.name} took {ms(first.wall_ms)} ms, {first.ratio:.2f}× the median "
        f"of the other steps ({ms(first.others_median_ms)} ms): shown apart, not averaged away."
    )


def short(name: str, width: int = 70) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"
