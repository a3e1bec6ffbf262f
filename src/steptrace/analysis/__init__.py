"""Analyses: pure functions from an ``EventTable`` to frozen, typed results.

One module per figure (steps, phases, gpu, idle, cpu, links, timeline, operators,
kernels, copies); ``measure`` composes them into a ``TraceAnalysis``. No I/O, no findings.
"""

from steptrace.analysis.measure import TraceAnalysis, measure

__all__ = ["TraceAnalysis", "measure"]
