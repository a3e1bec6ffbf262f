"""Each finding issue #33 listed, on the real trace that showed it.

The premise of each test (the device, the collective, the kernels per step, the copies'
sizes, the trace's own multi-line shapes) is read from the trace's raw JSON here, so that
the test fails if the trace is not what it is said to be; the assertion is then on what
the report says about it.
"""

from __future__ import annotations

import gzip
import re
from collections import defaultdict
from pathlib import Path

import pytest

from steptrace.analysis.time.idle import WAITING_ON_HOST
from steptrace.pipeline import analyze_source
from steptrace.report.formats.renderers import renderer
from steptrace.report.sections.trace import View, report_document
from tests import reference
from tests.conftest import gpu_trace, report_of, trace_params

V100S = ["resnet50_train", "v100_1rank_train_nsres", "v100_ddp2_rank1"]
# the profiler's, torch's and torch.compile's wrappers, written here apart from the rule's own
WRAPPERS = re.compile(
    r"record_param_comms|ProfilerStep#|^## .* ##$|Optimizer\.step#|^CompiledFunction"
    r"|^Torch-Compiled Region|^TorchDynamo Cache Lookup"
)


def texts(name: str) -> list[str]:
    """Every sentence of every finding of a shared trace's report."""
    return [
        t
        for f in report_of(name).findings
        for t in (f.observation, f.hypothesis, f.next_check, *f.caveats)
    ]


def compute_capabilities(path: Path) -> set[int]:
    doc = reference.read_exact(path)
    return {int(d["computeMajor"]) for d in doc.get("deviceProperties", [])}


@pytest.mark.parametrize("name", V100S)
def test_no_v100_advice_names_bf16(name: str) -> None:
    assert compute_capabilities(gpu_trace(name)) == {7}  # the raw JSON: Volta, no BF16
    found = {f.rule: f for f in report_of(name).findings}
    assert "torch.float16" in found["precision"].next_check
    assert "GradScaler" in found["precision"].next_check
    assert not any(re.search(r"bf16|bfloat16", t, re.IGNORECASE) for t in texts(name))


def test_an_a100_is_told_bf16_or_tf32() -> None:
    assert compute_capabilities(gpu_trace("a100_cuda_event_sync_multistream")) == {8}
    advice = {f.rule: f for f in report_of("a100_cuda_event_sync_multistream").findings}
    assert "torch.bfloat16" in advice["precision"].next_check
    assert "allow_tf32" in advice["precision"].next_check


@pytest.mark.parametrize(
    "name", ["a100_2rank_rank0", "sampled_128rank_rank0", "sampled_128rank_rank1", "v100_ddp2"]
)
def test_record_param_comms_is_never_a_dominant_operator(name: str) -> None:
    evs = reference.events(reference.read_exact(gpu_trace(name)))
    launched = reference.launched_gpu_ns(evs)
    # the raw JSON: the profiler's wrapper of collectives launched the most GPU time
    assert max(launched, key=lambda n: launched[n][1]) == "record_param_comms"
    assert not any("record_param_comms" in t for t in texts(name))


@pytest.mark.parametrize("path", trace_params())
def test_no_finding_names_a_wrapper_or_offers_a_check_on_sizeless_shapes(path: Path) -> None:
    report = report_of(path.name)
    for f in report.findings:
        if f.rule == "dominant-op":
            assert not WRAPPERS.search(str(f.evidence.values()["operator"]))
        assert not re.search(r"shapes \[\[\s*\](,\s*\[\s*\])*\]", f.next_check)
        assert f.rule != "profiler-distortion"  # never measured in these traces


def nccl_gpu_ms(path: Path) -> dict[str, float]:
    """GPU time launched inside each ``nccl:<collective>`` operator (raw JSON, by the
    launch call's correlation and thread)."""
    evs = reference.events(reference.read_exact(path))
    spans = defaultdict(list)
    for e in evs:
        if e.name.startswith("nccl:"):
            spans[e.thread].append(e)
    launches = {
        e.raw["args"]["correlation"]: e
        for e in evs
        if e.cat in ("cuda_runtime", "Runtime") and "correlation" in e.raw.get("args", {})
    }
    found: dict[str, float] = defaultdict(float)
    for g in reference.gpu_events(evs):
        call = launches.get(g.raw.get("args", {}).get("correlation"))
        around = call and [s for s in spans[call.thread] if s.start <= call.start < s.end]
        if around:
            found[around[-1].name.removeprefix("nccl:")] += g.dur / 1e6
    return found


