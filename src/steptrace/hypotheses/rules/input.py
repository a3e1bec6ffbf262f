"""Rule ``input-pipeline``: the step spends a large share reading the batch, GPU idle.

Reading the batch is what the labels read as the ``data_read`` part say
(``steptrace.analysis.time.parts``: the scenario's own name, ``read_batch``, the DataLoader's
``__next__``, Lightning's ``train_dataloader_next``, ...). It explains the GPU's idle time
while reading when the GPU is observed, the reading time itself when it is not.

With the DataLoader's workers recorded beside the trace (``analysis.loader``), they decide,
in place of the median step's reading share (``from_workers``, None without worker files
joined to the steps: a ready batch every other step would halve that median). A step that
waited for a worker's first batch of an iterator longer than the batch took to make is left
out (it waited for the worker to start: an epoch's start inside the window, not the
pipeline's pace), and said. The share is
then the time the steps waited for a batch that was not ready yet (``StepBatch.behind_ms``)
over their wall time, both summed (steps alternate between a late batch and a ready one);
under ``input_share`` the workers kept up, a wait is the batch's arrival, and there is no
finding. Its ``cause``, in this order:

- ``collate``: collating took at least ``COLLATE`` of the late batches' making;
- ``slow-samples``: the late batches held slow samples (``LoaderAnalysis.slow_samples``):
  those that hold the lateness (``_holding``) named, with their workers;
- ``slow-worker``: no slow sample, but one worker's batches hold ``ONE_WORKER`` of the
  waiting, the workers' busy time uneven (``imbalance`` at least ``UNEVEN``);
- ``workers-busy``: the waiting spread over workers that are all late: too few of them;
- ``transfer``, on a GPU trace whose workers kept up: the GPU idles while a batch already
  made reaches it (pinning, a blocking copy).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import msgspec

from steptrace.hypotheses.finding import Figure, FigureUnit, Finding, Value, finding
from steptrace.hypotheses.rules.common import evidence, idle_causes, median, step_share, where
from steptrace.units import pct

if TYPE_CHECKING:
    from steptrace.analysis.loader.figure import LoaderAnalysis, SlowSample, StepBatch
    from steptrace.analysis.measure import StepResult, TraceAnalysis
    from steptrace.hypotheses.case import Case
    from steptrace.hypotheses.thresholds import Thresholds


def input_pipeline(case: Case, limits: Thresholds) -> list[Finding]:
    analysis = case.analysis
    reads = [s.reading for s in analysis.steps if s.reading is not None]
    shares = [s.reading.ms / s.wall_ms for s in analysis.steps if s.reading and s.wall_ms]
    workers = from_workers(analysis, limits)  # with them, they decide (see module)
    if not shares or (workers is None and median(shares) < limits.input_share):
        return []
    read_ms = median(r.ms for r in reads)
    idles = [r.gpu_idle_ms for r in reads if r.gpu_idle_ms is not None]
    idle_share = median(idles) / read_ms if idles and read_ms else None
    if analysis.trace.gpu_observed and (idle_share is None or idle_share < limits.input_gpu_idle):
        return []
    labels = sorted({name for r in reads for name in r.labels})
    share = median(shares)
    explained = step_share(_explained(step) for step in analysis.steps if step.reading)
    if workers is not None and workers.cause is None:
        return []  # the workers kept up: the wait is the batch's arrival, not the pipeline
    if workers is not None and not analysis.trace.gpu_observed:
        explained = workers.share  # the time the steps waited for a late batch
    gpu_text = (
        f"and the GPU sat idle for {pct(idle_share)} of that time"
        if idle_share is not None
        else "(GPU not observed: whether it waits cannot be told from this trace)"
    )
    observation = (
        f"Reading the batch (labels read as data_read: {', '.join(labels)}) takes "
        f"{pct(share)} of the step (median over {len(shares)} steps), {gpu_text}."
    )
    figures: list[tuple[str, Value, FigureUnit]] = [
        ("read_ms_median", read_ms, "ms"),
        ("share_of_step_median", share, "share"),
        ("gpu_idle_share_while_reading", idle_share, "share"),
        ("labels", tuple(labels), "names"),
    ]
    if workers is None:
        hypothesis, next_check = (
            "The input pipeline may not keep up with the compute.",
            (
                "Run the same compute on a batch prepared in advance (read once, reused for "
                "every step), with the same model, batch and warm-up, outside the profiler; "
                "compare ms/step with the real loader and check the outputs match."
            ),
        )
        caveat = (
            "It does not measure storage directly: decoding, augmentation, collation "
            "or a too-small number of workers look the same from here."
        )
    else:
        observation += " " + workers.observation
        hypothesis, next_check = workers.hypothesis, workers.next_check
        figures += [(f.name, f.value, f.unit) for f in workers.figures]
        caveat = (
            "The workers' figures come from their own files, written beside the trace by "
            "the capture: each sample's read and each batch's collate, on the trace's clock."
        )
    return [
        finding(
            "input-pipeline",
            explained,
            observation=observation,
            evidence=evidence(where(analysis), *figures),
            hypothesis=hypothesis,
            next_check=next_check,
            caveats=(caveat,),
        )
    ]


def _explained(step: StepResult) -> tuple[StepResult, float]:
    """The GPU's idle time while reading, or the reading time when the GPU is not observed."""
    causes = idle_causes(step)
    reading = step.reading.ms if step.reading else 0.0
    return step, causes.reading if causes is not None else reading


