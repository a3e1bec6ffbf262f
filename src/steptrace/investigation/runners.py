"""How each automated check runs on a ``Subject``: the validate factory it calls, with the
subject's step, state and batches; and the operator timed alone (a measurement).

Every factory gets ``make_state`` returning the user's own objects: ``compare`` (and each
factory's own copies) deep-copy them, so the user's model, optimizer and RNG are never
changed. Factories raise ``NotTestable`` when they cannot run here.
"""

from __future__ import annotations

import copy
import itertools
import json
import tempfile
from pathlib import Path

import msgspec
import torch

from steptrace.analysis.measure import TraceAnalysis
from steptrace.devices import activities, to_device
from steptrace.errors import NotTestable, TraceError
from steptrace.hypotheses.finding import Figure
from steptrace.investigation.check import Context, Measured, Runner
from steptrace.process.quiet import without_usdt_lines
from steptrace.units import pct, size
from steptrace.validate.checks.batches import pinned_memory_check, prepared_batch_check
from steptrace.validate.checks.factory import OnBatches
from steptrace.validate.checks.memory import checkpoint_peaks, growth
from steptrace.validate.checks.operator_alone import operator_timing
from steptrace.validate.checks.operator_share import operator_share
from steptrace.validate.checks.profiler import profiler_check
from steptrace.validate.checks.script import calls_script, operator_calls
from steptrace.validate.correctness import explain
from steptrace.validate.results import Comparison, OperatorShare, OperatorTiming

DECIDES_SHARE = 0.5  # the operator alone takes this share of the step: it decides the step


def prepared_batch(context: Context) -> Comparison:
    subject = context.subject
    if subject.loader is None:
        raise NotTestable("the workload has no loader to read", "give the workload its loader")
    return prepared_batch_check(
        subject.step,
        make_state=subject.make_state,
        loader=subject.loader,
        device=subject.device,
        plan=context.plan,
    )


def pinned_memory(context: Context) -> Comparison:
    subject = context.subject
    on_host = [to_device(b, torch.device("cpu")) for b in subject.batches]
    return pinned_memory_check(
        subject.step,
        make_state=subject.make_state,
        batches=on_host,
        device=subject.device,
        plan=context.plan,
    )


def on_batches(factory: OnBatches) -> Runner:
    """The runner of a factory on the subject's step, state and batches:
    inference_mode_check, optimizer_check, autocast_check, compile_check,
    constant_once_check."""

    def run(context: Context) -> Comparison:
        s = context.subject
        return factory(
            s.step, make_state=s.make_state, batches=s.batches, device=s.device, plan=context.plan
        )

    return run


def profiler(context: Context) -> Comparison:
    """``profiler_check`` records A with the capture's own profiler options."""
    s = context.subject
    return profiler_check(
        s.step,
        make_state=s.make_state,
        batches=s.batches,
        device=s.device,
        window=context.window,
        plan=context.plan,
    )


def operator_alone(context: Context) -> Measured:
    """The dominant operator, and those doing the same work, alone on every recorded set
    of inputs, against the step in the same interleaved blocks (``operator_share``).

    Shapes come from the capture when it recorded them, else from a short capture of two
    steps of a copy of the state with ``record_shapes`` (the main capture keeps minimal
    options). The operators "decide the step" when their share's whole CI reaches
    ``DECIDES_SHARE``, and do not when it lies under it.
    """
    operator = str(context.finding.evidence.values().get("operator"))
    analysis = context.analysis
    try:
        calls = operator_calls(analysis, operator)
    except TraceError:
        try:
            calls = operator_calls(_shapes(context), operator)
        except TraceError as error:
            raise NotTestable(str(error), f"time {operator} alone by hand") from None
    subject = context.subject
    device = str(subject.device)
    script = calls_script(calls, source=analysis.trace.path, device=device)
    share = operator_share(
        subject.step,
        make_state=subject.make_state,
        batches=subject.batches,
        calls=calls,
        operator=operator,
        script=script,
        device=subject.device,
        plan=context.plan,
    )
    return _shared(share)


