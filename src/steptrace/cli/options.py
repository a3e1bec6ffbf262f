"""The command line's shared options: each defined once, used by every command that takes it."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from steptrace.report.formats.renderers import formats

_Command = TypeVar("_Command", bound=Callable[..., Any])
FILE = click.Path(path_type=Path)


class FiniteRange(click.FloatRange):
    """A number in a range, never ``nan`` or ``inf`` (which click's range lets through)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def switch(name: str, text: str, *parameter: str) -> Callable[[_Command], _Command]:
    """An off-by-default ``--name/--no-name`` flag (``parameter``: another name for it)."""
    flag = f"{name}/--no-{name.removeprefix('--')}"
    return click.option(flag, *parameter, default=False, help=text)


def format_option(command: _Command) -> _Command:
    """``--format``: every format of the renderer registry."""
    return click.option(
        "--format",
        "-f",
        "output_format",
        type=click.Choice(formats()),
        default="text",
        show_default=True,
        help="Output format (text: the terminal).",
    )(command)


def report_options(command: _Command) -> _Command:
    """``--format``, ``--top``, ``--findings-only`` and ``--totals``, shared by analyze and
    profile."""
    for option in reversed(
        (
            format_option,
            click.option(
                "--top",
                type=click.IntRange(min=1),
                default=15,
                show_default=True,
                help="Operators and kernels to list.",
            ),
            switch("--findings-only", "Only the question and the findings table."),
            switch(
                "--totals",
                "Operator and kernel tables: totals over the whole trace (default: per step).",
            ),
        )
    ):
        command = option(command)
    return command


def count(name: str, default: int, minimum: int, text: str) -> Callable[[_Command], _Command]:
    return click.option(
        name, type=click.IntRange(min=minimum), default=default, show_default=True, help=text
    )


# The options of a ``steptrace.Window``, each once: (parameter, option).
_WINDOW_OPTIONS = (
    ("wait", count("--wait", 1, 0, "Steps skipped before warm-up.")),
    ("warmup", count("--warmup", 1, 0, "Profiler warm-up steps.")),
    ("active", count("--active", 2, 1, "Recorded steps.")),
    ("repeat", count("--repeat", 1, 1, "Active windows.")),
    ("cold_steps", count("--cold-steps", 1, 0, "First steps timed apart, before the profiler.")),
    ("measure_overhead", switch("--measure-overhead", "Training: time the steps unprofiled too.")),
    ("count_flops", switch("--flops", "Training: FLOPs per step, MFU when known.", "count_flops")),
    ("record_shapes", switch("--record-shapes", "Record input shapes (costly).")),
    (
        "profile_memory",
        click.option(
            "--memory",
            "--profile-memory",
            "profile_memory",
            is_flag=True,
            default=False,
            help="Record allocations: memory per step and its findings (adds overhead).",
        ),
    ),
    ("with_stack", switch("--with-stack", "Record Python stacks (costly).")),
)


def window_options(command: Callable[..., None]) -> Callable[..., None]:
    """The window options, handed to ``command`` as one ``window`` value."""

    @functools.wraps(command)
    def run(**options: Any) -> None:
        from steptrace.window import Window

        fields = {name: options.pop(name) for name, _ in _WINDOW_OPTIONS}
        command(window=Window(**fields), **options)

    for _, option in reversed(_WINDOW_OPTIONS):
        run = option(run)
    return run


def ranks_options(command: _Command) -> _Command:
    """``--jobs`` and ``--scheduler``: where the ranks of a job are measured."""
    for option in reversed(
        (
            click.option(
                "--jobs",
                "-j",
                type=click.IntRange(min=1),
                default=None,
                help="One job's traces: ranks measured at once, each in its own process "
                "(default: the cores; 1: in this process; with --scheduler local: workers). "
                "One large trace: the processes that decode it.",
            ),
            click.option(
                "--scheduler",
                envvar="STEPTRACE_SCHEDULER",
                metavar="ADDRESS",
                help="One job's traces: measure the ranks on a Dask cluster, tcp://HOST:8786, "
                "or 'local' for a LocalCluster (env STEPTRACE_SCHEDULER; steptrace[dask]).",
            ),
        )
    ):
        command = option(command)
    return command
