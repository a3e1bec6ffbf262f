"""Trace files in and out: the input is only read, the output is a new file or nothing.

Every problem is a one-line ``TraceError`` naming the file.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import msgspec

from steptrace.errors import TraceError
from steptrace.process import outputs
from steptrace.trace.read.budget import TextOverflow, quoteless_run, whole_limit
from steptrace.trace.read.stream import TextStream

_FIRST_CHARACTER = re.compile(rb"\S")


class _Shape(msgspec.Struct):
    """Just enough of a trace to recognise one; events are skipped, not built."""

    traceEvents: list[msgspec.Raw] | None = None  # noqa: N815 (the format's own key)


_OBJECT = msgspec.json.Decoder(_Shape)
_ARRAY = msgspec.json.Decoder(list[msgspec.Raw])


def check_paths(source: Path, target: Path | None) -> None:
    """The input exists and is a file; the output is neither the input nor a file already."""
    try:
        _check_paths(source, target)
    except OSError as exc:  # a name too long, a folder that cannot be read
        raise TraceError(f"{exc.filename or source}: cannot read ({exc.strerror or exc})") from None


def _check_paths(source: Path, target: Path | None) -> None:
    if not source.exists():
        raise TraceError(f"{source}: no such file")
    if source.is_dir():
        raise TraceError(f"{source}: is a folder, not a trace file")
    if target is None:
        return
    if target.resolve() == source.resolve():
        raise TraceError(f"{target}: is the input itself; scrub writes a new file")
    if target.exists() or target.is_symlink():
        raise TraceError(f"{target}: exists already; scrub never overwrites a file")


def read_trace(source: Path) -> bytes:
    """The trace's JSON text, gunzipped (several gzip members too), checked to be a trace.

    Read in chunks (regular files only: a named pipe or a device is refused), within the
    whole-text limit and without a string longer than any trace's (``budget``): refused as
    soon as either is passed, never held."""
    chunks, run = [], 0
    try:
        with TextStream(source, whole_limit()) as stream:
            for chunk in stream:
                run = quoteless_run(run, chunk)
                chunks.append(chunk)
    except TextOverflow as overflow:
        raise TraceError(f"{source}: {overflow}") from None
    data = b"".join(chunks)
    del chunks
    if not _FIRST_CHARACTER.search(data):
        raise TraceError(f"{source}: empty file")
    check_trace(data, str(source))
    return data


def check_trace(data: bytes, where: str) -> None:
    """Raise unless ``data`` is JSON holding a Chrome trace (``traceEvents``, or a list of
    event objects). msgspec checks the syntax of every skipped value too; JSON it refuses
    (``NaN``) is checked by the standard library."""
    try:
        if data.lstrip()[:1] == b"[":
            events = _ARRAY.decode(data)
            if not all(bytes(event)[:1] == b"{" for event in events):
                raise TraceError(f"{where}: not a torch.profiler trace (no traceEvents)")
        elif _OBJECT.decode(data).traceEvents is None:
            raise TraceError(f"{where}: not a torch.profiler trace (no traceEvents)")
    except (msgspec.ValidationError, msgspec.DecodeError):
        _check_with_json(data, where)
    except RecursionError:
        raise TraceError(f"{where}: JSON nested too deeply to be a trace") from None


def _check_with_json(data: bytes, where: str) -> None:
    try:
        doc: Any = json.loads(data)
    except ValueError as exc:
        message = " ".join(str(exc).split())[:200]
        raise TraceError(f"{where}: invalid or truncated JSON ({message})") from None
    except RecursionError:
        raise TraceError(f"{where}: JSON nested too deeply to be a trace") from None
    is_object = isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list)
    is_array = isinstance(doc, list) and all(isinstance(event, dict) for event in doc)
    if not (is_object or is_array):
        raise TraceError(f"{where}: not a torch.profiler trace (no traceEvents)")


def write_new(target: Path, data: bytes) -> None:
    """Create ``target`` (gzip when its name ends with ``.gz``; never replace a file),
    whole or not at all (``outputs``)."""
    if target.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6, mtime=0)
    try:
        outputs.write_new(target, data)
    except FileExistsError:
        raise TraceError(f"{target}: exists already; scrub never overwrites a file") from None
    except OSError as exc:
        raise TraceError(f"{target}: cannot write ({exc.strerror or exc})") from None
