"""steptrace: question-first performance analysis of PyTorch profiler traces.

>>> import steptrace
>>> result = steptrace.analyze("trace.json.gz")   # doctest: +SKIP
>>> result.summary.wall_ms.median                  # doctest: +SKIP
"""

from steptrace.analysis.analyze import TraceAnalysis, analyze, analyze_trace
from steptrace.errors import TraceError
from steptrace.trace.load import load_trace

__all__ = ["TraceAnalysis", "TraceError", "analyze", "analyze_trace", "load_trace"]