def _shared(found: OperatorShare) -> Measured:
    low, high = found.ci
    names = " and ".join(found.operators)
    verdict = (
        "they decide the step"
        if low >= DECIDES_SHARE
        else "they do not decide the step alone"
        if high < DECIDES_SHARE
        else "they take about half of it"
    )
    said = (
        f"{names} alone on their {len(found.calls)} recorded set(s) of inputs (random values, "
        f"each weighed by its calls per step): {found.alone_ms_per_step:.3f} ms per step "
        f"against the {found.step_ms:.3f} ms step, timed in the same {found.blocks} pairs of "
        f"blocks outside the profiler: {pct(found.share)} of the step "
        f"[{100 * found.confidence:g}% CI {pct(low)}–{pct(high)}]: {verdict}. No "
        "alternative was timed: edit the script (layout, algorithm, precision) to try one."
    )
    figures = (
        Figure("operator", found.operator, "text"),
        Figure("operators", found.operators, "names"),
        Figure("input_sets", len(found.calls), "count"),
        Figure("alone_ms_per_step", found.alone_ms_per_step, "ms"),
        Figure("step_ms", found.step_ms, "ms"),
        Figure("alone_share_of_step", found.share, "share"),
        Figure("alone_share_ci", f"{pct(low)}–{pct(high)}", "text"),
        Figure("script", found.script, "text"),
    )
    return Measured("measured", said, figures)


def operator_timing_alone(context: Context) -> Measured:
    """One operator alone on its most frequent recorded inputs, in a subprocess (the
    script ``operator_script`` writes), against the step's time: its time per call."""
    operator = str(context.finding.evidence.values().get("operator"))
    analysis = context.analysis
    known = next((o for o in analysis.operators if o.name == operator), None)
    if known is None or not known.input_shapes:
        analysis = _shapes(context)
    timing = operator_timing(
        analysis,
        operator,
        device=str(context.subject.device),
        timeout_s=context.timeout_s,
        source=context.analysis.trace.path,
    )
    if known is not None and known.calls:  # the figures of the trace the finding is about
        timing = msgspec.structs.replace(
            timing,
            trace_self_ms_per_call=known.self_ms / known.calls,
            trace_calls_per_step=known.calls_per_step or None,
        )
    return _measured(timing, timing.trace_calls_per_step, (context.step_ms, context.step_from))


def operator_throughput(context: Context) -> Measured:
    """``operator_alone``, and the TFLOP/s the operator reaches alone: the FLOPs of the
    shapes it was timed on (the roofline's row of them) over its time per call."""
    measured = operator_timing_alone(context)
    values = {f.name: f.value for f in measured.figures}
    operator, alone_ms = str(values.get("operator")), values.get("alone_ms_per_call")
    flops = _flops_timed(context.analysis, operator)
    if flops is None or not isinstance(alone_ms, float) or alone_ms <= 0:
        return measured
    tflops = flops / (alone_ms / 1000) / 1e12
    said = f"{measured.sentence} Alone it reaches {tflops:.3g} TFLOP/s ({flops:,} FLOPs a call)."
    return Measured(
        measured.outcome, said, (*measured.figures, Figure("alone_tflops", tflops, "tflops"))
    )


def _flops_timed(analysis: TraceAnalysis, operator: str) -> int | None:
    """The FLOPs per call of the shapes ``operator_timing`` times (the operator's most
    frequent ones), from the roofline row of those shapes; None: not modelled."""
    typical = next((o.input_shapes for o in analysis.operators if o.name == operator), None)
    shapes = _parsed(typical)
    rows = [r for r in analysis.roofline if r.operator == operator]
    same = [r for r in rows if shapes is not None and _parsed(r.input_shapes) == shapes]
    return same[0].flops_per_call if same else None


def _parsed(shapes: str | None) -> object:
    """Recorded shapes as values (one writer indents them, another does not)."""
    try:
        return json.loads(shapes) if shapes else None
    except ValueError:
        return None


def _measured(timing: OperatorTiming, calls: float | None, step: tuple[float, str]) -> Measured:
    step_ms, step_from = step
    per_step = timing.median_ms * calls if calls else None
    share = per_step / step_ms if per_step is not None and step_ms > 0 else None
    alone = f"{timing.operator} alone on its recorded shapes: {timing.median_ms:.3f} ms per call"
    said = f"{alone} (median of {timing.runs} runs; the trace: "
    said += f"{timing.trace_self_ms_per_call:.3f} ms per call"
    if per_step is not None and share is not None:
        said += f"); {calls:.0f} calls per step take {per_step:.2f} ms, {100 * share:.0f}% of"
        said += f" the {step_ms:.2f} ms step {step_from}: it "
        said += "decides the step" if share >= DECIDES_SHARE else "does not decide the step alone"
    else:
        said += ")"
    said += ". No alternative was timed: edit the script (layout, algorithm, precision) to try one."
    figures = (
        Figure("operator", timing.operator, "text"),
        Figure("alone_ms_per_call", timing.median_ms, "ms"),
        Figure("alone_iqr_ms", timing.iqr_ms, "ms"),
        Figure("runs", timing.runs, "count"),
        Figure("trace_ms_per_call", timing.trace_self_ms_per_call, "ms"),
        Figure("calls_per_step", calls, "count"),
        Figure("alone_share_of_step", share, "share"),
        Figure("script", timing.script, "text"),
    )
    return Measured("measured", said, figures)


