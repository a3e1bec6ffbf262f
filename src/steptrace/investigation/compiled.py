"""The checks of torch.compile's findings, run on the workload (``validate.checks.compiler``)
and said as measurements.

- ``graph_breaks`` (graph-break): supported when ``torch._dynamo.explain`` finds a break in
  the model, each with its reason and line; not supported when the model compiles whole
  (the nesting the trace showed came from elsewhere).
- ``recompiled`` (recompilation, recompile-limit): the step over up to ``BATCHES`` of the
  workload's batches compiled as ``torch.compile(model)`` does by default and with
  ``dynamic=True``: supported when the frame compiles again over them (each reason said);
  ``dynamic=True`` removing those recompiles, with the same outputs, is said beside it.
  Not testable when the batches recompile nothing: what changes in the traced run (a Python
  value, an attribute) is not in them.
"""

from __future__ import annotations

import itertools

from steptrace.devices import to_device
from steptrace.errors import NotTestable
from steptrace.hypotheses.finding import Figure
from steptrace.investigation.check import Context, Measured
from steptrace.validate.checks.compiler import BY_HAND, Compile, break_sites, recompiles
from steptrace.validate.inputs import Batch

BATCHES = 16  # batches run through the compiled step: enough for a shape to change


def graph_breaks(context: Context) -> Measured:
    subject = context.subject
    found = break_sites(
        subject.step,
        make_state=subject.make_state,
        batches=subject.batches,
        device=subject.device,
    )
    sites = tuple(f"{b.reason} — {b.site}" if b.site else b.reason for b in found.breaks)
    figures = (
        Figure("graphs", found.graphs, "count"),
        Figure("graph_breaks", len(found.breaks), "count"),
        Figure("break_sites", sites, "names"),
    )
    explained = f"torch._dynamo.explain on the model, one batch: {found.graphs} graph(s)"
    if not found.breaks:
        return Measured(
            "not-supported",
            f"{explained}, no graph break: the model's forward compiles whole, so the nested "
            "regions in the trace come from code around it (the step, the loss).",
            figures,
        )
    listed = "; ".join(sites)
    return Measured(
        "supported",
        f"{explained}, {len(found.breaks)} break(s): {listed}. Remove or move each (keep the "
        "value a tensor, torch._dynamo.config.capture_scalar_outputs=True, print outside the "
        "compiled code), then compare ms/step against the current code (steptrace compare).",
        figures,
    )


def recompiled(context: Context) -> Measured:
    subject = context.subject
    batches = _batches(context)
    found = recompiles(
        subject.step, make_state=subject.make_state, batches=batches, device=subject.device
    )
    again, dynamic = found.recompiled, found.recompiled_dynamic
    figures = (
        Figure("batches", found.batches, "count"),
        Figure("recompiles", len(again), "count"),
        Figure("reasons", tuple(_said(c) for c in again), "names"),
        Figure("recompiles_dynamic", len(dynamic), "count"),
        Figure("outputs_differ", found.outputs_differ, "text"),
    )
    if not again:
        raise NotTestable(
            f"over {found.batches} of the workload's batches the compiled step compiled "
            f"{len(found.as_compiled)} frame(s) once each and never again: what changed in "
            "the traced run (a Python value, an attribute, a later shape) is not in them",
            BY_HAND,
        )
    if found.outputs_differ is not None:
        outcome = f"With dynamic=True the outputs differ ({found.outputs_differ})"
    elif len(dynamic) < len(again):
        outcome = (
            f"With dynamic=True {len(dynamic)} recompile(s), the outputs the same: make the "
            "changing value dynamic, then compare ms/step over the same changing inputs "
            "(steptrace compare), compile time counted"
        )
    else:
        outcome = (
            f"With dynamic=True still {len(dynamic)} recompile(s): fix the value instead (one "
            "shape, a tensor or a constant instead of a Python value)"
        )
    return Measured(
        "supported",
        f"The step over {found.batches} of the workload's batches, on a fresh compile of a "
        f"copy of the model (Dynamo's eager backend: the same guards, without Inductor): "
        f"{len(again)} recompile(s): {'; '.join(_said(c) for c in again)}. {outcome}.",
        figures,
    )


def _batches(context: Context) -> list[Batch]:
    """Up to ``BATCHES`` batches: the subject's, then more from its loader when it has one
    (a shape that changes later in the run is then seen)."""
    subject = context.subject
    kept = list(subject.batches)
    if subject.loader is not None and len(kept) < BATCHES:
        more = itertools.islice(iter(subject.loader), len(kept), BATCHES)
        kept += [to_device(b, subject.device) for b in more]
    return kept[:BATCHES]


def _said(compiled: Compile) -> str:
    return f"{compiled.compile_id} {compiled.frame}: {compiled.reason}"
