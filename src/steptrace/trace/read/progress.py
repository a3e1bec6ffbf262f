"""A progress display on stderr for large traces, silent otherwise."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from steptrace.safe_text import visible

LARGE_TRACE_BYTES = 16 * 1024 * 1024


@contextmanager
def loading_progress(label: str, total_bytes: int, enabled: bool | None) -> Iterator[Stage]:
    """Yield a ``Stage`` that shows progress when enabled (default: large file, tty stderr)."""
    if enabled is None:
        enabled = shows_progress(total_bytes)
    if not enabled:
        yield Stage(None, total_bytes)
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

    label = visible(label)  # a file name is data: no terminal control, no rich markup
    columns = (TextColumn("{task.description}", markup=False), BarColumn(), DownloadColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(f"reading {label}", total=total_bytes)

        def show(step: str, advance: int) -> None:
            progress.update(task, description=f"{step} {label}", advance=advance)

        yield Stage(show, total_bytes)


def shows_progress(total_bytes: int) -> bool:
    """Whether loading a file of this size shows progress by default."""
    return total_bytes >= LARGE_TRACE_BYTES and sys.stderr.isatty()


class Stage:
    """Reports which step of loading is running and how many bytes were read."""

    def __init__(self, show: Callable[[str, int], None] | None, total_bytes: int) -> None:
        self._show = show
        self.total_bytes = total_bytes

    def read(self, nbytes: int) -> None:
        if self._show:
            self._show("reading", nbytes)

    def step(self, name: str) -> None:
        if self._show:
            self._show(name, 0)
