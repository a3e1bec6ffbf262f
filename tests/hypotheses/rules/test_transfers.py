"""Rules ``repeated-copy`` and ``pageable-memcpy`` on hand-built analyses."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from steptrace.analysis.measure import TraceAnalysis
from steptrace.analysis.time.copies import CopyPattern
from steptrace.analysis.time.gpu import CopySummary
from steptrace.hypotheses import Case, Figure, Finding, Thresholds, Where
from steptrace.hypotheses.rules.transfers import pageable_memcpy, repeated_copy
from tests.analyses import THREAD, analysis, copy, copy_pattern, gpu_step, steps

NAMES = ("ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3")
WHERE = Where(NAMES, (1000.0, 31000.0), THREAD, (7,))


def repeated(data: TraceAnalysis, **limits: Any) -> list[Finding]:
    return repeated_copy(Case(data), Thresholds(**limits))


def pageable(data: TraceAnalysis, **limits: Any) -> list[Finding]:
    return pageable_memcpy(Case(data), Thresholds(**limits))


# -- repeated-copy ----------------------------------------------------------------------------
def with_copies(
    *patterns: CopyPattern, count: int = 3, htod_ms: float | None = None
) -> TraceAnalysis:
    """``count`` GPU steps of 10 ms with the given copy patterns; each step's host-to-device
    copies take ``htod_ms`` on the timeline (their union; by default the patterns' time
    spread evenly: no two copies at once)."""
    union = sum(p.total_ms for p in patterns) / count if htod_ms is None else htod_ms
    memcpy = [copy("HtoD", count=len(patterns), busy_ms=union)] if patterns else []
    return analysis(steps(*[10.0] * count, gpu=gpu_step(2.0, memcpy=memcpy)), copies=patterns)


def test_repeated_copy_fires_in_every_step() -> None:
    (found,) = repeated(with_copies(copy_pattern("aten::copy_", "loss", total_ms=0.3)))
    assert found.rule == "repeated-copy"
    assert found.evidence.figures == (
        Figure("bytes", 4096, "bytes"),
        Figure("operator", "aten::copy_", "text"),
        Figure("label", "loss", "text"),
        Figure("host_memory", "Pageable", "text"),
        Figure("per_step", (1, 1, 1), "count"),
        Figure("total_ms", 0.3, "ms"),
        Figure(
            "instances", ("4,096 bytes by aten::copy_ inside 'loss', 1× a step, 0.300 ms",), "names"
        ),
    )
    assert found.severity == pytest.approx(0.01)  # 0.3 ms of 30 ms of steps
    assert found.level == "low"
    assert found.evidence.where == WHERE
    assert "(4,096 bytes, launched by aten::copy_ inside 'loss')" in found.observation
    assert "happens 1× in every one of the 3 steps, 0.300 ms in all." in found.observation


def test_repeated_copy_one_finding_for_every_pattern_with_the_largest_as_evidence() -> None:
    big = copy_pattern("aten::to", "model.forward", per_step=(2, 2, 2), total_ms=6.0)
    small = copy_pattern("aten::copy_", "loss", nbytes=None, total_ms=1.5)
    (found,) = repeated(with_copies(big, small))
    values = found.evidence.values()
    assert (values["operator"], values["per_step"], values["total_ms"]) == (
        "aten::to",
        (2, 2, 2),
        6.0,
    )
    assert values["instances"] == (
        "4,096 bytes by aten::to inside 'model.forward', 2× a step, 6.000 ms",
        "unknown size by aten::copy_ inside 'loss', 1× a step, 1.500 ms",
    )
    assert found.severity == pytest.approx(0.25)  # 7.5 ms of copies, none at once, of 30 ms
    assert found.level == "high"
    assert found.observation.endswith("6.000 ms in all; 1 other such copy adds 1.500 ms.")


def test_repeated_copy_counts_copies_at_once_on_several_streams_once() -> None:
    """Two patterns of 3 ms each, whose copies ran at the same time: the steps' copies
    cover 1 ms each on the timeline, 3 ms in all, not 6."""
    first = copy_pattern("aten::to", "model.forward", total_ms=3.0)
    second = copy_pattern("aten::copy_", "loss", total_ms=3.0)
    (found,) = repeated(with_copies(first, second, htod_ms=1.0))
    assert found.severity == pytest.approx(0.1)
    (alone,) = repeated(with_copies(first, second, htod_ms=5.0))  # other copies beside them
    assert alone.severity == pytest.approx(0.2)  # never more than the patterns' own time


def test_repeated_copy_without_the_steps_gpu_figures_adds_the_patterns_up() -> None:
    patterns = [copy_pattern("aten::to", "model.forward", total_ms=3.0)] * 2
    data = analysis(steps(10.0, 10.0, 10.0), copies=patterns, gpu_observed=True)
    assert [f.severity for f in repeated(data)] == [pytest.approx(0.2)]


@pytest.mark.parametrize(
    "label",
    [
        None,
        "read_batch",
        "DataLoader.__next__",
        "fetch",
        "to_device",
        "h2d",
        "Transfer",
        "data_read",
        "[pl][profile][Strategy]SingleDeviceStrategy.batch_to_device",
    ],
)
def test_repeated_copy_ignores_the_batch_and_unlabelled_copies(label: str | None) -> None:
    assert repeated(with_copies(copy_pattern("aten::copy_", label))) == []


@pytest.mark.parametrize(
    ("direction", "per_step"),
    [("DtoH", (1, 1, 1)), ("DtoD", (1, 1, 1)), ("HtoD", (1, 2, 1)), ("HtoD", (1, 1, 0))],
)
def test_repeated_copy_needs_the_same_host_to_device_copy_in_every_step(
    direction: str, per_step: tuple[int, ...]
) -> None:
    pattern = copy_pattern("aten::copy_", "loss", direction=direction, per_step=per_step)
    assert repeated(with_copies(pattern)) == []


def test_repeated_copy_step_count_threshold() -> None:
    assert len(repeated(with_copies(copy_pattern("op", "loss", per_step=(1, 1)), count=2))) == 1
    assert repeated(with_copies(copy_pattern("op", "loss", per_step=(1,)), count=1)) == []
    one_step = with_copies(copy_pattern("op", "loss", per_step=(3,)), count=1)
    assert len(repeated(one_step, repeated_copy_steps=1)) == 1
    assert repeated(with_copies(copy_pattern("op", "loss")), repeated_copy_steps=4) == []


# -- pageable-memcpy --------------------------------------------------------------------------
def with_memcpy(*per_step: Sequence[CopySummary], observed: bool = True) -> TraceAnalysis:
    """Steps of 10 ms with these copies each (one list per step)."""
    gpus = [gpu_step(3.0, memcpy=c) if observed else None for c in per_step]
    return analysis(steps(*[10.0] * len(per_step), gpu=gpus))


def htod(nbytes: int, *, count: int = 2, busy_ms: float = 0.5) -> CopySummary:
    return copy("HtoD", count=count, busy_ms=busy_ms, nbytes=nbytes, pageable=count)


def test_pageable_memcpy_fires_at_one_megabyte_per_step() -> None:
    (found,) = pageable(with_memcpy(*[[htod(1_000_000)]] * 3))
    assert found.rule == "pageable-memcpy"
    assert found.evidence.figures == (
        Figure("copies_per_step", 2.0, "count"),
        Figure("bytes_per_step", 1_000_000.0, "bytes"),
        Figure("copy_ms_per_step", 0.5, "ms"),
    )
    assert (found.severity, found.level) == (0.05, "medium")  # 0.5 ms of a 10 ms step
    assert found.evidence.where == WHERE
    assert "2 host-to-device copies per step come from pageable memory (1.0 MB" in (
        found.observation
    )


def test_pageable_memcpy_silent_just_under() -> None:
    assert pageable(with_memcpy(*[[htod(999_999)]] * 3)) == []


def test_pageable_memcpy_medians_over_steps() -> None:
    data = with_memcpy(
        [htod(3_000_000, count=4, busy_ms=3.0)],
        [htod(1_000_000, count=2, busy_ms=1.0)],
        [htod(500_000, count=1, busy_ms=0.2), copy("DtoH", nbytes=9_000_000, pageable=1)],
    )
    (found,) = pageable(data)
    assert found.evidence.values() == {
        "copies_per_step": 2.0,
        "bytes_per_step": 1_000_000.0,
        "copy_ms_per_step": 1.0,
    }
    assert found.severity == 0.1


@pytest.mark.parametrize(
    "summary",
    [
        copy("HtoD", count=2, busy_ms=0.5, nbytes=5_000_000, pinned=2),
        copy("DtoH", count=2, busy_ms=0.5, nbytes=5_000_000, pageable=2),
    ],
)
def test_pageable_memcpy_ignores_pinned_and_device_to_host(summary: CopySummary) -> None:
    assert pageable(with_memcpy(*[[summary]] * 3)) == []


def test_pageable_memcpy_needs_the_gpu() -> None:
    assert pageable(with_memcpy([], [], observed=False)) == []
    partly = analysis(
        steps(10.0, 10.0, gpu=[gpu_step(1.0, memcpy=[htod(5_000_000)]), None]), gpu_observed=True
    )
    assert pageable(partly) == []


def test_pageable_memcpy_overridden_threshold() -> None:
    data = with_memcpy(*[[htod(1_500_000)]] * 3)
    assert pageable(data, pageable_bytes=1_500_001) == []
    assert len(pageable(data, pageable_bytes=1_500_000)) == 1
    assert len(pageable(with_memcpy(*[[htod(200_000)]] * 3), pageable_bytes=100_000)) == 1


def test_pageable_memcpy_counts_only_the_pageable_copies() -> None:
    """One 1 kB pageable copy beside nine pinned ones (4 MB): only the kilobyte counts."""
    mixed = copy(
        count=10,
        busy_ms=0.41,
        nbytes=4_001_000,
        pageable=1,
        pinned=9,
        pageable_bytes=1_000,
        pageable_busy_ms=0.01,
    )
    quiet = analysis(steps(10, 10, 10, gpu=gpu_step(1.0, memcpy=[mixed])))
    assert pageable_memcpy(Case(quiet), Thresholds()) == []
    heavy = copy(
        count=10,
        busy_ms=0.41,
        nbytes=4_001_000,
        pageable=9,
        pinned=1,
        pageable_bytes=4_000_000,
        pageable_busy_ms=0.4,
    )
    (found,) = pageable_memcpy(
        Case(analysis(steps(10, 10, 10, gpu=gpu_step(1.0, memcpy=[heavy])))), Thresholds()
    )
    assert found.evidence.values() == {
        "copies_per_step": 9,
        "bytes_per_step": 4_000_000,
        "copy_ms_per_step": 0.4,
    }


def test_pageable_memcpy_needs_a_pageable_copy_even_at_a_zero_threshold() -> None:
    pinned_only = copy(count=2, busy_ms=0.2, nbytes=2_000_000, pinned=2)
    quiet = analysis(steps(10, 10, gpu=gpu_step(1.0, memcpy=[pinned_only])))
    assert pageable_memcpy(Case(quiet), Thresholds(pageable_bytes=0)) == []
