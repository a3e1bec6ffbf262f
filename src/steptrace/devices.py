"""The device a scenario names, the profiler activities it needs, and honest refusals."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch.profiler import ProfilerActivity, supported_activities

from steptrace.errors import CaptureError


def resolve(device: str | torch.device) -> torch.device:
    try:
        return torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise CaptureError(f"unknown device {device!r} ({exc})") from None


def wants_gpu(device: torch.device) -> bool:
    """CUDA, and ROCm builds which also call their device ``cuda``."""
    return device.type == "cuda"


def activities(device: torch.device) -> list[ProfilerActivity]:
    """CPU, plus GPU activity when the device is a GPU and it can really be collected."""
    if not wants_gpu(device):
        return [ProfilerActivity.CPU]
    if not torch.cuda.is_available():
        raise CaptureError(
            f"the scenario's device is {device} but torch {torch.__version__} sees no GPU: "
            "refusing to present a CPU-only trace as a GPU analysis"
        )
    if ProfilerActivity.CUDA not in supported_activities():
        raise CaptureError(
            f"GPU activity collection is unavailable in torch {torch.__version__} "
            "(no CUPTI/roctracer support): refusing to capture without it"
        )
    return [ProfilerActivity.CPU, ProfilerActivity.CUDA]


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (a step boundary), a no-op on the CPU."""
    if wants_gpu(device):
        torch.cuda.synchronize(device)


def to_device(batch: Any, device: torch.device, *, non_blocking: bool = False) -> Any:
    """Move tensors, and tuples, namedtuples, lists and mappings of them, to ``device``."""
    return each_tensor(batch, lambda t: t.to(device, non_blocking=non_blocking))


def pin(batch: Any) -> Any:
    """The batch in pinned (page-locked) host memory, whatever its structure."""
    return each_tensor(batch, lambda t: t.pin_memory())


def each_tensor(batch: Any, change: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """``batch`` with ``change`` applied to every tensor, the containers kept as they are."""
    if isinstance(batch, torch.Tensor):
        return change(batch)
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a namedtuple
        return type(batch)(*(each_tensor(b, change) for b in batch))
    if isinstance(batch, tuple | list):
        return type(batch)(each_tensor(b, change) for b in batch)
    if isinstance(batch, Mapping):  # dict, or a Mapping such as transformers' BatchEncoding
        changed = {k: each_tensor(v, change) for k, v in batch.items()}
        try:
            return type(batch)(changed)  # type: ignore[call-arg]
        except TypeError:
            return changed
    return batch


def device_name(device: torch.device) -> str:
    if wants_gpu(device):
        return str(torch.cuda.get_device_name(device))
    return "cpu"
