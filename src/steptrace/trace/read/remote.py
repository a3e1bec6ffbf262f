"""A trace at an fsspec URL (``s3://``, ``gs://``, ``file://``, ``memory://``...).

Contract: ``is_url(text)`` tells a URL (a scheme of two letters or more, so never a Windows
drive) from a path. ``open_url(url)`` opens it to be streamed as a local file is (read in
chunks, gunzipped when it is gzip, in bounded memory: ``load.read_trace``); the trace's
``info.url`` names it.
``read_sidecar_url`` is ``scenario.read_sidecar`` for the scenario file beside it. Errors
are one-line ``TraceError`` s that start with the URL. fsspec is imported only when a URL
is read, with a one-line ``TraceError`` when it, or the backend's package (s3fs, gcsfs),
is missing. Light to import: the command line asks ``is_url`` before anything else.
"""

from __future__ import annotations

import json
import re
from functools import partial
from typing import TYPE_CHECKING, Any

from steptrace.errors import TraceError

if TYPE_CHECKING:
    from steptrace.trace.read.stream import Opener

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")
_NEEDS_FSSPEC = "reading URLs needs fsspec: pip install 'steptrace[dask]'"


def is_url(location: str) -> bool:
    return _URL.match(location) is not None


def fsspec_module(url: str) -> Any:
    """fsspec, imported now; a one-line ``TraceError`` naming ``url`` when it is missing."""
    try:
        import fsspec
    except ImportError:
        raise TraceError(f"{url}: {_NEEDS_FSSPEC}") from None
    return fsspec


def open_url(url: str) -> Opener:
    """The trace file at ``url``, to be streamed as a local file is (``load.read_trace``:
    bounded memory, decoding processes for a large one); see the module's contract."""
    from steptrace.trace.read.stream import Opener

    fsspec = fsspec_module(url)
    try:
        fs, where = fsspec.core.url_to_fs(url)
        info = fs.info(where)
    except FileNotFoundError:
        raise TraceError(f"{url}: no such file") from None
    except ImportError as error:  # the backend's package: s3fs, gcsfs, ...
        raise TraceError(f"{url}: {error}") from None
    except (OSError, ValueError) as error:
        raise TraceError(f"{url}: cannot read ({error})") from None
    if info.get("type") == "directory":
        raise TraceError(f"{url}: a folder, not a trace file")
    if info.get("type") != "file":  # a named pipe would block the read, /dev/zero never end
        raise TraceError(f"{url}: not a regular file (a pipe or a device?)")
    # a backend's own errors while opening or reading are one line where they are read
    return Opener(url, int(info.get("size") or 0), partial(fs.open, where, "rb"))


def read_sidecar_url(url: str) -> tuple[object | None, list[str]]:
    """The payload of the scenario file beside the trace at ``url`` (None when there is
    none); one that cannot be read or decoded is a warning, as for a local file."""
    from steptrace.scenario import sidecar_name

    folder, _, name = url.rpartition("/")
    sidecar = sidecar_name(name)
    try:
        with fsspec_module(url).open(f"{folder}/{sidecar}", "rb") as handle:
            text = handle.read().decode("utf-8")
        return json.loads(text), []
    except FileNotFoundError:
        return None, []
    except RecursionError:
        return None, [f"scenario sidecar {sidecar} is nested too deeply; ignored"]
    except (ImportError, OSError, ValueError) as error:  # ValueError: not UTF-8, not JSON
        return None, [f"scenario sidecar {sidecar} is unreadable ({error}); ignored"]
