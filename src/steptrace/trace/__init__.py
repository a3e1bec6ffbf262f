"""Reading traces: files -> ``Trace`` (metadata + columnar ``EventTable``)."""

from steptrace.trace.kinds import Kind
from steptrace.trace.load import load_trace
from steptrace.trace.table import EventTable, Trace, TraceInfo

__all__ = ["EventTable", "Kind", "Trace", "TraceInfo", "load_trace"]
