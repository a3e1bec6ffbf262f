"""Lightning's batches replace ProfilerStep markers that cut through them, and only then."""

from __future__ import annotations

import itertools

from steptrace.analysis.time.steps import find_steps
from tests.tables import Row, label, op, step, table

BATCH = "[pl][profile]run_training_batch"
READ = "[pl][profile][_TrainingEpochLoop].train_dataloader_next"


def lightning_rows(cut_at: tuple[float, ...]) -> list[Row]:
    """Three batches: read at 0/100/200 (10 µs), run_training_batch at 20/120/220 (60 µs)."""
    rows: list[Row] = []
    for k in range(3):
        rows += [label(READ, 100 * k, 10), label(BATCH, 100 * k + 20, 60)]
        rows.append(op("aten::mm", 100 * k + 30, 10))
    pairs = itertools.pairwise(cut_at)
    rows += [step(n, a, b - a) for n, (a, b) in enumerate(pairs, start=2)]
    return rows


def test_markers_cutting_the_batches_give_way_to_the_batches() -> None:
    # Lightning's profiler steps after the forward: boundaries at 50, 150, 250 (mid-batch)
    steps = find_steps(table(*lightning_rows((0, 50, 150, 250))))
    assert steps.from_markers
    # the third batch (read 200, run 220-280) ends after the last marker (250): not recorded whole
    assert [(w.name, w.number, w.start_us, w.end_us) for w in steps.windows] == [
        ("run_training_batch#1", 1, 0, 80),
        ("run_training_batch#2", 2, 100, 180),
    ]


def test_markers_between_the_batches_stand() -> None:
    steps = find_steps(table(*lightning_rows((0, 90, 190, 290))))
    assert [w.name for w in steps.windows] == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]


def test_a_batch_without_its_read_label_starts_at_its_own_start() -> None:
    rows = [label(BATCH, 20, 60), label(BATCH, 120, 60), step(1, 0, 50), step(2, 50, 150)]
    windows = find_steps(table(*rows)).windows
    assert [(w.start_us, w.end_us) for w in windows] == [(20, 80), (120, 180)]


def test_a_read_before_the_previous_batch_ended_is_not_this_batchs() -> None:
    # the read at 10 overlaps batch 1 (5-60): batch 2 (100-150) starts at its own start
    rows = [label(BATCH, 5, 55), label(READ, 10, 5), label(BATCH, 100, 50), step(1, 0, 30)]
    rows.append(step(2, 30, 170))
    windows = find_steps(table(*rows)).windows
    assert [(w.start_us, w.end_us) for w in windows] == [(5, 60), (100, 150)]


def test_when_no_batch_is_whole_inside_the_markers_they_stand() -> None:
    rows = [label(BATCH, 20, 60), step(1, 0, 50)]
    assert [w.name for w in find_steps(table(*rows)).windows] == ["ProfilerStep#1"]
