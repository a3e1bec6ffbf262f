"""Reading traces: files -> ``Trace`` (metadata + columnar ``EventTable``).

``stream`` reads and gunzips a file in chunks on a thread, ``source`` a small file whole
(both standard library and isal only, so the command line starts reading before numpy is
imported), ``split`` cuts the text between events and ``decode`` types them, ``columns``
turns them into numpy columns (``parallel``: in worker processes, for a large file),
``load`` puts them together into a ``table.Trace``. The names below
are imported on first use, for the same reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steptrace.lazy import lazy_names

if TYPE_CHECKING:
    from steptrace.trace.kinds import Kind
    from steptrace.trace.load import load_trace
    from steptrace.trace.table import EventTable, Trace, TraceInfo

__all__ = ["EventTable", "Kind", "Trace", "TraceInfo", "load_trace"]
if not TYPE_CHECKING:  # so that type checkers still reject names that do not exist
    __getattr__, __dir__ = lazy_names(
        __name__,
        {
            "Kind": "steptrace.trace.kinds",
            "load_trace": "steptrace.trace.load",
            **dict.fromkeys(("EventTable", "Trace", "TraceInfo"), "steptrace.trace.table"),
        },
    )
