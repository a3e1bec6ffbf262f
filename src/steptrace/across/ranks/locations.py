"""Where rank traces are: local paths or fsspec URLs, and the traces a URL names.

Contract: ``is_url(text)`` tells a URL (``s3://``, ``gs://``, ``file://``, ``memory://``:
a scheme of two letters or more, so never a Windows drive) from a path.
``trace_urls(url)``: the URL itself when it names a ``.json`` or ``.json.gz`` file, else
the ``*.json``/``*.json.gz`` directly under it, sorted, scenario sidecars left out; a
one-line ``TraceError`` when there is none or it cannot be listed. Light to import (the
command line asks ``is_url`` before anything else); fsspec is imported only for URLs,
with a one-line ``TraceError`` when it, or the backend's package (s3fs, gcsfs), is missing.
"""

from __future__ import annotations

import re
from typing import Any

from steptrace.errors import TraceError

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")
_TRACE_SUFFIXES = (".json", ".json.gz")
_SIDECAR = ".scenario.json"
_NEEDS_FSSPEC = "reading URLs needs fsspec: pip install 'steptrace[dask]'"


def is_url(location: str) -> bool:
    return _URL.match(location) is not None


def trace_urls(url: str) -> list[str]:
    """The trace files a URL names (see the module's contract); ``TraceError`` if none."""
    if url.endswith(_TRACE_SUFFIXES):
        return [url]
    fsspec = fsspec_module(url)
    try:
        fs, root = fsspec.core.url_to_fs(url)
        names = [str(n) for n in fs.ls(root, detail=False)]
    except FileNotFoundError:
        raise TraceError(f"{url}: no such file or folder") from None
    except ImportError as error:
        raise TraceError(f"{url}: {error}") from None
    except (OSError, ValueError) as error:
        raise TraceError(f"{url}: cannot list ({error})") from None
    found = sorted(
        fs.unstrip_protocol(n)
        for n in names
        if n.endswith(_TRACE_SUFFIXES) and not n.endswith(_SIDECAR)
    )
    if not found:
        raise TraceError(f"{url}: holds no trace (*.json, *.json.gz)")
    return found


def fsspec_module(url: str) -> Any:
    """fsspec, imported now; a one-line ``TraceError`` naming ``url`` when it is missing."""
    try:
        import fsspec
    except ImportError:
        raise TraceError(f"{url}: {_NEEDS_FSSPEC}") from None
    return fsspec
