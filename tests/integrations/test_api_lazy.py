"""``import steptrace`` never imports a framework (an integration module imports its own).

Lightning's own import pulls in parts of transformers, so which frameworks a single
integration module brings is not ours to assert.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

FRAMEWORKS = ("lightning", "pytorch_lightning", "transformers", "accelerate")


@pytest.mark.slow
def test_steptrace_and_its_integrations_package_import_no_framework() -> None:
    code = (
        "import sys, steptrace, steptrace.integrations, steptrace.cli, steptrace.capturing;"
        "steptrace.capturing.trace_handler;"  # the handler loads with torch, no framework
        f"found = {{m for m in {FRAMEWORKS!r} if m in sys.modules}};"
        "assert not found, found"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
