"""``capture``: the profiling window for loops steptrace does not drive.

with steptrace.harness(scenario, out="run/trace.json") as window:
    for batch in loader:
        with window.phase("read_batch"):
            ...
        window.step()
        if window.done:
            break
print(window.result)
"""

from __future__ import annotations

from pathlib import Path

from steptrace.harness.session import Capture
from steptrace.scenario import Scenario


def capture(
    scenario: Scenario,
    *,
    out: str | Path,
    wait: int = 1,
    warmup: int = 1,
    active: int = 2,
    repeat: int = 1,
    record_shapes: bool = False,
    profile_memory: bool = False,
    with_stack: bool = False,
) -> Capture:
    """A ``Capture`` for a custom loop (Lightning, Hugging Face, hand-written)."""
    return Capture(
        scenario, out=out, wait=wait, warmup=warmup, active=active, repeat=repeat,
        record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
    )  # fmt: skip
