"""The input pipeline's checks by cause (``hypotheses.rules.input``'s ``cause``), run on the
workload's DataLoader (``validate.checks.loader``).

- ``samples`` (slow-samples, slow-worker): the named samples read alone against others
  from the same late batches (slow-samples), or the late worker's samples against the other
  workers' (slow-worker): supported when they are ``SLOW`` times slower alone.
- ``collate`` (collate): a late batch's collate alone on its prepared samples: supported
  when it takes ``COLLATE`` of the batch's making.
- ``more_workers`` (workers-busy): A/B, the loader as built against the same with twice
  the workers, each step reading its next batch (the batches differ by design when the
  sampler shuffles: accepted and said).
"""

from __future__ import annotations

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
from steptrace.validate.ab import compare
from steptrace.validate.checks.loader import collate_alone, more_workers, samples_alone
from steptrace.validate.inputs import Output, State
from steptrace.validate.results import Comparison
from steptrace.validate.timing import CheckPlan

OTHERS = 16  # samples the named ones are compared with, at most


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


def more(context: Context) -> Comparison:
    subject = context.subject
    loader = subject.loader
    workers = getattr(loader, "num_workers", 0)
    if not workers:
        raise NotTestable("the loader has no workers to double", "set num_workers by hand")
    doubled = more_workers(loader, 2 * workers)
    sources: dict[str, Any] = {}

    def reading(key: str, source: Any) -> Any:
        def run(state: State, _: object) -> Output:
            try:
                batch = next(sources[key])
            except (KeyError, StopIteration):
                sources[key] = iter(source)
                batch = next(sources[key])
            return subject.step(state, to_device(batch, subject.device))

        return run

    accepted = CheckPlan(accept_difference=True)  # the batches may differ (a shuffle)
    try:
        return compare(
            reading("a", loader),
            reading("b", doubled),
            make_state=subject.make_state,
            batches=[None],
            device=subject.device,
            check=accepted,
            plan=context.plan,
        )
    finally:
        sources.clear()  # the iterators' workers end with them


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