COLLATE = 0.5  # of the late batches' fetch and collate time
ONE_WORKER = 0.75  # of the waiting, on one worker's batches
UNEVEN = 1.5  # the busiest worker's busy time over the mean
NAMED = 12  # slow samples named in a sentence
HOLDING = 0.25  # of the slowest sample's time over the median: a slow sample named with it


class Workers(msgspec.Struct, frozen=True):
    cause: str | None  # None: the workers kept up
    share: float
    observation: str
    hypothesis: str
    next_check: str
    figures: tuple[Figure, ...]
    workers: tuple[int, ...]  # the workers named
    samples: tuple[object, ...]  # the slow samples' indices named


def from_workers(analysis: TraceAnalysis, limits: Thresholds) -> Workers | None:
    loader = analysis.loader
    names = {s.name for s in analysis.steps}
    every = [s for s in loader.steps if s.step in names] if loader else []
    joined = [s for s in every if loader and not _starting(s, loader.num_workers)]
    if loader is None or not joined:
        return None
    starts = len(every) - len(joined)
    wall = sum(s.wall_ms for s in analysis.steps if s.name in {b.step for b in joined})
    late = [s for s in joined if s.behind_ms > 0]
    behind = sum(s.behind_ms for s in late)
    share = behind / wall if wall > 0 else 0.0
    shares = ", ".join(f"worker {w.worker} {pct(w.share)}" for w in loader.workers)
    figures = [
        Figure("late_batches", len(late), "count"),
        Figure("behind_ms", behind, "ms"),
        Figure(
            "worker_busy_shares",
            tuple(f"{w.worker}: {w.share:.3f}" for w in loader.workers),
            "names",
        ),
        Figure("imbalance", loader.imbalance, "ratio"),
        Figure("collate_share", loader.collate_share, "share"),
        Figure("sample_ms_median", loader.sample_ms_median, "ms"),
    ]
    if share < limits.input_share:
        received = sum(s.wait_ms - s.behind_ms for s in joined)
        kept_up = (
            f"The DataLoader's {loader.num_workers} workers kept up: {len(joined) - len(late)} "
            f"of {len(joined)} batches were ready before the step asked for them; the wait is "
            f"receiving them from the workers ({received / len(joined):.2f} ms a batch)."
        ) + _left_out(starts)
        if not analysis.trace.gpu_observed:
            return Workers(None, share, kept_up, "", "", tuple(figures), (), ())
        return Workers(  # the GPU idles while a ready batch reaches it
            "transfer",
            share,
            kept_up,
            "The batches are made in time; receiving them and copying them to the device "
            "(pageable host memory, a blocking copy) is what the GPU waits for.",
            "A/B outside the profiler: DataLoader(pin_memory=True) and "
            ".to(device, non_blocking=True) against the loader as built, ms/step compared.",
            (*figures, Figure("cause", "transfer", "text")),
            (),
            (),
        )
    cause, workers, samples = _cause(loader, late, behind)
    figures += [
        Figure("cause", cause, "text"),
        Figure("workers_waited_for", workers, "names"),
        Figure("slow_sample_indices", tuple(str(i) for i in samples), "names"),
    ]
    said = _said(cause, loader, late, workers, samples)
    waited = (
        f"The step waited for a batch that was not ready in {len(late)} of {len(joined)} "
        f"steps, {behind:,.2f} ms in all ({pct(share)} of those steps' time), "
    )
    observation = waited + said[0] + f" Busy over the window: {shares}." + _left_out(starts)
    return Workers(cause, share, observation, said[1], said[2], tuple(figures), workers, samples)


def _starting(step: StepBatch, workers: int) -> bool:
    """The step waited for a worker's first batch of an iterator longer than the batch took
    to make: part of its wait was the worker starting (an epoch's start), not its pace."""
    return step.batch < workers and step.behind_ms > step.fetch_ms + step.collate_ms


