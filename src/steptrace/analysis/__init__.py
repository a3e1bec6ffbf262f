"""Analyses: pure functions from an ``EventTable`` to frozen, typed results."""

from steptrace.analysis.analyze import TraceAnalysis, analyze, analyze_trace

__all__ = ["TraceAnalysis", "analyze", "analyze_trace"]
