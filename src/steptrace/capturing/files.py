"""Output files that never overwrite: created exclusively, removed only if still ours."""

from __future__ import annotations

import os
from pathlib import Path

from steptrace.errors import CaptureError
from steptrace.scenario import sidecar_path


def reserve(path: Path) -> Path:
    """Create ``path`` empty and exclusively; an existing file is an error naming it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        raise CaptureError(f"{path} exists already: choose a new trace name") from None
    except OSError as exc:
        raise CaptureError(f"{path}: cannot create ({exc.strerror or exc})") from None
    return path


def reserve_trace(path: Path) -> tuple[Path, Path]:
    """Reserve a trace path and its scenario sidecar, or neither."""
    sidecar = sidecar_path(path)
    if sidecar.exists():
        raise CaptureError(f"{sidecar} exists already: choose a new trace name")
    reserve(path)
    try:
        reserve(sidecar)
    except BaseException:  # the sidecar's name taken, Ctrl-C
        release(path)
        raise
    return path, sidecar


def cycle_path(path: Path, cycle: int) -> Path:
    """The trace of the ``cycle``-th active window (0 is ``path`` itself)."""
    if cycle == 0:
        return path
    name = path.name
    suffix = next((s for s in (".json.gz", ".json") if name.endswith(s)), "")
    stem = name[: len(name) - len(suffix)]
    return path.with_name(f"{stem}-{cycle + 1}{suffix}")


def release(path: Path) -> None:
    """Remove a file this capture reserved (created exclusively: never the user's)."""
    path.unlink(missing_ok=True)