def _left_out(starts: int) -> str:
    if not starts:
        return ""
    return (
        f" {starts} step(s) waited for an iterator's first batches, its workers starting: "
        "left out here (persistent_workers=True keeps them between epochs)."
    )


def _cause(
    loader: LoaderAnalysis, late: list[StepBatch], behind: float
) -> tuple[str, tuple[int, ...], tuple[object, ...]]:
    made = sum(s.fetch_ms + s.collate_ms for s in late)
    collated = sum(s.collate_ms for s in late)
    batches = {s.batch for s in late}
    slow = _holding(loader, [x for x in loader.slow_samples if x.batch in batches])
    by_worker: dict[int, float] = defaultdict(float)
    for s in late:
        by_worker[s.worker] += s.behind_ms
    top = max(by_worker, key=lambda w: by_worker[w])
    if made > 0 and collated >= COLLATE * made:
        return "collate", tuple(sorted(by_worker)), ()
    if slow:
        workers = tuple(sorted({x.worker for x in slow}))
        return "slow-samples", workers, tuple(x.index for x in sorted(slow, key=_order))
    if (
        len(loader.workers) > 1
        and by_worker[top] >= ONE_WORKER * behind
        and loader.imbalance >= UNEVEN
    ):
        return "slow-worker", (top,), ()
    return "workers-busy", tuple(sorted(by_worker)), ()


def _holding(loader: LoaderAnalysis, slow: list[SlowSample]) -> list[SlowSample]:
    """Of the late batches' slow samples, those that hold their lateness: each at least
    ``HOLDING`` of the slowest one's time over the median sample. A sample the machine's
    load delayed a millisecond beside one that took 30 is not named (a live capture on a
    busy machine named one)."""
    if not slow:
        return []
    excess = max(x.ms for x in slow) - loader.sample_ms_median
    return [x for x in slow if x.ms - loader.sample_ms_median >= HOLDING * excess]


def _order(sample: SlowSample) -> tuple[int, str]:
    """Samples by index: numbers in order, other indices after them as text."""
    index = sample.index
    return (index, "") if isinstance(index, int) else (1 << 62, str(index))


def _said(
    cause: str,
    loader: LoaderAnalysis,
    late: list[StepBatch],
    workers: tuple[int, ...],
    samples: tuple[object, ...],
) -> tuple[str, str, str]:
    """(what the workers show, the hypothesis, the next check) for ``cause``."""
    who = " and ".join(f"worker {w}" for w in workers)
    median = loader.sample_ms_median
    if cause == "slow-samples":
        slow = sorted((x for x in loader.slow_samples if x.index in samples), key=_order)[:NAMED]
        listed = ", ".join(str(x.index) for x in slow)
        ms = max(x.ms for x in slow)
        return (
            f"each time for {who}'s batches, which held slow samples {listed} (up to "
            f"{ms:,.1f} ms each against a {median:.3f} ms median sample).",
            f"A few slow samples ({listed}) hold up the batches of {who} that the step "
            "waits for; the other workers wait their turn with their batches ready.",
            f"Time samples {listed} alone (dataset[i], outside the loader) against median "
            "ones: slow alone, the fix is in the data (prepare, cache or split them); not "
            "slow alone, it is the worker (its process, its share of the machine).",
        )
    if cause == "slow-worker":
        return (
            f"mostly for {who}'s batches, with no slow sample: its batches take longer to "
            "make than the others'.",
            f"{who.capitalize()} makes its batches more slowly than the others (its samples, "
            "its process or its share of the machine), and the step waits for each of them.",
            f"Time {who}'s samples alone against the other workers' samples, outside the loader.",
        )
    if cause == "collate":
        collated = sum(s.collate_ms for s in late) / len(late)
        return (
            f"and collating took {collated:,.2f} ms of each late batch's making "
            f"({pct(loader.collate_share)} of the batches' time in the window).",
            "Collating the samples into a batch, not reading them, makes the batch late.",
            "Time the collate_fn alone on a prepared list of one batch's samples, against "
            "reading those samples: then a cheaper collate (tensors stacked once, no Python "
            "per element) compared in ms/step.",
        )
    return (
        f"for batches of {who}.",
        f"The {loader.num_workers} workers are all busy and the batches still come late: "
        "there are too few workers for the step's pace.",
        f"A/B outside the profiler: the same loader with num_workers={2 * loader.num_workers} "
        "(same dataset, sampler, batch size and collate), ms/step compared.",
    )
