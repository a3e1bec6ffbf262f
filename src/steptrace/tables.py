"""The user's own tables for one analysis (``--kernel-kinds``, ``--peaks``, ``--critical-path``,
``--what-if``), in a module of their own: the command line builds them before it imports the
analysis, so that reading the trace starts beside those imports (``source.ReadAhead``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from steptrace.analysis.efficiency.hardware import DevicePeaks
    from steptrace.analysis.efficiency.kernel_kinds import KernelKinds


class Tables(NamedTuple):
    """The user's tables: kernel kinds and the device's peaks (None: the defaults); and
    whether to compute the critical path (``analysis.critical_path``, on demand), with
    the user's what-if targets (name, speedup)."""

    kinds: KernelKinds | None = None
    peaks: DevicePeaks | None = None
    critical_path: bool = False
    what_if: tuple[tuple[str, float], ...] = ()
