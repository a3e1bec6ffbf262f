"""The profiling harness (needs torch): question-first capture of training, inference, any loop.

``steptrace.capture`` is ``Capture`` itself, the context manager for custom loops.
"""

from steptrace.harness.inference import profile_inference
from steptrace.harness.result import CaptureResult
from steptrace.harness.session import Capture
from steptrace.harness.training import profile_training
from steptrace.harness.workload import Workload

capture = Capture  # the context manager for custom loops: steptrace.capture(scenario, out=...)

__all__ = [
    "Capture",
    "CaptureResult",
    "Workload",
    "capture",
    "profile_inference",
    "profile_training",
]