def test_dlrm_all_to_all_gets_all_to_all_advice_not_ddp_buckets() -> None:
    by_kind = nccl_gpu_ms(gpu_trace("sampled_128rank_rank0"))
    assert max(by_kind, key=lambda k: by_kind[k]) == "all_to_all"  # the raw JSON
    (overlap,) = [
        f for f in report_of("sampled_128rank_rank0").findings if f.rule == "comm-overlap"
    ]
    values = overlap.evidence.values()
    assert values["collective"] == "all_to_all"
    assert isinstance(values["busbw_gbps"], float) and values["busbw_gbps"] > 0
    assert values["bytes_per_call"] is not None
    assert "bucket" not in overlap.next_check and "even out the split" in overlap.next_check


def test_a_long_collective_after_little_compute_may_be_waiting_for_other_ranks() -> None:
    evs = reference.events(reference.read_exact(gpu_trace("ddp_rank0")))
    step_thread = next(e.thread for e in evs if e.name.startswith("ProfilerStep#"))
    ops = [e for e in evs if reference.is_cpu_op(e) and e.thread == step_thread]
    gloo = sorted((e for e in evs if e.name.startswith("gloo:")), key=lambda e: e.start)
    since, long_ns = min(e.start for e in evs), 0
    for call in gloo:  # the raw JSON: gloo's collectives as they ran, waiting included
        spans = [(max(o.start, since), min(o.end, call.start)) for o in ops]
        computed = reference.merged_length([(a, b) for a, b in spans if a < b])
        if call.name == "gloo:all_reduce" and call.dur >= 1_000_000 and call.dur > computed:
            long_ns += call.dur
        since = call.end
    # most of the all-reduce time is in calls of 1 ms or more after less compute than that
    assert long_ns > 0.5 * sum(c.dur for c in gloo if c.name == "gloo:all_reduce")
    (overlap,) = [f for f in report_of("ddp_rank0").findings if f.rule == "comm-overlap"]
    assert overlap.hypothesis.startswith("This rank may be waiting for other ranks")
    assert overlap.next_check.startswith("First analyze the job's ranks together")
    ddp = [f for f in report_of("v100_ddp2").findings if f.rule == "comm-overlap"]
    assert "may be waiting" not in ddp[0].hypothesis and "bucket_cap_mb" in ddp[0].next_check


def test_small_launches_needs_enough_kernels() -> None:
    evs = reference.events(reference.read_exact(gpu_trace("amd_mi250")))
    kernels = [e for e in reference.gpu_events(evs) if e.cat == "kernel"]
    per_step = [
        sum(lo <= k.start < hi for k in kernels) for _, lo, hi in reference.step_windows(evs)
    ]
    assert max(per_step) < 100  # the raw JSON: a toy with a handful of kernels a step
    assert "small-launches" not in {f.rule for f in report_of("amd_mi250").findings}
    assert "small-launches" in {f.rule for f in report_of("gp100").findings}  # 130 a step


def test_tiny_repeated_copies_are_minor_and_out_of_the_verdict() -> None:
    evs = reference.events(reference.read_exact(gpu_trace("sampled_128rank_rank0")))
    windows = reference.step_windows(evs)
    tiny = [
        e
        for e in reference.gpu_events(evs)
        if "Memcpy HtoD" in e.name and e.raw["args"].get("bytes") in (1024, 5120)
    ]
    walls = sum(hi - lo for _, lo, hi in windows)
    assert tiny and sum(e.dur for e in tiny) < 0.005 * walls  # the raw JSON: 1 KB, 5 KB
    report = report_of("sampled_128rank_rank0")
    (copies,) = [f for f in report.findings if f.rule == "repeated-copy"]  # both in one
    listed = " ".join(str(t) for t in copies.evidence.values()["instances"] or ())
    assert "1,024 bytes" in listed and "5,120 bytes" in listed
    assert copies.minor and copies.severity < 0.005
    assert report.findings[-1] == copies  # listed last
    assert "repeated-copy" not in {t.rule for t in report.verdict.top}


