"""``operator_timing`` (dominant-op): one operator timed alone, on its recorded inputs, in
a subprocess, beside what the trace says of it.

``operator_script`` writes the script (random values, the recorded shapes and dtypes,
``torch.utils.benchmark``); this runs it with the same Python in a subprocess, within a
timeout, and reads the one machine-readable line it prints. A script that fails (no
overload accepts the inputs, an unknown operator, a timeout) or an operator the trace
cannot describe (not in it, shapes not recorded) is ``NotTestable`` with the reason.

Nothing here imports torch (the subprocess does); ``OperatorTiming`` itself is defined in
``steptrace.validate.results``, which a report imports without torch.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from steptrace.errors import NotTestable, TraceError
from steptrace.validate.checks.script import MARKER, operator_script
from steptrace.validate.results import OperatorTiming

if TYPE_CHECKING:
    from steptrace.analysis.measure import TraceAnalysis


def operator_timing(
    analysis: TraceAnalysis,
    operator: str,
    *,
    device: str = "cpu",
    timeout_s: float,
    source: str | None = None,
) -> OperatorTiming:
    """Run ``operator_script(analysis, operator)`` in a subprocess and read its timing;
    ``source``: the trace the script names (default: the analysis's)."""
    try:
        script = operator_script(analysis, operator, device=device, source=source)
    except TraceError as error:
        raise NotTestable(str(error), _instead(operator)) from None
    found = next(o for o in analysis.operators if o.name == operator)  # the script found it
    median_s, iqr_s, runs = _run(script, operator, timeout_s)
    steps = len(analysis.steps)
    return OperatorTiming(
        operator=operator,
        device=device,
        median_ms=1000 * median_s,
        iqr_ms=1000 * iqr_s,
        runs=runs,
        trace_self_ms_per_call=found.self_ms / found.calls if found.calls else 0.0,
        trace_calls_per_step=found.calls / steps if steps else None,
        script=script,
    )


def _run(script: str, operator: str, timeout_s: float) -> tuple[float, float, int]:
    with tempfile.TemporaryDirectory(prefix="steptrace-op-") as folder:
        path = Path(folder) / "operator_timing.py"
        path.write_text(script, encoding="utf-8")
        try:
            done = subprocess.run(
                [sys.executable, str(path)],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
                cwd=folder,
            )
        except subprocess.TimeoutExpired:
            raise NotTestable(
                f"timing {operator} alone took longer than {timeout_s:g} s", _instead(operator)
            ) from None
    if done.returncode != 0:
        raise NotTestable(
            f"the script timing {operator} failed (exit {done.returncode}): "
            f"{_last_line(done.stderr)}",
            _instead(operator),
        )
    return _timing(done.stdout, operator)


def _timing(stdout: str, operator: str) -> tuple[float, float, int]:
    """(median s, IQR s, runs) from the script's machine-readable line."""
    lines = [line for line in stdout.splitlines() if line.startswith(MARKER)]
    try:
        timing = json.loads(lines[-1][len(MARKER) :])
        median, iqr, runs = float(timing["median_s"]), float(timing["iqr_s"]), int(timing["runs"])
    except (IndexError, ValueError, KeyError, TypeError):
        raise NotTestable(
            f"the script timing {operator} printed no timing", _instead(operator)
        ) from None
    if not median > 0:
        raise NotTestable(f"the script timed {operator} at {median} s", _instead(operator))
    return median, iqr, runs


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join(lines[-1].split())[:300] if lines else "no message"


def _instead(operator: str) -> str:
    return (
        f"write the script with steptrace.validate.operator_script(analysis, {operator!r}), "
        "check its inputs against the operator's signature, and run it by hand"
    )
