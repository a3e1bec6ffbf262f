"""The verdict: what bounds the step, in one sentence with its figure, and the top findings.

Contract: ``verdict_of(case, findings, thresholds) -> Verdict``, pure, from what exists:
the step's figures (``TraceAnalysis``), the findings (already ranked by ``find``) and the
scenario. The decision rule, on the complete steps, each share the median over them:

1. The GPU expected but not recorded (``gpu-not-observed`` fired): ``not-observed``.
2. A CPU-only trace is answered on the CPU (``on="cpu"``), never as a GPU analysis: the
   step splits into reading the batch (the labels read as ``data_read``: ``input``), its
   collectives covered by none of the step thread's operators (``communication``) and
   the rest, the CPU computing (``host``); the largest share bounds it. When at least
   ``SILENT`` (10%) of the step lies in the host's part with no work recorded
   (``cpu.unrecorded_ms`` outside the reading, less communication), the host "holds" its share
   rather than "computes" it, and the sentence says how much is unrecorded; when that is
   more than the host's recorded work, ``unrecorded-time`` answers the verdict.
3. On the GPU, each step splits into four parts that add up to its wall time: the GPU
   computing (busy time less its exposed communication: ``gpu``), communication that no
   compute covers (``communication``), the GPU idle while the batch is read (``input``),
   and the rest of its idle time, which the host leaves (after blocking calls, short
   launches, the host's pace: ``host``; ``rules.common.idle_causes``); the host's pace
   splits into its recorded work and the time no work is recorded (``cpu.unrecorded_ms``
   outside the reading), and the sentence names the largest of these causes.
   - ``gpu`` when the GPU computes at least ``bound_gpu_busy`` (80%) of the step; then
     ``gpu_bound`` says ``compute`` or ``memory`` when operators of that roofline bound
     hold at least ``roofline_claim.CLAIM`` (half) of the operators' GPU time
     (``analysis.roofline_coverage``), else None (shapes not recorded, or cost models for
     too little of it: the sentence says how much the roofline covers);
   - else the step is bound by what keeps the GPU from computing: ``input``, ``host`` or
     ``communication``, the one that holds at least ``bound_share`` (60%) of that time;
   - else ``mixed``, every part named with its share.
4. ``memory`` overrides 2 and 3 when a memory finding is high and its device was nearly
   full (``MEMORY_FULL``: a peak, reserved or allocated, of 90% of the memory the device
   reports): then memory, not time, limits what the step can do. Memory findings are
   shares of memory, never added to the time above.

``top``: the first three findings that are not minor (under the noise floor), time first
and memory after, each with its share, its basis and its next check, or the check's
outcome once ``investigate`` ran it (``with_outcomes``: the top chosen again from the
findings as their checks ranked them, so a share is told once, the same everywhere).
The finding that answers the bound (``answers``: the bound, the host's cause the sentence
names, the roofline's bound) comes first, its rule in ``answered_by``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal, NamedTuple

import msgspec

from steptrace.hypotheses.answers import answered_first, answering
from steptrace.hypotheses.finding import Basis, Figure, Finding, Level
from steptrace.hypotheses.roofline_claim import GpuBound, gpu_bound_of, roofline_words
from steptrace.hypotheses.rules.common import idle_causes, median
from steptrace.hypotheses.rules.unrecorded import outside_reading
from steptrace.units import pct, size

if TYPE_CHECKING:
    from steptrace.analysis.measure import StepResult, TraceAnalysis
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds

Bound = Literal["input", "host", "gpu", "communication", "memory", "mixed", "not-observed"]
TOP = 3  # findings in the verdict
MEMORY_FULL = 0.9  # of a device's memory at its peak: memory limits the step
SILENT = 0.1  # of a CPU step with no work recorded in the host's part: said in the verdict


class TopFinding(msgspec.Struct, frozen=True, kw_only=True):
    """One of the verdict's top findings: what to do next, or what doing it showed."""

    rule: str
    share: float  # its severity: a share of ``basis``
    basis: Basis
    level: Level
    next_check: str
    outcome: str | None = None  # after investigate: the check's outcome and its sentence


