"""The question and the step it is asked about, recorded with every trace.

A ``Scenario`` states, before any trace is read, what is being asked (``question``), what
the step contains (data read, host-to-device transfer, forward, backward, optimizer step;
for inference, whether model loading is inside), and the facts that make two windows
comparable: batch, shapes, precision, model mode, compilation, device, data origin, and
what the scenario simplifies. It is plain data (no torch needed): capture writes it into
the trace and beside it; analysis reads it back.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Literal

import msgspec

from steptrace.window import Window

WorkloadKind = Literal["training", "inference"]  # what the step runs
StepPart = Literal["data_read", "transfer", "forward", "backward", "optimizer_step"]

TRAINING_STEP: tuple[StepPart, ...] = (
    "data_read",
    "transfer",
    "forward",
    "backward",
    "optimizer_step",
)
INFERENCE_STEP: tuple[StepPart, ...] = ("transfer", "forward")
SCHEMA = "steptrace.scenario/2"  # /2: typed capture facts (window, observed)
# What each non-default profiler option costs: reports say it when one was on.
OPTION_COSTS = {
    "record_shapes": "records input shapes: adds overhead and keeps tensors alive longer",
    "profile_memory": "records every allocation: adds overhead",
    "with_stack": "records Python stacks: adds large overhead to every operator",
    "with_flops": "estimates FLOPs per operator: adds overhead",
}

TRACE_METADATA_KEY = "steptrace"
SIDECAR_SUFFIX = ".scenario.json"
NAME_BYTES = 255  # the longest file name most file systems take
SIDECAR_MAX_BYTES = 16 << 20  # a scenario is a few kilobytes: more is not one


class Scenario(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What is asked, and of which step. Only ``question`` is required."""

    question: str
    kind: WorkloadKind = "training"
    step: tuple[StepPart, ...] | None = None  # None: the kind's usual step (see ``parts``)
    model_load_in_step: bool = False  # inference: is loading the model part of a request?
    batch_size: int | None = None
    sequence_length: int | None = None  # tokens per sample, for tokens/s (None: not a sequence)
    input_shapes: tuple[tuple[int, ...], ...] = ()
    dtype: str = "float32"  # or "bfloat16", "float16", "autocast-bfloat16", ...
    model_mode: Literal["train", "eval"] | None = None  # None: train for training, eval else
    compile: str = "off"  # torch.compile: "off" or its mode ("default", "max-autotune", ...)
    device: str = "cpu"
    data_origin: str = "synthetic"  # synthetic, local files, streaming, ...
    simplifications: str = ""  # what this scenario leaves out of the real workload
    unit: Literal["ms/step", "samples/s"] = "ms/step"

    def __post_init__(self) -> None:
        if not self.question.strip():
            raise ValueError("a scenario needs a question, in the user's words")
        if self.kind == "inference" and {"backward", "optimizer_step"} & set(self.parts):
            raise ValueError("an inference step cannot contain backward or optimizer_step")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if self.sequence_length is not None and self.sequence_length < 1:
            raise ValueError("sequence_length must be at least 1")

    @property
    def parts(self) -> tuple[StepPart, ...]:
        """What the step contains."""
        if self.step is not None:
            return self.step
        return TRAINING_STEP if self.kind == "training" else INFERENCE_STEP

    @property
    def mode(self) -> Literal["train", "eval"]:
        """The model mode the scenario expects."""
        if self.model_mode is not None:
            return self.model_mode
        return "train" if self.kind == "training" else "eval"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data, defaults resolved so that readers need no code."""
        data: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(self))
        data["step"] = list(self.parts)
        data["model_mode"] = self.mode
        return data

    @classmethod
    def from_dict(cls, data: object) -> Scenario:
        """Validate plain data (from a sidecar or a trace) into a ``Scenario``."""
        return msgspec.convert(data, cls, strict=False)


class Throughput(msgspec.Struct, frozen=True, kw_only=True):
    """Samples (and tokens) per second at the median step time, from the scenario's batch."""

    ms_per_step: float  # the median wall time of the steps it is computed from
    batch_size: int
    samples_per_s: float
    sequence_length: int | None = None
    tokens_per_s: float | None = None  # None: the scenario gives no sequence length


def throughput(scenario: Scenario | None, ms_per_step: float) -> Throughput | None:
    """Throughput at ``ms_per_step``; None without a batch size or with a step of 0 ms."""
    if scenario is None or scenario.batch_size is None or ms_per_step <= 0:
        return None
    samples = scenario.batch_size / (ms_per_step / 1000)
    length = scenario.sequence_length
    return Throughput(
        ms_per_step=ms_per_step,
        batch_size=scenario.batch_size,
        samples_per_s=samples,
        sequence_length=length,
        tokens_per_s=samples * length if length is not None else None,
    )


