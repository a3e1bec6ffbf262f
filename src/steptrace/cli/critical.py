"""``--critical-path`` and ``--what-if NAME=FACTOR``: what bounds each step, on demand."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import click

_Command = TypeVar("_Command", bound=Callable[..., Any])


def critical_options(command: _Command) -> _Command:
    """The two options of the critical path (``analysis.critical_path``)."""
    command = click.option(
        "--what-if",
        "what_if",
        multiple=True,
        metavar="NAME=FACTOR",
        help="Predict the step with NAME (an operator, kernel or label; kind:gpu, kind:cpu) "
        "FACTOR times faster, on the critical path's graph (repeatable; implies "
        "--critical-path).",
    )(command)
    return click.option(
        "--critical-path/--no-critical-path",
        default=False,
        help="Also find what bounds each step: its critical path and what-if predictions "
        "(on by default in investigate).",
    )(command)


def parse_what_if(given: tuple[str, ...]) -> tuple[tuple[str, float], ...]:
    """``NAME=FACTOR`` pairs; a ``click.BadParameter`` names a malformed one."""
    found = []
    for text in given:
        name, equals, factor = text.rpartition("=")
        try:
            value = float(factor)
        except ValueError:
            value = math.nan
        if not equals or not name or not math.isfinite(value) or value < 1:
            raise click.BadParameter(
                f"{text!r}: expected NAME=FACTOR with a finite FACTOR of at least 1",
                param_hint="--what-if",
            )
        found.append((name, value))
    return tuple(found)