class Verdict(msgspec.Struct, frozen=True, kw_only=True):
    """What bounds the step, said once, with the figures it was decided on."""

    bound: Bound
    on: Literal["gpu", "cpu"]  # where the step's work was observed
    gpu_bound: GpuBound | None = None  # with ``bound == "gpu"``: from the roofline rows
    sentence: str
    figures: tuple[Figure, ...]
    top: tuple[TopFinding, ...]
    # the rule of the finding that answers the bound (first in the findings and the top);
    # None: no finding does
    answered_by: str | None = None


class Parts(NamedTuple):
    """A step's wall time in parts that add up to it (ms)."""

    gpu: float  # the GPU computing (0 on the CPU)
    communication: float  # collectives no compute covers
    input: float  # reading the batch (the GPU idle meanwhile, on a GPU)
    host: float  # the rest: the host keeps the GPU idle, or the CPU computes


def verdict_of(case: Case, findings: Sequence[Finding], limits: Thresholds) -> Verdict:
    """The verdict of a trace (see the module for the rule)."""
    analysis = case.analysis
    if any(f.rule == "gpu-not-observed" for f in findings):
        return _answered(_not_observed(findings, ()), findings, "not-observed")
    on_gpu = analysis.trace.gpu_observed
    exposed = _cpu_exposed_ms(analysis)
    steps = [s for s in analysis.steps if s.wall_ms > 0]
    parts = [_parts(s, exposed.get(s.name, 0.0)) for s in steps]
    shares = Parts(
        *(median(p[k] / s.wall_ms for p, s in zip(parts, steps, strict=True)) for k in range(4))
    )
    figures = _figures(shares, on_gpu, len(steps))
    if analysis.roofline_coverage is not None:
        figures += (Figure("roofline_coverage", analysis.roofline_coverage.share, "share"),)
    on: Literal["gpu", "cpu"] = "gpu" if on_gpu else "cpu"
    full = _memory_full(analysis, findings)
    if full is not None:
        verdict = Verdict(bound="memory", on=on, sentence=full, figures=figures, top=())
        return _answered(verdict, findings, "memory")
    short = any(f.rule == "small-launches" for f in findings)
    cause = "host on cpu"
    if on_gpu:
        cause, words = _host_cause(steps, short)
        bound, sentence = _on_gpu(shares, limits, words)
    else:
        silent = median(
            max(0.0, (outside_reading(s) or 0.0) - p.communication) / s.wall_ms
            for p, s in zip(parts, steps, strict=True)
        )
        bound, sentence = _on_cpu(shares, silent)
        if silent > shares.host - silent:  # the host's part is mostly no work recorded
            cause = "host on cpu: unrecorded"
    gpu_bound = gpu_bound_of(analysis) if bound == "gpu" else None
    if bound == "gpu":
        sentence += roofline_words(analysis, gpu_bound)
    verdict = Verdict(
        bound=bound, on=on, gpu_bound=gpu_bound, sentence=sentence, figures=figures, top=()
    )
    return _answered(verdict, findings, _key(bound, gpu_bound, cause, shares))


def _key(bound: Bound, gpu_bound: GpuBound | None, cause: str, shares: Parts) -> str:
    """The verdict's key in ``answers.ANSWERS``: the bound, the host's cause, the roofline's."""
    if bound == "mixed":  # the largest part that keeps the GPU from computing
        parts: dict[Bound, float] = {
            "input": shares.input,
            "host": shares.host,
            "communication": shares.communication,
        }
        bound = max(parts, key=lambda k: parts[k])
    if bound == "host":
        return cause
    if bound == "gpu":
        return f"gpu: {gpu_bound}" if gpu_bound else "gpu"
    return bound


def _answered(verdict: Verdict, findings: Sequence[Finding], key: str) -> Verdict:
    """The verdict with the finding that answers it first in its top."""
    answer = answering(findings, key)
    rule = answer.rule if answer is not None else None
    return msgspec.structs.replace(
        verdict, top=_top(answered_first(findings, rule)), answered_by=rule
    )


