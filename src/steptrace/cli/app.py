"""The ``steptrace`` command group and its entry point: usage errors in one line, Ctrl-C as
exit 130, the exit code as Python's own."""

from __future__ import annotations

import errno
import io
import os
import sys
from collections.abc import Iterator, MutableMapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import click

from steptrace.cli import printing
from steptrace.process import ctrl_c
from steptrace.safe_text import visible


class _Commands(click.Group):
    """Usage errors are one line on stderr with exit code 2, like every steptrace error."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            status = super().main(args, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as error:  # the bare command: its help
            error.show()
            sys.exit(error.exit_code)
        except click.ClickException as error:
            context = getattr(error, "ctx", None)
            command = context.command_path if context is not None else self.name
            printing.fail(f"{error.format_message()} (see {command} --help)", error.exit_code)
        except click.Abort:
            printing.fail("aborted", 130)  # the shell's code for Ctrl-C, not a failed run's
        except MemoryError:  # what no limit foresaw (an address-space limit met elsewhere)
            printing.fail("out of memory: the input is too large for the memory available here", 2)
        except OSError as error:  # the output could not be written (a full disk, ...)
            place = f"{error.filename}: " if error.filename else ""
            printing.fail(f"{place}{error.strerror or error}", 1)
        sys.exit(status if isinstance(status, int) else 0)


@click.group(
    "steptrace",
    cls=_Commands,
    context_settings={"help_option_names": ["-h", "--help"]},
    no_args_is_help=True,
)
@click.version_option(
    package_name="steptrace", prog_name="steptrace", message="%(prog)s %(version)s"
)
def app() -> None:
    """steptrace: question-first analysis of PyTorch profiler traces, on the timeline."""


def without_huge_pages(environ: MutableMapping[str, str]) -> None:
    """numpy not to ask for transparent huge pages, unless ``environ`` says otherwise (see
    ``main``); read by numpy when it is first imported."""
    environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")


@contextmanager
def one_blas_thread(environ: MutableMapping[str, str]) -> Iterator[None]:
    """numpy's BLAS (OpenBLAS) to start no thread of its own in the block, unless
    ``environ`` says otherwise: read when numpy is first imported, and let go when the
    block ends. For the commands that only read traces (``analyze``, ``diff``), which
    never multiply matrices: loaded with a thread per core, OpenBLAS starts them at once,
    and each spins for about a tenth of a second before it sleeps, a core taken from the
    imports, the reading and the decoding on a 2-core machine (numpy's typing stubs took
    33 ms instead of 2 beside it). Not for the commands that run the user's code
    (``profile``, ``investigate``, ``compare``, ``demo``): their BLAS is the user's."""
    added = "OPENBLAS_NUM_THREADS" not in environ
    if added:
        environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        if added:
            environ.pop("OPENBLAS_NUM_THREADS", None)


def main() -> NoReturn:
    """Console-script entry point.

    Without torch loaded, the process ends without tearing the interpreter's objects down
    one by one (as mypy does): after a large trace that took 20 ms, a twentieth of the
    analysis. Commands that ran torch exit normally, so that its exit handlers run.

    numpy is told not to ask for transparent huge pages (``NUMPY_MADVISE_HUGEPAGE=0``,
    unless the caller set it), before anything imports it: where the kernel compacts
    memory to serve such requests (``defrag`` set to ``madvise``, the usual default),
    first touches of large arrays stall: on this project's 2-core machine the 1.7 GB
    replica took 7.0 s with them and 6.5 s without (``benchmarks/scale_one_trace.py``).
    """
    ctrl_c.take_over()  # from here a Ctrl-C unwinds, and click says it in one line
    without_huge_pages(os.environ)  # inherited by the worker processes
    _replace_closed_streams()
    try:
        app(prog_name="steptrace")
        status: object = 0
    except SystemExit as done:
        status = done.code
    ctrl_c.settle()
    code = ctrl_c.exit_code(_exit_code(status))
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # the reader went away (``| head``), a full disk
            code = code or 1
    ctrl_c.leave(code)  # torch's exit handlers run, if it was loaded


def _replace_closed_streams() -> None:
    """stdout closed before the start: writing the report fails in one line (exit 1);
    stderr closed: its lines go nowhere."""
    if sys.stdout is None:
        sys.stdout = _ClosedOutput()
    if sys.stderr is None:
        sys.stderr = Path(os.devnull).open("w")  # noqa: SIM115 (open until the exit)


class _ClosedOutput(io.TextIOBase):
    """stdout closed by the caller (``>&-``): nothing written there can arrive."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "stdout is closed: the report could not be written")


def _exit_code(status: object) -> int:
    """As Python's own exit: None is 0, an int itself, anything else printed and 1."""
    if status is None or isinstance(status, int):
        return status or 0
    print(visible(str(status)), file=sys.stderr)
    return 1
