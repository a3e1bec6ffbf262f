"""Ctrl-C in the ``steptrace`` command: exit code 130 and one line, at any time.

- ``guard_start()`` runs first thing when ``steptrace`` is imported. In the command's own
  process (its console script is ``__main__``), a Ctrl-C until ``cli.main`` takes over
  (the imports, some 40 ms) ends the process at once with the line, not an import's
  traceback; anywhere else (a program that imports steptrace) nothing changes.
- ``take_over()``, from ``main``: a Ctrl-C raises ``KeyboardInterrupt``, which unwinds
  (partial files removed, workers ended) and is said once by the command line; it is also
  remembered, so that one Python swallows (raised inside a ``__del__``: not reported
  either) still ends in 130, and ``check()`` raises it again between phases.
- ``settle()``, once the command is done: a Ctrl-C is only remembered, and the exit (its
  handlers, torch's included) ends in 130 with the line (``exit_code``, ``leave``).

A Ctrl-C before the interpreter itself has started kills the process by the signal (the
shell's 130), with nothing printed.
"""

from __future__ import annotations

import os
import signal
import sys

TYPE_CHECKING = False  # typing itself takes milliseconds to import: here, none to spare
if TYPE_CHECKING:
    from types import FrameType
    from typing import Any, NoReturn

ABORTED = b"\nsteptrace: error: aborted\n"  # the blank line closes the terminal's ^C
COMMAND = "steptrace"


class _State:
    interrupted = False  # a Ctrl-C came
    said = False  # its line was written
    code: int | None = None  # what ``leave`` was given


_STATE = _State()


def guard_start() -> None:
    """In the command's own process, Ctrl-C ends it at once (see the module's docstring)."""
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None) or ""
    ours = script.rsplit(os.sep, 1)[-1] == COMMAND
    if ours and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _aborted)


def take_over() -> None:
    """A Ctrl-C raises ``KeyboardInterrupt`` and is remembered (unless SIGINT is ignored)."""
    if signal.getsignal(signal.SIGINT) in (_aborted, signal.default_int_handler):
        signal.signal(signal.SIGINT, _raised)
        import atexit

        atexit.register(_last)  # registered before torch's: runs after them
        sys.unraisablehook = _unraisable


def settle() -> None:
    """The command is done: a Ctrl-C is only remembered from now on."""
    if signal.getsignal(signal.SIGINT) is _raised:
        signal.signal(signal.SIGINT, _remembered)


def interrupted() -> bool:
    """Whether a Ctrl-C came (an error on its way up then is the interruption's)."""
    return _STATE.interrupted


def check() -> None:
    """Raise ``KeyboardInterrupt`` when a Ctrl-C came while the command runs and did not
    go up: code on its way swallowed it (a user's ``except KeyboardInterrupt``, a
    ``__del__``) or turned it into another error. Called between the command's phases."""
    if _STATE.interrupted and signal.getsignal(signal.SIGINT) is _raised:
        raise KeyboardInterrupt


def exit_code(code: int) -> int:
    """130, with the line said once, when a Ctrl-C came; else ``code``."""
    if code == 130:
        _STATE.said = True  # the command line said it
    if _STATE.interrupted and code != 130:
        _say()
        return 130
    return code


def _aborted(number: int, frame: FrameType | None) -> None:
    os.write(2, ABORTED)
    os._exit(130)


def _raised(number: int, frame: FrameType | None) -> None:
    _STATE.interrupted = True
    raise KeyboardInterrupt


def _unraisable(unraisable: Any) -> None:
    """Python's report of an exception it cannot raise (in a ``__del__``, a weak reference's
    callback), but for Ctrl-C's: remembered already, said once by the exit."""
    if not isinstance(unraisable.exc_value, KeyboardInterrupt):
        sys.__unraisablehook__(unraisable)


def _remembered(number: int, frame: FrameType | None) -> None:
    _STATE.interrupted = True


def _say() -> None:
    if not _STATE.said:
        _STATE.said = True
        try:
            os.write(2, ABORTED)
        except OSError:  # stderr closed
            return


def leave(code: int) -> NoReturn:
    """End the command's process with ``code``: at once, or, once torch is loaded, after
    the exit handlers (torch's), the last of which (``_last``) ends it in 130 if a Ctrl-C
    came during them; the interpreter's teardown after them is skipped (a Ctrl-C there
    would kill the process by the signal)."""
    _STATE.code = code
    if "torch" in sys.modules:
        sys.exit(code)
    _release_named_semaphores()
    os._exit(code)


def _release_named_semaphores() -> None:
    """multiprocessing's objects still alive (a pool's queues, held by an interruption's
    traceback) unlink their named semaphores, as the interpreter's exit would: skipped,
    the resource tracker warns of them as leaked once this process is gone. Their
    finalizers, not its exit function: that one joins the children."""
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        util._run_finalizers(0)  # those of priority 0 and up: semaphores, queues' closing


def _last() -> None:
    """The last exit handler: the code ``leave`` was given, or 130 after a Ctrl-C."""
    if _STATE.code is None and not _STATE.interrupted:
        return  # not the command line's own exit
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # closed, or gone
            continue
    os._exit(exit_code(_STATE.code or 0))
