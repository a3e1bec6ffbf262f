"""Analyses: pure functions from an ``EventTable`` to frozen, typed results; no I/O, no
findings. One folder per question (``time``, ``memory``, ``efficiency``, ``critical``,
``communication``, ``timeline``); here, the pipeline that runs them: ``context`` (one
loaded trace and what its figures share), ``registry`` (the figures, in order),
``compose`` (one after the other) and ``measure`` (a trace -> its ``TraceAnalysis``).
"""

from steptrace.analysis.measure import TraceAnalysis, measure

__all__ = ["TraceAnalysis", "measure"]