def test_pretty_printed_shapes_are_on_one_line() -> None:
    path = gpu_trace("tracelens_h100")
    raw = gzip.decompress(path.read_bytes()).decode()
    assert re.search(r'"Input Dims": \[\s*\n', raw)  # the raw JSON is pretty-printed
    found, _ = analyze_source(path, lanes=False)
    shapes = [o.input_shapes for o in found.analysis.operators if o.input_shapes]
    shapes += [r.input_shapes for r in found.analysis.roofline if r.input_shapes]
    assert shapes and not any("\n" in s for s in shapes)
    document = report_document(found, View())
    for fmt in ("text", "md", "html", "json"):
        out = renderer(fmt).render([document])
        assert "\\x0a" not in out


def test_the_gpu_table_and_the_timeline_share_their_idle_gaps() -> None:
    report, timeline = analyze_source(gpu_trace("resnet50_train"), lanes=True)
    assert timeline is not None
    for lanes, step in zip(timeline.steps, report.analysis.steps, strict=True):
        assert step.gpu is not None and step.gpu.idle_waiting_on_host_ms is not None
        host_ms = sum(g.end_ns - g.start_ns for g in lanes.gaps if g.cause == WAITING_ON_HOST)
        assert host_ms / 1e6 <= step.gpu.idle_waiting_on_host_ms + 1e-6
        assert host_ms / 1e6 >= step.gpu.idle_waiting_on_host_ms - lanes.small_gaps_ns / 1e6 - 1e-6


def test_the_gpu_caption_says_what_busy_measures_and_headers_say_per_step() -> None:
    path = gpu_trace("v100_1rank_train_nsres")  # kernels run past the step that launched them
    evs = reference.events(reference.read_exact(path))
    gpu = reference.gpu_events(evs)
    report = report_of("v100_1rank_train_nsres")
    for (name, lo, hi), step in zip(
        reference.step_windows(evs), report.analysis.steps, strict=True
    ):
        # the raw JSON: busy is the union on the step's window, whoever launched the work
        assert step.name == name and step.gpu is not None
        assert step.gpu.busy_ms == pytest.approx(reference.busy_ns(gpu, lo, hi) / 1e6, abs=1e-3)
    text = renderer("md").render([report_document(report, View())])
    assert "measured on the step's window" in text and "whichever step launched them" in text
    assert "counted in the step whose CPU side launched it" not in text
    assert re.search(r"^## Kernels \(top \d+ of \d+ by time\): per step$", text, re.MULTILINE)
    assert "ordered by total time in the whole trace" not in text


SYNC_CALLS = {
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaMemcpy",
    "cuCtxSynchronize",
    "cuStreamSynchronize",
    "cuEventSynchronize",
    "hipDeviceSynchronize",
    "hipStreamSynchronize",
    "hipEventSynchronize",
    "hipMemcpy",
    "hipMemcpyWithStream",
}


@pytest.mark.parametrize("path", trace_params())
def test_idle_after_syncs_is_at_most_the_time_they_blocked_the_host(path: Path) -> None:
    """Without a blocking call the host runs ahead by at most the time it was blocked in
    it: the GPU's idle time put on the syncs never exceeds their durations in the raw
    JSON (the Triton trace: a 17 µs sync before 13 s of host work)."""
    blocked_ns = sum(
        e.dur for e in reference.events(reference.read_exact(path)) if e.name in SYNC_CALLS
    )
    steps = report_of(path.name).analysis.steps
    after_sync_ns = sum(round(s.gpu.idle_after_sync_ms * 1e6) for s in steps if s.gpu)
    assert after_sync_ns <= blocked_ns + len(steps)  # 1 ns rounding a step


def test_a_short_sync_before_long_host_work_is_not_the_step_s_bound() -> None:
    path = gpu_trace("a100_triton_torch_compile")
    evs = reference.events(reference.read_exact(path))
    (sync,) = [e for e in evs if e.name == "cudaDeviceSynchronize"]
    (step,) = reference.step_windows(evs)
    assert sync.dur < 20_000 and step[2] - step[1] > 10**10  # 17 µs in a 13 s step
    report = report_of("a100_triton_torch_compile")
    assert "sync-in-step" not in {f.rule for f in report.findings}
    assert report.verdict is not None and report.verdict.bound == "host"
    assert "blocking" not in report.verdict.sentence