def with_outcomes(
    verdict: Verdict, findings: Sequence[Finding], outcomes: Mapping[str, str]
) -> Verdict:
    """The verdict once ``investigate`` ran the checks: its top findings chosen again from
    ``findings`` as the checks ranked them (a refuted one keeps no share and leaves the
    top), each with its check's outcome in words (by rule): the same share and level as
    in the findings."""
    chosen = _top(answered_first(findings, verdict.answered_by))
    top = tuple(msgspec.structs.replace(t, outcome=outcomes.get(t.rule)) for t in chosen)
    return msgspec.structs.replace(verdict, top=top)


def _top(findings: Sequence[Finding]) -> tuple[TopFinding, ...]:
    chosen = [f for f in findings if f.basis == "step time" and not f.minor]
    chosen += [f for f in findings if f.basis != "step time"]
    return tuple(
        TopFinding(
            rule=f.rule, share=f.severity, basis=f.basis, level=f.level, next_check=f.next_check
        )
        for f in chosen[:TOP]
    )


def _cpu_exposed_ms(analysis: TraceAnalysis) -> dict[str, float]:
    """Per step name, on a CPU trace: its collectives' time no operator of its thread
    covered (the types added up: they rarely run at once)."""
    if analysis.trace.gpu_observed:
        return {}
    found: dict[str, float] = {}
    for kind in analysis.communication:
        for step in kind.per_step:
            found[step.step] = found.get(step.step, 0.0) + step.exposed_ms
    return found


def _parts(step: StepResult, cpu_exposed_ms: float) -> Parts:
    """The step's wall time in four parts (see ``Parts``)."""
    wall = step.wall_ms
    gpu = step.gpu
    if gpu is not None:
        comm = gpu.communication
        exposed = min(max(0.0, comm.busy_ms - comm.overlap_with_compute_ms), wall)
        computing = min(max(0.0, gpu.busy_ms - exposed), wall - exposed)
        causes = idle_causes(step)
        reading = min(causes.reading if causes is not None else 0.0, wall - exposed - computing)
        return Parts(computing, exposed, reading, max(0.0, wall - computing - exposed - reading))
    exposed = min(cpu_exposed_ms, wall)
    reading = min(step.reading.ms if step.reading is not None else 0.0, wall - exposed)
    return Parts(0.0, exposed, reading, max(0.0, wall - exposed - reading))


def _figures(shares: Parts, on_gpu: bool, steps: int) -> tuple[Figure, ...]:
    rest: tuple[Figure, ...]
    if on_gpu:
        first = Figure("gpu_computing_share", shares.gpu, "share")
        rest = (Figure("host_share", shares.host, "share"),)
    else:
        first = Figure("cpu_computing_share", shares.host, "share")
        rest = ()
    return (
        first,
        Figure("communication_share", shares.communication, "share"),
        Figure("input_share", shares.input, "share"),
        *rest,
        Figure("steps", steps, "count"),
    )


def _not_observed(findings: Sequence[Finding], top: tuple[TopFinding, ...]) -> Verdict:
    missing = next(f for f in findings if f.rule == "gpu-not-observed")
    said = missing.observation.rstrip(".")
    return Verdict(
        bound="not-observed",
        on="cpu",
        sentence=(
            f"Not observed: {said[:1].lower()}{said[1:]}. The GPU was expected but not "
            "recorded, so nothing about it can be told: capture again with GPU activity "
            "collected."
        ),
        figures=(),
        top=top,
    )


def _on_cpu(shares: Parts, silent: float) -> tuple[Bound, str]:
    """``silent``: the share of the step in the host's part with no work recorded (at
    least: the unrecorded time less reading and communication)."""
    named: dict[Bound, float] = {
        "input": shares.input,
        "communication": shares.communication,
        "host": shares.host,
    }
    bound = max(named, key=lambda k: named[k])
    what = {
        "input": f"reading the batch takes {pct(shares.input)} of the step",
        "communication": (
            f"collectives that none of the step's operators cover take "
            f"{pct(shares.communication)} of it"
        ),
        "host": (
            f"the host holds {pct(shares.host)} of the step, and no work is recorded in "
            f"{pct(silent)} of the step"
            if silent >= SILENT
            else f"the CPU computes {pct(shares.host)} of the step"
        ),
    }
    others = "; ".join(what[k] for k in named if k != bound and named[k] > 0)
    return bound, (
        f"{_NAME[bound]} on the CPU (this trace holds no GPU work): {what[bound]}"
        + (f" ({others})" if others else "")
        + "."
    )


