"""Rule ``recompilation``: torch.compile compiled a frame again inside the window.

It reads the steps that compiled (``Case.compiled_apart``: left out of every other rule's
steps), and fires when one of them compiled an id ``F/C`` with C > 0: a guard of frame F
failed (an input's shape, a Python value, a module attribute changed) and the frame was
compiled again. Its severity is the recompiles' compile time over the window's wall time
(every complete step, those apart included): what recompiling cost the window, which
repeats whenever the guarded value changes again. The reasons are not in a Kineto trace
(``TORCH_LOGS=recompiles`` or ``TORCH_TRACE`` write them): the finding says so and how to
get them. A frame's first compile (C = 0) is no finding: it happens once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steptrace.hypotheses.finding import Finding, finding
from steptrace.hypotheses.rules.common import evidence, where
from steptrace.units import pct

if TYPE_CHECKING:
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
    per_step = "; ".join(
        f"{s.name}: {', '.join(s.compile.recompiled)} in {s.compile.compile_ms:,.0f} ms"
        for s in apart
        if s.compile is not None
    )
    return [
        finding(
            "recompilation",
            share,
            observation=(
                f"torch.compile recompiled frame {', '.join(frames)} {len(ids)} time(s) in "
                f"{len(apart)} of the window's {len(every)} steps, {spent:,.0f} ms in all "
                f"({pct(share)} of the window's time): {per_step}."
            ),
            evidence=evidence(
                where(case.analysis, apart),
                ("recompiled", ids, "names"),
                ("steps", tuple(s.name for s in apart), "names"),
                ("compile_ms", spent, "ms"),
                ("reasons", None, "text"),
            ),
            hypothesis=(
                "A guard of the compiled frame failed (an input's shape, a Python value or a "
                "module attribute changed), so it was compiled again; it will be again each "
                "time that value takes a new one."
            ),
            next_check=(
                "Record the reasons: run the same steps with TORCH_LOGS=recompiles (or "
                "TORCH_TRACE=<folder>, read with tlparse) to see which guard failed. Then "
                "make the changing value dynamic (torch.compile(..., dynamic=True), "
                "torch._dynamo.mark_dynamic(x, dim)) or fixed (pad to one shape, a tensor "
                "or constant instead of a Python number), and compare ms/step over the same "
                "changing inputs outside the profiler, compile time counted, outputs "
                "compared."
            ),
            caveats=(
                "The recompile reasons are not in a Kineto trace.",
                "After torch._dynamo.config.recompile_limit recompiles of one frame, it runs "
                "eagerly: fewer recompiles can then mean a slower step.",
            ),
        )
    ]
