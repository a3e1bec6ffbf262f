"""``steptrace investigate TARGET``: the workload loaded, investigated, its warnings said;
what the workload prints goes to stderr (``user_code``)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from steptrace.report.model import Report


def run(
    target: str,
    out: Path,
    *,
    checks: int,
    budget_s: float,
    say: Callable[[str], None],
    memory: bool = False,
    active: int | None = None,
) -> Report:
    """The report of ``target``'s workload with its checks; progress and warnings to ``say``;
    ``memory``: allocations recorded (memory per step, its findings and their checks);
    ``active``: the window's recorded steps (None: ``investigate``'s default)."""
    from steptrace.cli.targets import load_workload
    from steptrace.investigation import investigate
    from steptrace.investigation.run import default_window
    from steptrace.process.user_code import running_user_code

    with running_user_code("the investigation"), warnings.catch_warnings(record=True) as caught:
        workload = load_workload(target)
        window = default_window(workload.scenario, memory=memory)
        if active is not None:
            window = msgspec.structs.replace(window, active=active)
        warnings.simplefilter("always")
        report = investigate(
            workload, out=out, checks=checks, budget_s=budget_s, say=say, window=window
        )
    for message in dict.fromkeys(str(w.message) for w in caught):  # each once, in order
        say(f"warning: {message}")
    return report
