"""Capture (needs torch): a labelled torch.profiler window for training, inference, any loop.

``Capture`` is the window itself (``steptrace.capture`` for custom loops);
``profile_training`` and ``profile_inference`` run the usual loops inside one; a
``Window`` (``steptrace.window``, plain data) says which steps and options.
"""

from steptrace.capturing.handler import trace_handler
from steptrace.capturing.inference import profile_inference
from steptrace.capturing.result import CaptureResult
from steptrace.capturing.session import Capture
from steptrace.capturing.training import profile_training
from steptrace.capturing.workload import Workload, run_workload

capture = Capture  # the context manager for custom loops: steptrace.capture(scenario, out=...)

__all__ = [
    "Capture",
    "CaptureResult",
    "Workload",
    "capture",
    "profile_inference",
    "profile_training",
    "run_workload",
    "trace_handler",
]
