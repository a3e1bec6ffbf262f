"""The profiling harness (needs torch): question-first capture of training, inference, any loop.

``steptrace.capture`` (the function) lives here as ``steptrace.harness.capture``.
"""

from steptrace.harness.custom import capture
from steptrace.harness.inference import profile_inference
from steptrace.harness.result import CaptureResult
from steptrace.harness.session import Capture
from steptrace.harness.training import profile_training
from steptrace.harness.workload import Workload

__all__ = [
    "Capture",
    "CaptureResult",
    "Workload",
    "capture",
    "profile_inference",
    "profile_training",
]