class ObservedRun(msgspec.Struct, frozen=True, kw_only=True):
    """What the captured run really was, to set beside what the scenario declares."""

    batch_size: int | None = None
    input_shape: tuple[int, ...] | None = None
    parameter_dtype: str | None = None
    model_mode: str | None = None
    device: str | None = None


class MeasuredPeaks(msgspec.Struct, frozen=True, kw_only=True):
    """A device's roofs measured at capture: a matrix product and a copy, timed alone."""

    device: str  # what was measured ("cpu", with the threads torch used)
    matmul_dtype: str  # the product's dtype (float32)
    matmul_tflops: float  # the best of a few n x n products, 2n^3 FLOPs each
    copy_tbps: float  # the best of a few large copies: bytes read + written per second
    matmul_size: int  # n
    copy_bytes: int  # the size of the tensor copied


class ProfilerCost(msgspec.Struct, frozen=True, kw_only=True):
    """The profiler's cost measured as a comparison is: blocks of the same steps with the
    profiler recording and without it, interleaved, each pair of blocks one log-ratio of
    their median steps (``steptrace.paired``). Times are ms per step on the running clock
    (the wait for a CPU left out, ``steptrace.process.clocks``)."""

    ratio: float  # profiled / bare, the Hodges-Lehmann estimate
    ci: tuple[float, float]  # its confidence interval
    confidence: float
    block_steps: int  # steps per block
    order: tuple[str, ...]  # per pair of blocks: "PB" (profiled first) or "BP"
    profiled_ms: tuple[float, ...]  # every step, block after block
    bare_ms: tuple[float, ...]

    @property
    def detected(self) -> bool:
        """The whole CI beyond 1 ± 1%: a difference is called, as compare calls one."""
        return self.ci[0] > 1.01 or self.ci[1] < 0.99


class CpuFacts(msgspec.Struct, frozen=True, kw_only=True):
    """The CPU when the window began: torch's threads and what else ran beside them."""

    torch_threads: int  # torch.get_num_threads(): intra-op threads
    interop_threads: int  # torch.get_num_interop_threads()
    cores: int  # usable by the process (affinity, cgroup quota)
    others_running: int | None  # other processes' runnable tasks (median of a few samples)
    load_1min: float | None  # the 1-minute load average (all processes)

    @property
    def free_cores(self) -> int | None:
        """Cores other processes left free; None: not known."""
        if self.others_running is None:
            return None
        return max(self.cores - self.others_running, 0)


InventoryCategory = Literal["parameter", "gradient", "optimizer state", "batch"]


class InventoryBlock(msgspec.Struct, frozen=True, array_like=True):
    """A tensor's storage alive at a step's end, as the capture listed it."""

    category: InventoryCategory
    device: str  # "cpu", "cuda:0": as ``analysis.memory`` names devices
    addr: int  # its storage's data_ptr: the Addr of its allocation's [memory] event
    bytes: int


class StepInventory(msgspec.Struct, frozen=True):
    """The gradients and the batch alive at the end of ``ProfilerStep#step``."""

    step: int
    blocks: tuple[InventoryBlock, ...]


class Inventory(msgspec.Struct, frozen=True):
    """What a training capture's tensors are, by address (``capturing.inventory``): the
    parameters and the optimizer's state once, after the window (their storages stay put),
    and each active step's gradients and batch."""

    persistent: tuple[InventoryBlock, ...]
    steps: tuple[StepInventory, ...]


class CompileRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One torch.compile compile during a capture, from Dynamo's own record
    (``capturing.measured.compiles``): what the trace cannot say, its reason."""

    compile_id: str  # F/C, as in the trace's regions and annotations
    frame: str | None  # "function (file:line)"; None: a backward graph (AOTAutograd's)
    reason: str | None = None  # a recompile's failed guard(s); None: a first compile
    failed: str | None = None  # why the compile failed (the frame then ran eagerly)
    start_us: int | None = None  # epoch µs
    duration_us: int | None = None
    graph_breaks: int | None = None


class CaptureFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What a capture did and measured outside the profiler, stored beside its trace.

    Times are wall-clock ms measured by the capture, not by the profiler.
    """

    traces: tuple[str, ...] = ()  # one file per active window (``repeat``)
    sidecar: str | None = None
    window: Window | None = None  # the schedule and profiler options, as used
    torch_version: str | None = None
    gpu_requested: bool | None = None
    gpu_observed: bool | None = None
    cold_start_ms: tuple[float, ...] = ()  # first step(s), before the profiler started
    model_load_ms: float | None = None  # inference: loading, outside every request
    profiled_step_ms: tuple[float, ...] = ()  # active steps under the profiler
    active_steps_run: int | None = None  # active steps completed (planned: active x repeat)
    partial_step: int | None = None  # N of the ProfilerStep#N the profiler's stop cut short
    unprofiled_step_ms: tuple[float, ...] | None = None  # the same steps, no profiler
    overhead_ratio: float | None = None  # profiled / unprofiled (``overhead``'s ratio)
    overhead: ProfilerCost | None = None  # how it was measured: interleaved blocks, its CI
    flops_per_step: int | None = None
    achieved_tflops: float | None = None
    peak_tflops: float | None = None
    mfu: float | None = None
    peaks: MeasuredPeaks | None = None  # the CPU's roofs, measured once (record_shapes)
    inventory: Inventory | None = None  # training with profile_memory only; not in reports
    observed: ObservedRun | None = None
    cpu: CpuFacts | None = None  # torch's threads, the cores and the load; None: not recorded
    compiles: tuple[CompileRecord, ...] = ()  # torch.compile's compiles in the capture
    graph_break_reasons: tuple[str, ...] = ()  # the breaks Dynamo met in it, first lines
    loader_spans: str | None = None  # the folder of the DataLoader workers' files, if any
    warnings: tuple[str, ...] = ()


