"""Build small synthetic Kineto traces whose answers are known by construction."""

from __future__ import annotations

from typing import Any

PID, TID = 100, 100


def cpu(
    name: str, ts: float, dur: float, cat: str = "cpu_op", tid: int = TID, **args: Any
) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": PID,
        "tid": tid,
        "ts": ts,
        "dur": dur,
        "args": args,
    }


def label(name: str, ts: float, dur: float, tid: int = TID) -> dict[str, Any]:
    return cpu(name, ts, dur, cat="user_annotation", tid=tid)


def step(number: int, ts: float, dur: float) -> dict[str, Any]:
    return label(f"ProfilerStep#{number}", ts, dur)


def launch(
    ts: float, dur: float, correlation: int, name: str = "cudaLaunchKernel"
) -> dict[str, Any]:
    return cpu(name, ts, dur, cat="cuda_runtime", correlation=correlation)


def gpu(
    cat: str, name: str, ts: float, dur: float, stream: int = 7, correlation: int = -1, **args: Any
) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": 0,
        "tid": stream,
        "ts": ts,
        "dur": dur,
        "args": {"device": 0, "stream": stream, "correlation": correlation, **args},
    }


def kernel(
    name: str, ts: float, dur: float, stream: int = 7, correlation: int = -1
) -> dict[str, Any]:
    return gpu("kernel", name, ts, dur, stream, correlation)


def document(events: list[dict[str, Any]], gpu_devices: bool = True) -> dict[str, Any]:
    devices = [{"id": 0, "name": "Test GPU", "computeMajor": 8, "computeMinor": 0}]
    return {
        "schemaVersion": 1,
        "deviceProperties": devices if gpu_devices else [],
        "traceEvents": events,
    }
