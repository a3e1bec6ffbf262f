"""``profile_kwargs``: Accelerate's ``ProfileKwargs`` for a steptrace window.

The recipe:

    from accelerate import Accelerator
    from steptrace.integrations.accelerate import profile_kwargs

    accelerator = Accelerator(kwargs_handlers=[profile_kwargs(scenario, "traces")])
    with accelerator.profile() as prof:
        for batch in loader:          # at least wait + warmup + active batches
            train_step(batch)
            prof.step()               # one call per step: the step boundary

The schedule is the window's (``steptrace.Window(cold_steps=0)`` by default: wait 1,
warm-up 1, active 2, ``repeat`` 1, so that one window is written, not Accelerate's endless
cycles whose last, partial one is all its own export keeps), its profiler options are the
window's, the activities the scenario's device's, and ``on_trace_ready`` is
``steptrace.capturing.trace_handler(out, scenario=...)``: each process writes
``<out>/rank<R>.<time_ns>.pt.trace.json.gz`` with the scenario embedded, and its sidecar
(R: Accelerate's process index). ``output_trace_dir`` is left unset: Accelerate's own export
would write the same window again, without the scenario.
"""

from __future__ import annotations

from pathlib import Path

from accelerate import PartialState
from accelerate.utils import ProfileKwargs

from steptrace.capturing.handler import trace_handler
from steptrace.scenario import Scenario
from steptrace.window import Window


def profile_kwargs(
    scenario: Scenario, out: str | Path, *, window: Window | None = None
) -> ProfileKwargs:
    """The ``ProfileKwargs`` with which ``accelerator.profile()`` writes steptrace traces."""
    window = window or Window(cold_steps=0)
    gpu = scenario.device.startswith(("cuda", "gpu"))
    return ProfileKwargs(
        activities=["cpu", "cuda"] if gpu else ["cpu"],
        schedule_option={
            "wait": window.wait,
            "warmup": window.warmup,
            "active": window.active,
            "repeat": window.repeat,
        },
        on_trace_ready=trace_handler(
            out, scenario=scenario, worker_name=f"rank{PartialState().process_index}"
        ),
        **window.options,
    )
