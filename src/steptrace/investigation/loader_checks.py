"""The input pipeline's checks by cause (``hypotheses.rules.input``'s ``cause``), run on the
workload's DataLoader (``validate.checks.loader``).

- ``samples`` (slow-samples, slow-worker): the named samples read alone against others
  from the same late batches (slow-samples), or the late worker's samples against the other
  workers' (slow-worker): supported when they are ``SLOW`` times slower alone.
- ``collate`` (collate): a late batch's collate alone on its prepared samples: supported
  when it takes ``COLLATE`` of the batch's making.
- ``more`` (workers-busy): the loader as built (A) against the same with twice the workers
  (B), each step reading its next batch, paced in rounds of ``QUEUES`` times B's queue of
  prefetched batches (``validate.checks.loader.paced``): supported when B's whole CI is
  under 1. The step's outputs are not compared: the loader changes when batches come, not
  what they hold (a shuffled sampler reads other batches in either case).
"""

from __future__ import annotations

import copy
import statistics
from typing import Any

from steptrace.analysis.loader.figure import (
    SLOW,
    Index,
    LoaderAnalysis,
    Made,
    batches_by_number,
)
from steptrace.analysis.loader.log import read_loader_log
from steptrace.devices import to_device
from steptrace.errors import NotTestable
from steptrace.hypotheses.finding import Figure
from steptrace.hypotheses.rules.input import COLLATE
from steptrace.investigation.check import Context, Measured
from steptrace.validate.checks.loader import collate_alone, more_workers, paced, samples_alone

OTHERS = 16  # samples the named ones are compared with, at most
QUEUES = 4  # a more-workers round: this many of the larger side's full queues of batches
BAND = 0.01  # B's pace is called faster only beyond this (as compare's noise band)


def samples(context: Context) -> Measured:
    loader, analysis = _loader(context)
    named, others = _named_and_others(context, analysis)
    found = samples_alone(loader.dataset, named, others)
    ratio = found.ratio
    listed = ", ".join(str(i) for i in named)
    mine, theirs = statistics.median(found.named_ms), statistics.median(found.others_ms)
    figures = (
        Figure("samples", tuple(str(i) for i in named), "names"),
        Figure("named_ms", tuple(f"{ms:.3f}" for ms in found.named_ms), "names"),
        Figure("others_median_ms", theirs, "ms"),
        Figure("times_slower_alone", ratio, "ratio"),
    )
    alone = (
        f"Read alone in this process ({len(named)} named, {len(others)} others from the same "
        f"batches, each read 3 times): samples {listed} take {mine:.3f} ms (median) against "
        f"{theirs:.3f} ms, {ratio:.1f}x"
    )
    if ratio >= SLOW:
        return Measured(
            "supported",
            f"{alone}: they are slow in themselves, so the fix is in the data (prepare, cache "
            "or split them), not in the workers.",
            figures,
        )
    return Measured(
        "not-supported",
        f"{alone}: alone they are not slow, so what made their batches late is the worker "
        "(its process, its share of the machine), not the samples.",
        figures,
    )


def collate(context: Context) -> Measured:
    loader, analysis = _loader(context)
    late = _late(analysis, context)
    if not late:
        raise NotTestable("no late batch in the workers' files", "time the collate_fn by hand")
    indices = [s.index for s in late[0].batch.samples]
    found = collate_alone(loader.dataset, loader.collate_fn, indices)
    figures = (
        Figure("samples", found.samples, "count"),
        Figure("read_ms", found.read_ms, "ms"),
        Figure("collate_ms", found.collate_ms, "ms"),
        Figure("collate_share", found.share, "share"),
    )
    said = (
        f"Batch {late[0].k}'s {found.samples} samples read alone in {found.read_ms:.3f} ms, "
        f"collated alone in {found.collate_ms:.3f} ms: the collate is {found.share:.0%} of "
        "its making"
    )
    if found.share >= COLLATE:
        return Measured("supported", f"{said}: it is the collate that makes it late.", figures)
    return Measured("not-supported", f"{said}: alone it is not what makes it late.", figures)


def more(context: Context) -> Measured:
    subject = context.subject
    loader = subject.loader
    workers = getattr(loader, "num_workers", 0)
    if not workers:
        raise NotTestable("the loader has no workers to double", "set num_workers by hand")
    doubled = more_workers(loader, 2 * workers)
    queued = 2 * workers * (getattr(loader, "prefetch_factor", None) or 2)
    state = copy.deepcopy(subject.make_state())  # the user's objects are never changed

    def step(batch: Any) -> None:
        subject.step(state, to_device(batch, subject.device))

    found = paced(step, loader, doubled, block=QUEUES * queued, budget_s=context.plan.budget_s)
    low, high = found.ci
    figures = (
        Figure("workers", f"{workers} -> {2 * workers}", "text"),
        Figure("a_ms_per_step", statistics.median(found.a_ms), "ms"),
        Figure("b_ms_per_step", statistics.median(found.b_ms), "ms"),
        Figure("ratio", found.ratio, "ratio"),
        Figure("ratio_ci", f"{low:.3f}-{high:.3f}", "text"),
        Figure("rounds", found.rounds, "count"),
        Figure("steps_a_round", found.block, "count"),
    )
    said = (
        f"{2 * workers} workers against {workers}, {found.rounds} rounds of {found.block} "
        f"steps a side, each step reading its next batch: B takes {found.ratio:.0%} of A's "
        f"time per step [{found.confidence:.0%} CI {low:.0%}-{high:.0%}]"
    )
    if high < 1 - BAND:
        return Measured("supported", f"{said}: more workers make the batches come sooner.", figures)
    return Measured(
        "not-supported",
        f"{said}: more workers do not make the step faster (the workers share what limits "
        "them: the cores, the storage, a lock).",
        figures,
    )


def _loader(context: Context) -> tuple[Any, LoaderAnalysis]:
    loader, analysis = context.subject.loader, context.analysis.loader
    if loader is None or not hasattr(loader, "dataset") or analysis is None:
        raise NotTestable(
            "the workload's loader is not a DataLoader with its workers' files",
            "time the samples and the collate by hand, outside the loader",
        )
    return loader, analysis


def _late(analysis: LoaderAnalysis, context: Context) -> list[Made]:
    """The batches the steps waited for while not ready, from the workers' files."""
    log = read_loader_log(analysis.folder)
    if log is None:
        return []
    made = batches_by_number(log)
    found = []
    for step in analysis.steps:
        if step.behind_ms > 0:
            found += [
                m for (_, k), m in made.items() if k == step.batch and m.worker.pid == step.pid
            ]
    return found


def _named_and_others(
    context: Context, analysis: LoaderAnalysis
) -> tuple[list[Index], list[Index]]:
    """(the samples the finding names, others of the same late batches); for a slow
    worker, (its late batches' samples, the other workers' samples)."""
    values = context.finding.evidence.values()
    said = {str(i) for i in values.get("slow_sample_indices") or ()}  # type: ignore[union-attr]
    named = [x.index for x in analysis.slow_samples if str(x.index) in said]
    late = _late(analysis, context)
    if named:
        others = [s.index for m in late for s in m.batch.samples if s.index not in named]
        return named, others[:OTHERS]
    waited = {int(w) for w in values.get("workers_waited_for") or ()}  # type: ignore[union-attr]
    log = read_loader_log(analysis.folder)
    every = list(batches_by_number(log).values()) if log else []
    mine = [s.index for m in late if m.worker.worker in waited for s in m.batch.samples]
    theirs = [s.index for m in every if m.worker.worker not in waited for s in m.batch.samples]
    return mine[:OTHERS], theirs[:OTHERS]
