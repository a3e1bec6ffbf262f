"""A progress bar across the ranks of a job on stderr, on a terminal only.

Contract: ``ranks_progress(total, enabled)`` yields ``done(name)``, to be called once per
rank as it finishes (its file name is shown, escaped). Enabled by default when stderr is a
terminal and there is more than one rank; piped or redirected, nothing is written. The
display goes away when the ranks are done (``transient``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from steptrace.safe_text import visible

if TYPE_CHECKING:
    from rich.console import Console


@contextmanager
def ranks_progress(
    total: int, enabled: bool | None, console: Console | None = None
) -> Iterator[Callable[[str], None]]:
    """``done(name)`` per finished rank; a bar when enabled (default: a terminal)."""
    if enabled is None:
        enabled = total > 1 and sys.stderr.isatty()
    if not enabled:
        yield _nothing
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    shown = console or Console(stderr=True)
    with Progress(*columns, console=shown, transient=True) as progress:
        task = progress.add_task("analyzing ranks", total=total)

        def done(name: str) -> None:
            progress.update(task, description=f"analyzed {visible(name)}", advance=1)

        yield done


def _nothing(name: str) -> None:
    del name
