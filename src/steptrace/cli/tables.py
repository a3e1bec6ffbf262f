"""``--peaks FILE`` and ``--kernel-kinds FILE``: the user's own tables, read once (the
analysis modules that decode them are imported only then).

Each file is JSON (docs/analyze.md says what it holds); one that cannot be read or does not
hold such a table is a one-line ``TraceError`` naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from steptrace.errors import TraceError

if TYPE_CHECKING:
    from steptrace.analysis.efficiency.hardware import DevicePeaks
    from steptrace.analysis.efficiency.kernel_kinds import KernelKinds

_Command = TypeVar("_Command", bound=Callable[..., Any])
_FILE = click.Path(path_type=Path)


def table_options(command: _Command) -> _Command:
    """``--peaks`` and ``--kernel-kinds``."""
    command = click.option(
        "--kernel-kinds",
        "kinds_file",
        type=_FILE,
        metavar="FILE",
        help='Kernel name patterns read before the built-in ones: {"GEMM": ["regex", ...]}.',
    )(command)
    return click.option(
        "--peaks",
        "peaks_file",
        type=_FILE,
        metavar="FILE",
        help="The device's measured peaks for the roofline (JSON; docs/analyze.md).",
    )(command)


def read_peaks(path: Path | None) -> DevicePeaks | None:
    if path is None:
        return None
    from steptrace.analysis.efficiency.hardware import peaks_from_json

    return peaks_from_json(_read(path), str(path))


def read_kinds(path: Path | None) -> KernelKinds | None:
    if path is None:
        return None
    from steptrace.analysis.efficiency.kernel_kinds import kinds_from_json

    return kinds_from_json(_read(path), str(path))


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise TraceError(f"{path}: cannot be read ({error.strerror or error})") from None
