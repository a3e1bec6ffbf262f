"""Command-line trace arguments -> the list of trace files they name.

A file named on the command line is taken as given (loading it says what is wrong). In a
folder, steptrace's own scenario sidecars are left out, and so are JSON files that are
not traces: a saved steptrace report (its ``schema`` first), or a file whose whole text
holds no ``traceEvents`` (``truth.json``, notes). Those are returned as skipped, with why.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterable
from pathlib import Path

from steptrace.errors import TraceError

TRACE_SUFFIXES = (".json", ".json.gz")
SIDECAR_SUFFIX = ".scenario.json"  # steptrace's own scenario files, beside their traces
_PEEK_BYTES = 64 * 1024
_REPORT = re.compile(rb'\A\s*(\[\s*)?\{\s*"schema"\s*:\s*"steptrace\.')


def is_trace_name(path: Path) -> bool:
    return path.name.endswith(TRACE_SUFFIXES) and not path.name.endswith(SIDECAR_SUFFIX)


def trace_files(arguments: Iterable[Path]) -> list[Path]:
    """Expand folders into the traces they hold (sorted); files are taken as given."""
    return trace_inputs(arguments)[0]


def trace_inputs(arguments: Iterable[Path]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The trace files the arguments name, and the folder files skipped with the reason."""
    files: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for argument in arguments:
        if argument.is_dir():
            found = sorted(p for p in argument.iterdir() if p.is_file() and is_trace_name(p))
            for path in found:
                why = not_a_trace(path)
                if why:
                    skipped.append((path, why))
                else:
                    files.append(path)
            if not found or all(p in dict(skipped) for p in found):
                raise TraceError(f"{argument}: folder holds no trace (*.json, *.json.gz)")
        elif argument.exists():
            files.append(argument)
        else:
            raise TraceError(f"{argument}: no such file or folder")
    return files, skipped


def not_a_trace(path: Path) -> str | None:
    """Why a JSON file in a folder is not a trace, from its first bytes; None: it may be one."""
    head, whole = _head(path)
    if _REPORT.match(head):
        return "a saved steptrace report, not a trace"
    if whole and b'"traceEvents"' not in head:
        return "not a trace (no traceEvents)"
    return None


def _head(path: Path) -> tuple[bytes, bool]:
    """The first bytes, gunzipped, and whether they are the whole file; b"" when unreadable
    (loading the file then says why)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(_PEEK_BYTES + 1)
            if head.startswith(b"\x1f\x8b"):
                handle.seek(0)
                with gzip.GzipFile(fileobj=handle) as unzipped:
                    head = unzipped.read(_PEEK_BYTES + 1)
    except (OSError, EOFError, zlib.error):
        return b"", False
    return head[:_PEEK_BYTES], len(head) <= _PEEK_BYTES