SHAPE_STEPS = 2  # steps recorded with their shapes, after one warm-up step


def _shapes(context: Context) -> TraceAnalysis:
    """A short capture of a copy of the state with shapes recorded (one warm-up step, then
    ``SHAPE_STEPS`` steps marked as the window's are), analyzed."""
    from steptrace.pipeline import analyze

    subject = context.subject
    state = copy.deepcopy(dict(subject.make_state()))
    feed = itertools.cycle(subject.batches)
    with tempfile.TemporaryDirectory() as folder, torch.random.fork_rng():
        path = Path(folder) / "shapes.json"
        recording = torch.profiler.profile(
            activities=activities(subject.device),
            record_shapes=True,
            schedule=torch.profiler.schedule(wait=0, warmup=1, active=SHAPE_STEPS, repeat=1),
            on_trace_ready=lambda done: done.export_chrome_trace(str(path)),
        )
        with without_usdt_lines():  # kineto's start and stop lines (steptrace.process.quiet)
            recording.start()
        try:
            for _ in range(1 + SHAPE_STEPS):
                subject.step(state, next(feed))
                with without_usdt_lines():
                    recording.step()
        finally:
            with without_usdt_lines():
                recording.stop()
        return analyze(path).analysis


GROWTH_STEPS = 12  # steps measured by the memory-growth check, at most (its budget decides)
PEAK_FALL = 0.02  # the checkpointed peak must fall by this share of the peak at least


def memory_growth(context: Context) -> Measured:
    """More steps of a fresh copy outside the profiler, the allocated memory after each:
    supported when it grows in most of them by at least the rule's floor (median)."""
    subject, limits = context.subject, context.limits
    step_s = max(context.step_ms / 1000, 1e-3)
    steps = int(min(GROWTH_STEPS, max(4, context.plan.budget_s / step_s / 2)))
    found = growth(subject.step, subject.make_state, subject.batches, subject.device, steps)
    per_step = found.median_bytes
    trace = context.finding.evidence.values().get("growth_bytes_per_step")
    grows = per_step >= limits.memory_growth_bytes and found.growing_steps >= 0.75 * steps
    said = (
        f"Outside the profiler, {steps} more steps from a fresh copy of the state: the memory "
        f"allocated grows by {size(per_step)} per step (median; {found.growing_steps} of "
        f"{steps} steps grew)"
    )
    said += f", against {size(float(trace))} in the trace" if isinstance(trace, int) else ""
    said += ": it keeps growing, as a leak does." if grows else ": it does not keep growing here."
    figures = (
        Figure("steps", steps, "count"),
        Figure("growth_bytes_per_step", int(per_step), "bytes"),
        Figure("growing_steps", found.growing_steps, "count"),
        Figure("after_bytes", tuple(found.after_bytes), "names"),
    )
    return Measured("supported" if grows else "not-supported", said, figures)


def checkpointed(context: Context) -> Measured:
    """The largest block under activation checkpointing: outputs compared first, then one
    step's peak with and without it (``validate.checks.memory``)."""
    subject = context.subject
    found = checkpoint_peaks(subject.step, subject.make_state, subject.batches, subject.device)
    block = f"the largest block ({found.block})"
    if found.peak_a_bytes is None or found.peak_b_bytes is None:
        said = f"With {block} checkpointed, the step's outputs differ: {explain(found.correctness)}"
        return Measured("outputs-differ", said, (Figure("block", found.block, "text"),))
    a, b = found.peak_a_bytes, found.peak_b_bytes
    falls = a > 0 and (a - b) >= PEAK_FALL * a
    said = (
        f"With {block} checkpointed, outputs and gradients agree, and one step's peak "
        f"allocated goes from {size(a)} to {size(b)} "
        f"({'-' if b <= a else '+'}{pct(abs(a - b) / a) if a else 'n/a'}): "
    )
    said += (
        "checkpointing lowers the peak." if falls else "checkpointing does not lower the peak here."
    )
    figures = (
        Figure("block", found.block, "text"),
        Figure("peak_a_bytes", a, "bytes"),
        Figure("peak_b_bytes", b, "bytes"),
    )
    return Measured("supported" if falls else "not-supported", said, figures)