def _host_cause(steps: Sequence[StepResult], short_launches: bool) -> tuple[str, str]:
    """What most of the host's share is, in words (``idle_causes``, medians over steps);
    short kernels' launches only where ``small-launches`` fired (enough kernels)."""
    observed = [(s, c) for s in steps if (c := idle_causes(s)) is not None]
    launches = [c.launches if short_launches else 0.0 for _, c in observed]
    rest = [c.other + c.launches - a for (_, c), a in zip(observed, launches, strict=True)]
    silent = [  # the rest of the idle time in which the host is recorded doing nothing
        min(r, outside_reading(s) or 0.0) for (s, _), r in zip(observed, rest, strict=True)
    ]
    named = {
        "after blocking calls": median(c.after_sync for _, c in observed),
        "for launches of kernels shorter than their launch call": median(launches),
        "for the host's own work between launches": median(
            r - q for r, q in zip(rest, silent, strict=True)
        ),
        "while the trace records no work on the host": median(silent),
    }
    largest = max(named, key=lambda k: named[k])
    if named[largest] <= 0:
        return "host", ""
    return _CAUSES[largest], f", mostly {largest}"


_CAUSES = {  # the host's cause in the sentence: its key in ``answers.ANSWERS``
    "after blocking calls": "host: blocking calls",
    "for launches of kernels shorter than their launch call": "host: short launches",
    "for the host's own work between launches": "host: own work",
    "while the trace records no work on the host": "host: unrecorded",
}


def _on_gpu(shares: Parts, limits: Thresholds, host_cause: str) -> tuple[Bound, str]:
    """The bound and its sentence; ``host_cause``: the words naming the host's cause."""
    if shares.gpu >= limits.bound_gpu_busy:
        return "gpu", f"GPU-bound: the GPU computes {pct(shares.gpu)} of the step"
    away = 1.0 - shares.gpu  # the time the GPU is not computing
    named: dict[Bound, float] = {
        "input": shares.input,
        "host": shares.host,
        "communication": shares.communication,
    }
    bound = max(named, key=lambda k: named[k])
    what = {
        "input": f"the GPU sits idle while the batch is read {pct(shares.input)} of the step",
        "host": f"the GPU waits for the host {pct(shares.host)} of the step{host_cause}",
        "communication": (
            f"collectives that no compute hides take {pct(shares.communication)} of the step"
        ),
    }
    computing = f"it computes {pct(shares.gpu)}"
    if away > 0 and named[bound] >= limits.bound_share * away:
        others = [what[k] for k in named if k != bound and named[k] >= 0.005]
        rest = "; ".join([computing, *others])
        return bound, f"{_NAME[bound]}: {what[bound]} ({rest})."
    listed = "; ".join(what[k] for k in named)
    return "mixed", (
        f"Mixed: no single cause holds {pct(limits.bound_share)} of the time the GPU is not "
        f"computing: {listed}; {computing}."
    )


def _memory_full(analysis: TraceAnalysis, findings: Sequence[Finding]) -> str | None:
    """The sentence when a high memory finding's device was nearly full; else None."""
    if not any(f.basis != "step time" and f.level == "high" for f in findings):
        return None
    if analysis.memory is None:
        return None
    capacity = {f"cuda:{d.id}": d.memory_bytes for d in analysis.trace.devices or ()}
    for device in analysis.memory.devices:
        total = capacity.get(device.device)
        if not total:
            continue
        peak = max(
            (max(s.peak_reserved_bytes, s.peak_allocated_bytes) for s in device.steps),
            default=0,
        )
        if peak >= MEMORY_FULL * total:
            return (
                f"Memory-bound: {device.device} holds {pct(peak / total)} of its "
                f"{size(total)} at its peak, and a memory finding is high: memory, not "
                "time, limits what the step can take."
            )
    return None


_NAME: dict[Bound, str] = {
    "input": "Input-bound",
    "host": "Host-bound",
    "gpu": "GPU-bound",
    "communication": "Communication-bound",
}