class ScenarioRecord(msgspec.Struct, frozen=True):
    """A scenario as stored with a trace, and what the capture measured around the window."""

    scenario: Scenario
    capture: CaptureFacts | None  # None when the capture's figures are not known
    source: str  # "sidecar" or "trace"


def sidecar_path(trace: Path) -> Path:
    """``run/trace.json.gz`` -> ``run/trace.scenario.json``."""
    return trace.with_name(sidecar_name(trace.name))


def sidecar_name(trace_name: str) -> str:
    """``trace.json.gz`` -> ``trace.scenario.json``; a name that would pass a file name's
    255 bytes keeps the first bytes of the trace's, and a digest of all of it."""
    stem = trace_name
    for suffix in (".json.gz", ".json", ".gz"):
        if trace_name.endswith(suffix):
            stem = trace_name[: -len(suffix)]
            break
    raw = os.fsencode(stem)
    if len(raw) + len(SIDECAR_SUFFIX) > NAME_BYTES:
        digest = hashlib.sha1(raw, usedforsecurity=False).hexdigest()[:12]
        kept = NAME_BYTES - len(SIDECAR_SUFFIX) - len(digest) - 1
        stem = f"{os.fsdecode(raw[:kept])}-{digest}"
    return f"{stem}{SIDECAR_SUFFIX}"


def record_payload(scenario: Scenario, capture: CaptureFacts | None) -> dict[str, Any]:
    """The JSON object written into the trace and into the sidecar."""
    facts = msgspec.to_builtins(capture) if capture is not None else None
    return {"schema": SCHEMA, "scenario": scenario.to_dict(), "capture": facts}


def read_sidecar(trace: Path) -> tuple[object | None, list[str]]:
    """The payload of the scenario file beside ``trace`` (None when there is none).

    The only I/O of the scenario: an unreadable file gives a warning, not an error.
    """
    path = sidecar_path(trace)
    try:
        if not path.is_file():
            return None, []
        if (size := path.stat().st_size) > SIDECAR_MAX_BYTES:
            return None, [
                f"scenario sidecar {path.name} holds {size} bytes, not a scenario; ignored"
            ]
        return json.loads(path.read_text(encoding="utf-8")), []
    except RecursionError:
        return None, [f"scenario sidecar {path.name} is nested too deeply; ignored"]
    except (OSError, ValueError) as exc:
        return None, [f"scenario sidecar {path.name} is unreadable ({exc}); ignored"]


def decode_record(
    sidecar: object | None, embedded: object | None, sidecar_name: str = "sidecar"
) -> tuple[ScenarioRecord | None, list[str]]:
    """The scenario record from the sidecar's payload, else from the trace's own metadata.

    Pure: returns the record (or None) and warnings about a payload that is unusable.
    """
    warnings: list[str] = []
    if sidecar is not None:
        try:
            return _record(sidecar, "sidecar"), warnings
        except (ValueError, TypeError, msgspec.ValidationError, RecursionError) as exc:
            warnings.append(f"scenario sidecar {sidecar_name} is unreadable ({exc}); ignored")
    if embedded is not None:
        try:
            return _record(embedded, "trace"), warnings
        except (ValueError, TypeError, msgspec.ValidationError, RecursionError) as exc:
            warnings.append(f"the trace's steptrace metadata is unreadable ({exc}); ignored")
    return None, warnings


def _record(payload: Any, source: str) -> ScenarioRecord:
    if isinstance(payload, str):  # some writers store metadata as a JSON string
        payload = json.loads(payload)
    if not isinstance(payload, dict) or "scenario" not in payload:
        raise ValueError("no 'scenario' object")
    capture = payload.get("capture")
    return ScenarioRecord(
        scenario=Scenario.from_dict(payload["scenario"]),
        # validated: a report must not trust what it did not write
        capture=msgspec.convert(capture, CaptureFacts, strict=False) if capture else None,
        source=source,
    )
