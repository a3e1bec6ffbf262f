"""Where rank traces are: local paths or fsspec URLs, and the traces a URL names.

Contract: ``trace_urls(url)`` (``s3://``, ``gs://``, ``file://``, ``memory://``...; see
``trace.read.remote``): the URL itself when it names a file (its loading checks it), else
the ``*.json``/``*.json.gz`` directly under it, sorted, scenario sidecars left out, and,
as in a local folder, skipped with the reason: entries that are not regular files or
cannot be read, saved steptrace reports and small JSON files without ``traceEvents``
(read from their first 64 KB); a one-line ``TraceError``
when none is left or the folder cannot be listed. fsspec is imported only for URLs, with a
one-line ``TraceError`` when it, or the backend's package (s3fs, gcsfs), is missing.
"""

from __future__ import annotations

import re
import zlib
from typing import Any

from steptrace.errors import TraceError
from steptrace.trace.read.remote import fsspec_module

_TRACE_SUFFIXES = (".json", ".json.gz")
_SIDECAR = ".scenario.json"
_PEEK_BYTES = 64 * 1024
# steptrace's JSON opens with its schema (a comparison's after its title); a trace may hold
# a steptrace schema too, but nested in its metadata, never as its first key.
REPORT_HEAD = re.compile(
    rb'\A\s*(\[\s*)?\{\s*("title"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*)?"schema"\s*:\s*"steptrace\.'
)


def trace_urls(url: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The trace files a URL names, and the files of its folder skipped with the reason
    (see the module's contract); ``TraceError`` if none is left."""
    fsspec = fsspec_module(url)
    try:
        fs, root = fsspec.core.url_to_fs(url)
        if fs.info(root).get("type") != "directory":
            return [url], []  # a file (its loading checks it is a regular one)
        names = sorted(
            str(n)
            for n in fs.ls(root, detail=False)
            if str(n).endswith(_TRACE_SUFFIXES) and not str(n).endswith(_SIDECAR)
        )
    except FileNotFoundError:
        raise TraceError(f"{url}: no such file or folder") from None
    except ImportError as error:
        raise TraceError(f"{url}: {error}") from None
    except (OSError, ValueError) as error:
        raise TraceError(f"{url}: cannot list ({error})") from None
    found, skipped = [], []
    for name in names:
        why = _not_a_trace(fs, name)
        if why:
            skipped.append((fs.unstrip_protocol(name), why))
        else:
            found.append(fs.unstrip_protocol(name))
    if not found:
        raise TraceError(f"{url}: holds no trace (*.json, *.json.gz)")
    return found, skipped


def _not_a_trace(fs: Any, name: str) -> str | None:
    """As for a local folder: not a regular file (a folder, a pipe, a broken link), a saved
    steptrace report, or a small JSON without ``traceEvents`` (``truth.json``), from the
    first bytes only."""
    try:
        kind = fs.info(name).get("type")
        if kind != "file":
            return "a folder, not a trace file" if kind == "directory" else "not a regular file"
        with fs.open(name, "rb") as handle:
            head = handle.read(_PEEK_BYTES + 1)
        if head.startswith(b"\x1f\x8b"):
            head = zlib.decompressobj(wbits=31).decompress(head, _PEEK_BYTES + 1)
    except (OSError, ValueError, EOFError, zlib.error) as error:
        return f"cannot read ({' '.join(str(error).split()) or type(error).__name__})"
    if REPORT_HEAD.match(head):
        return "a saved steptrace report, not a trace"
    if len(head) <= _PEEK_BYTES and b'"traceEvents"' not in head:
        return "not a trace (no traceEvents)"
    return None
