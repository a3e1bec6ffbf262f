"""GPU time by kind of work (GEMM, convolution, ...): overlap attributed once, never over 100%."""

from __future__ import annotations

from collections import defaultdict

import pytest

import steptrace
from steptrace.analysis.efficiency.kernel_kinds import category_of
from steptrace.analysis.time.categories import CATEGORIES, PRIORITY
from steptrace.report.formats.renderers import renderer
from steptrace.report.sections.trace import report_document
from tests import reference, tracegen
from tests.conftest import Case, WriteTrace, report_of

NS = 5e-10  # in ms: half a nanosecond
COPY_CATEGORIES = {"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"}


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("volta_sgemm_128x64_nn", "GEMM"),
        ("Cijk_Alik_Bljk_SB_MT64x64x16", "GEMM"),
        ("nvjet_tst_128x64_64x8_2x1_v_bz_TNT", "GEMM"),
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgs)", "communication"),
        ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "communication"),
        ("void flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128>>(Flash_fwd_params)", "attention"),
        ("void cudnn::detail::implicit_convolve_sgemm<float, float, 128, 5>(int)", "convolution"),
        ("volta_scudnn_128x64_relu_interior_nn_v1", "convolution"),
        ("void at::native::vectorized_elementwise_kernel<4, FillFunctor<float>>", "elementwise"),
        ("triton_poi_fused_add_cos_sin_0", "elementwise"),
        ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>", "reduction"),
        ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>", "reduction"),
        ("void cub::DeviceRadixSortOnesweepKernel<long>", "other"),
    ],
)
def test_kernel_names_fall_in_their_category(name: str, category: str) -> None:
    assert category_of(name) == category


def _reference_categories(evs: list[reference.Ev], lo: int, hi: int) -> dict[str, int]:
    """Integer ns per category in [lo, hi]: a sweep over start/end points, each elementary
    segment given to the first category (in priority order) with work running in it."""
    points: list[tuple[int, int, str]] = []
    for e in reference.gpu_events(evs):
        start, end = max(e.start, lo), min(e.end, hi)
        if end <= start:
            continue
        category = "copy" if e.cat in COPY_CATEGORIES else category_of(e.name)
        points += [(start, 1, category), (end, -1, category)]
    points.sort(key=lambda p: (p[0], p[1]))
    running: dict[str, int] = defaultdict(int)
    result = dict.fromkeys(CATEGORIES, 0)
    previous = None
    for time, delta, category in points:
        if previous is not None and time > previous:
            active = [c for c in PRIORITY if running[c] > 0]
            if active:
                result[active[0]] += time - previous
        running[category] += delta
        previous = time
    return result


def _windows(case: Case) -> list[tuple[int, int]]:
    windows = reference.step_windows(case.evs)
    if windows:
        return [(lo, hi) for _, lo, hi in windows]
    return [(min(e.start for e in case.evs), max(e.end for e in case.evs))]


def test_categories_per_step_match_an_integer_ns_sweep(analyzed: Case) -> None:
    result = analyzed.result
    if not result.trace.gpu_observed:  # a CPU-only trace: not observed, never 0
        assert result.summary.gpu_categories is None
        assert all(s.gpu is None for s in result.steps)
        return
    for step, (lo, hi) in zip(result.steps, _windows(analyzed), strict=True):
        assert step.gpu is not None
        expected = _reference_categories(analyzed.evs, lo, hi)
        got = {c.category: c.busy_ms for c in step.gpu.categories}
        assert list(got) == list(CATEGORIES)
        for category in CATEGORIES:
            assert got[category] == pytest.approx(expected[category] / 1e6, abs=NS * 10)
        busy = reference.busy_ns(reference.gpu_events(analyzed.evs), lo, hi)
        assert sum(expected.values()) == busy  # the reference itself partitions busy time
        shares = [c.share_of_busy for c in step.gpu.categories]
        if busy == 0:
            assert shares == [None] * len(CATEGORIES)
        else:
            assert sum(s or 0.0 for s in shares) <= 1 + 1e-9
    summary = result.summary.gpu_categories
    assert summary is not None
    assert sum(c.share_of_busy or 0.0 for c in summary) <= 1 + 1e-9


def test_overlap_is_attributed_once_by_priority(write_trace: WriteTrace) -> None:
    # one step of 100 µs: a GEMM 10-50 on stream 7, an all-reduce 30-70 on stream 8 and a
    # copy 60-90 on stream 9: GEMM 40, exposed communication 20 (50-70), copy 20 (70-90)
    events = [
        tracegen.step(1, 0, 100),
        tracegen.kernel("volta_sgemm_128x64_nn", 10, 40, stream=7),
        tracegen.kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 30, 40, stream=8),
        tracegen.gpu("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 60, 30, stream=9),
    ]
    analysis = steptrace.analyze(write_trace(tracegen.document(events))).analysis
    (step,) = analysis.steps
    assert step.gpu is not None
    got = {c.category: c.busy_ms for c in step.gpu.categories if c.busy_ms}
    assert got == pytest.approx({"GEMM": 0.040, "communication": 0.020, "copy": 0.020})
    assert step.gpu.busy_ms == pytest.approx(0.080)
    shares = {c.category: c.share_of_busy for c in step.gpu.categories if c.busy_ms}
    assert shares == pytest.approx({"GEMM": 0.5, "communication": 0.25, "copy": 0.25})


@pytest.mark.parametrize("name", ["text", "md", "html"])
def test_every_format_shows_the_categories_or_not_observed(name: str) -> None:
    for trace, expected in (("amd_mi250", "GEMM"), ("cpu_train_trace.json", "not observed")):
        report = report_of(trace)
        (section,) = [s for s in report_document(report).sections if s.key == "categories"]
        text = renderer(name).render([report_document(report)])
        assert section.heading.split(" (")[0] in text
        body = text.split(section.heading.split(" (")[0], 1)[1][:3000]
        assert expected in body
        if expected == "not observed":
            assert "0.0%" not in body.split("CPU operators")[0]  # never 0 for the unobserved
