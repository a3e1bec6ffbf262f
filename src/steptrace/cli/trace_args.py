"""Command-line trace arguments -> the list of trace files they name.

steptrace's own files are never analyzed as traces, whether named or found in a folder:
scenario sidecars (``*.scenario.json``) and what steptrace writes (``report.json``,
``ranks.json``, ``comparisons.json``, any JSON whose top-level object, or first list item,
carries a ``steptrace.*`` schema). Named on the command line they are returned as skipped,
with why (the command line notes each on stderr); in a folder sidecars are left out
silently, as they always were. In a folder, JSON files that are not traces are skipped too
(a file whose whole text holds no ``traceEvents``: ``truth.json``, notes); any other file
named on the command line is taken as given (loading it says what is wrong). Arguments
that leave no trace at all are one ``TraceError``.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterable
from pathlib import Path

from steptrace.across.ranks.reading.locations import REPORT_HEAD as _REPORT
from steptrace.errors import TraceError
from steptrace.trace.read.remote import is_url

TRACE_SUFFIXES = (".json", ".json.gz")
SIDECAR_SUFFIX = ".scenario.json"  # steptrace's own scenario files, beside their traces
OUTPUT_NAMES = frozenset({"report.json", "ranks.json", "comparisons.json"})  # the demo's
_PEEK_BYTES = 64 * 1024


def split_urls(arguments: Iterable[str]) -> tuple[list[Path], list[str]]:
    """The arguments that are local paths, and those that are URLs (``s3://...``)."""
    given = list(arguments)
    return [Path(a) for a in given if not is_url(a)], [a for a in given if is_url(a)]


def url_inputs(urls: Iterable[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """The trace files the URLs name (a folder's traces, sorted: ``trace_urls``), and the
    folder files skipped with the reason."""
    from steptrace.across.ranks.reading.locations import trace_urls  # fsspec only for URLs

    found: list[str] = []
    skipped: list[tuple[str, str]] = []
    for url in urls:
        traces, left = trace_urls(url)
        found += traces
        skipped += left
    return found, skipped


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
        try:
            _add_argument(argument, files, skipped)
        except OSError as exc:  # a name too long, a folder that cannot be listed: the input's
            raise TraceError(f"{argument}: cannot read ({exc.strerror or exc})") from None
    if not files:
        named = ", ".join(str(p) for p, _ in skipped[:3]) + (", ..." if len(skipped) > 3 else "")
        raise TraceError(f"{named}: steptrace's own files, no trace among them")
    return files, skipped


def _add_argument(argument: Path, files: list[Path], skipped: list[tuple[Path, str]]) -> None:
    """The traces one argument names, added to ``files`` (or ``skipped``, with why)."""
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
        why = own_file(argument)
        if why:
            skipped.append((argument, why))
        else:
            files.append(argument)
    else:
        raise TraceError(f"{argument}: no such file or folder")


def own_file(path: Path) -> str | None:
    """Why a file named on the command line is one of steptrace's own, not a trace."""
    if path.name.endswith(SIDECAR_SUFFIX):
        return "a steptrace scenario sidecar (read with its trace)"
    if not path.is_file():  # a pipe or a device: never read here (loading refuses it)
        return None
    head, _ = _head(path)
    if _REPORT.match(head):
        return "a file steptrace wrote (a report, not a trace)"
    if path.name in OUTPUT_NAMES and b'"traceEvents"' not in head:
        return f"a file steptrace writes ({path.name}), not a trace"
    return None


def not_a_trace(path: Path) -> str | None:
    """Why a JSON file in a folder is not a trace, from its first bytes; None: it may be one."""
    head, whole = _head(path)
    if _REPORT.match(head):
        return "a saved steptrace report, not a trace"
    if path.name in OUTPUT_NAMES and b'"traceEvents"' not in head:
        return f"a file steptrace writes ({path.name}), not a trace"
    if whole and b'"traceEvents"' not in head and _is_json(head):
        return "not a trace (no traceEvents)"
    return None  # a trace, or an empty or damaged file: loading says what is wrong


def _is_json(text: bytes) -> bool:
    """Whether ``text`` is a whole JSON document (not empty, not cut short)."""
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


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
