"""torch.compile's rules: ``recompilation``, ``graph-break``, ``recompile-limit``.

``recompilation``: torch.compile compiled a frame again inside the window.

It reads the steps that compiled (``Case.compiled_apart``: left out of every other rule's
steps), and fires when one of them compiled an id ``F/C`` with C > 0: a guard of frame F
failed (an input's shape, a Python value, a module attribute changed) and the frame was
compiled again. Its severity is the recompiles' compile time over the window's wall time
(every complete step, those apart included): what recompiling cost the window, which
repeats whenever the guarded value changes again. The reasons are not in a Kineto trace
(``TORCH_LOGS=recompiles`` or ``TORCH_TRACE`` write them): the finding says so and how to
get them. A frame's first compile (C = 0) is no finding: it happens once.

``graph-break``: the steady steps (those that did not compile) ran compiled regions nested in
one another, one level per graph break. Its severity is the time inside those regions
outside their compiled graphs (``StepCompile.eager_ms``: the code the break left eager, and
Dynamo's guards and wrappers that each resumed piece pays again) over the steps' wall time.
The break's site is not in a Kineto trace; the operators run there (``eager_ops``, e.g.
``aten::item``) hint at it, and its check names it (``torch._dynamo.explain``).

``recompile-limit``: in a steady step a ``TorchDynamo Cache Lookup`` was followed by no
compiled region (``eager_calls``) while the step ran no compiled region at all, or the
window recompiled: the frame fell back to eager, as it does once
``torch._dynamo.config.recompile_limit`` recompiles of it failed their guards. Its severity
is those steps' time outside compiled code over the steps' wall time: an upper bound on
what the eager frame took (the trace does not delimit it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steptrace.hypotheses.finding import Finding, finding
from steptrace.hypotheses.rules.common import evidence, where
from steptrace.units import pct

EXPLAIN = (
    "torch._dynamo.explain(model)(*inputs) on one batch: the graphs, the breaks and each "
    "break's reason and line"
)

if TYPE_CHECKING:
    from steptrace.analysis.measure import StepResult
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds


def recompilation(case: Case, limits: Thresholds) -> list[Finding]:
    apart = [s for s in case.compiled_apart if s.compile is not None and s.compile.recompiled]
    if not apart:
        return []
    every = (*case.analysis.steps, *case.compiled_apart)
    window = sum(s.wall_ms for s in every)
    spent = sum(s.compile.compile_ms for s in apart if s.compile is not None)
    share = spent / window if window > 0 else 0.0
    ids = tuple(i for s in apart if s.compile is not None for i in s.compile.recompiled)
    frames = sorted({i.split("/")[0] for i in ids}, key=int)
    known = _reasons(case)
    per_step = "; ".join(
        f"{s.name}: {', '.join(s.compile.recompiled)} in {s.compile.compile_ms:,.0f} ms"
        for s in apart
        if s.compile is not None
    )
    reasons = tuple(f"{i}: {known[i]}" for i in ids if i in known)
    because = f" Dynamo's reasons: {'; '.join(reasons)}." if reasons else ""
    record = (
        ""
        if reasons
        else "Record the reasons: run the same steps with TORCH_LOGS=recompiles (or "
        "TORCH_TRACE=<folder>, read with tlparse) to see which guard failed. Then "
    )
    return [
        finding(
            "recompilation",
            share,
            observation=(
                f"torch.compile recompiled frame {', '.join(frames)} {len(ids)} time(s) in "
                f"{len(apart)} of the window's {len(every)} steps, {spent:,.0f} ms in all "
                f"({pct(share)} of the window's time): {per_step}.{because}"
            ),
            evidence=evidence(
                where(case.analysis, apart),
                ("recompiled", ids, "names"),
                ("steps", tuple(s.name for s in apart), "names"),
                ("compile_ms", spent, "ms"),
                ("reasons", reasons or None, "names" if reasons else "text"),
            ),
            hypothesis=(
                "A guard of the compiled frame failed (an input's shape, a Python value or a "
                "module attribute changed), so it was compiled again; it will be again each "
                "time that value takes a new one."
            ),
            next_check=(
                f"{record}{'M' if reasons else 'm'}ake the changing value dynamic "
                "(torch.compile(..., dynamic=True), torch._dynamo.mark_dynamic(x, dim)) or "
                "fixed (pad to one shape, a tensor or constant instead of a Python number), "
                "and compare ms/step over the same changing inputs outside the profiler, "
                "compile time counted, outputs compared."
            ),
            caveats=(
                "The reasons are Dynamo's own record, kept by the capture in its sidecar."
                if reasons
                else "The recompile reasons are not in a Kineto trace.",
                "After torch._dynamo.config.recompile_limit recompiles of one frame, it runs "
                "eagerly: fewer recompiles can then mean a slower step.",
            ),
        )
    ]


def _reasons(case: Case) -> dict[str, str]:
    """Each recompile's failed guard by compile id, from the capture's record of Dynamo's
    compiles (``CaptureFacts.compiles``); empty for a trace alone."""
    compiles = case.capture.compiles if case.capture is not None else ()
    return {c.compile_id: c.reason for c in compiles if c.reason and c.frame is not None}


def graph_break(case: Case, limits: Thresholds) -> list[Finding]:
    steps = case.analysis.steps
    broken = [s for s in steps if s.compile is not None and s.compile.graph_breaks > 0]
    if not broken:
        return []
    wall = sum(s.wall_ms for s in steps)
    eager = sum(s.compile.eager_ms for s in broken if s.compile is not None)
    share = eager / wall if wall > 0 else 0.0
    breaks = max(s.compile.graph_breaks for s in broken if s.compile is not None)
    ops = tuple(dict.fromkeys(o for s in broken if s.compile for o in s.compile.eager_ops))
    ran = f"; operators run there: {', '.join(ops)}" if ops else ""
    known = case.capture.graph_break_reasons if case.capture is not None else ()
    because = f" Dynamo's reasons: {'; '.join(known)}." if known else ""
    return [
        finding(
            "graph-break",
            share,
            observation=(
                f"torch.compile's regions nest {breaks} deep in {len(broken)} of "
                f"{len(steps)} steps: {breaks} graph break(s) split the compiled frame. "
                f"{eager / len(broken):,.3f} ms per step ran inside the regions outside "
                f"their compiled graphs ({pct(share)} of the step){ran}.{because}"
            ),
            evidence=evidence(
                where(case.analysis, broken),
                ("graph_breaks", breaks, "count"),
                ("eager_ms", eager / len(broken), "ms"),
                ("eager_ops", ops, "names"),
                ("break_reasons", known or None, "names" if known else "text"),
                ("break_sites", None, "text"),
            ),
            hypothesis=(
                "A graph break splits the frame into graphs with eager code between them: "
                "that code runs op by op, each resumed graph pays Dynamo's guards again, and "
                "no fusion crosses the break"
                + (
                    " (aten::item reads a tensor's value on the host: a data-dependent break)."
                    if "aten::item" in ops or "aten::_local_scalar_dense" in ops
                    else "."
                )
            ),
            next_check=(
                f"Find each break's reason and line: {EXPLAIN} (or TORCH_LOGS=graph_breaks). "
                "Then remove or move the break (keep the value a tensor instead of .item(), "
                "torch._dynamo.config.capture_scalar_outputs=True, print and logging outside "
                "the compiled function) and compare ms/step against the current code "
                "outside the profiler, outputs compared."
            ),
            caveats=(
                "The breaks' lines are not in a Kineto trace"
                + (
                    "; their reasons are Dynamo's, kept by the capture."
                    if known
                    else ", nor their reasons."
                ),
                "The time outside the compiled graphs includes Dynamo's guards and wrappers, "
                "which a frame without a break pays once.",
            ),
        )
    ]


def recompile_limit(case: Case, limits: Thresholds) -> list[Finding]:
    steps = case.analysis.steps
    recompiled = any(s.compile is not None and s.compile.recompiled for s in case.compiled_apart)
    eager = [
        s
        for s in steps
        if s.compile is not None
        and s.compile.eager_calls > 0
        and (s.compile.regions == 0 or recompiled)
    ]
    if not eager:
        return []
    wall = sum(s.wall_ms for s in steps)
    outside = sum(s.wall_ms * (1 - _compiled_share(s)) for s in eager)
    share = outside / wall if wall > 0 else 0.0
    calls = sum(s.compile.eager_calls for s in eager if s.compile is not None)
    tried = tuple(i for s in case.compiled_apart if s.compile for i in s.compile.recompiled)
    return [
        finding(
            "recompile-limit",
            share,
            observation=(
                f"In {len(eager)} of {len(steps)} steps torch.compile looked a frame up and "
                f"ran no compiled region after it ({calls} time(s)): the frame ran eagerly"
                + (f", after recompiling it ({', '.join(tried)})." if tried else ".")
            ),
            evidence=evidence(
                where(case.analysis, eager),
                ("eager_calls", calls, "count"),
                ("recompiled", tried, "names"),
                ("outside_compiled_ms", outside / len(eager), "ms"),
            ),
            hypothesis=(
                "The frame reached torch._dynamo.config.recompile_limit (8 by default): each "
                "new value of a guarded input compiled it again until the limit, and from "
                "then on it runs eagerly, without the compiled code's speed."
            ),
            next_check=(
                "Record the recompile reasons (TORCH_LOGS=recompiles) to see which value "
                "changes; make it dynamic (torch.compile(..., dynamic=True), "
                "torch._dynamo.mark_dynamic) or fixed, and compare ms/step against the "
                "current code over the same changing inputs outside the profiler, compile "
                "time counted, outputs compared. Raising the limit only delays it."
            ),
            caveats=(
                "Its share is an upper bound: the steps' time outside compiled code, which "
                "holds the eager frame and whatever else ran eagerly.",
                "A frame Dynamo chose to skip is also looked up without a compiled region.",
            ),
        )
    ]


def _compiled_share(step: StepResult) -> float:
    """The share of ``step``'s wall time inside compiled regions (0 without any)."""
    c = step.compile
    if c is None or step.wall_ms <= 0:
        return 0.0
    return min(c.region_ms / step.wall_ms, 1.0)
