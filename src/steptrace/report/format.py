"""Number formatting shared by the text and Markdown renderers (no computation)."""

from __future__ import annotations

from steptrace.analysis.analyze import TraceAnalysis
from steptrace.analysis.stats import Spread

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
    if first is None or not first.differs:
        return None
    return (
        f"First step {first.name} took {ms(first.wall_ms)} ms, {first.ratio:.2f}× the median "
        f"of the other steps ({ms(first.others_median_ms)} ms): shown apart, not averaged away."
    )


def short(name: str, width: int = 70) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"
