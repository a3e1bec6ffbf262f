"""Command-line trace arguments -> the list of trace files they name."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from steptrace.errors import TraceError

TRACE_SUFFIXES = (".json", ".json.gz")
SIDECAR_SUFFIX = ".scenario.json"  # steptrace's own scenario files, beside their traces


def is_trace_name(path: Path) -> bool:
    return path.name.endswith(TRACE_SUFFIXES) and not path.name.endswith(SIDECAR_SUFFIX)


def trace_files(arguments: Iterable[Path]) -> list[Path]:
    """Expand folders into the traces they hold (sorted); files are taken as given."""
    files: list[Path] = []
    for argument in arguments:
        if argument.is_dir():
            found = sorted(p for p in argument.iterdir() if p.is_file() and is_trace_name(p))
            if not found:
                raise TraceError(f"{argument}: folder holds no trace (*.json, *.json.gz)")
            files += found
        elif argument.exists():
            files.append(argument)
        else:
            raise TraceError(f"{argument}: no such file or folder")
    return files
