"""The closed loop: capture, analyze, and run each finding's controlled check for the user.

``investigate(workload, out=...)`` returns the ``Report`` with ``checks`` filled;
``CHECKS`` is the registry of each rule's check (``registry``).
"""

from steptrace.investigation.rule_checks import CHECKS
from steptrace.investigation.run import investigate, run_checks

__all__ = ["CHECKS", "investigate", "run_checks"]
