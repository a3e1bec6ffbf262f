"""The one error type users see: a message naming the file and the problem."""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path


class TraceError(Exception):
    """A trace, or a path given as one, that cannot be analyzed.

    The message is one line that names the file and says what is wrong with it.
    """


class CaptureError(Exception):
    """A capture refused before or after running: the message says why, in one line."""


class CaptureWarning(UserWarning):
    """Something the capture observed that makes its trace less trustworthy."""


class NotTestable(Exception):  # noqa: N818 (the name the checks and their callers use)
    """A controlled check that cannot run here (wrong device, an optimizer without a faster
    implementation, a failed compile): refused before any timing, never a crash.

    ``reason`` says why in one line (it is also the message); ``instead`` says what to run
    by hand instead.
    """

    def __init__(self, reason: str, instead: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.instead = instead


class UserExit(BaseException):
    """``os._exit(code)`` called by the user's code in this process (``user_code``): a
    ``BaseException``, so that no ``except Exception`` of theirs swallows it."""


def ended_by(error: BaseException) -> str:
    """How the user's code ended a step, in words: ``called sys.exit(0)``, ``called
    os._exit(0)``, ``raised GeneratorExit: ... (at x.py:3)``."""
    if isinstance(error, SystemExit):
        return f"called sys.exit({error.code!r})"
    if isinstance(error, UserExit):
        return f"called {error}"
    return f"raised {raised_at(error)}"


def raised_at(error: BaseException) -> str:
    """An exception of the user's code in one line, with where it was raised: its type, its
    message and the last place of its traceback outside steptrace and torch
    (``ValueError: no config (at model.py:12)``)."""
    text = " ".join(str(error).split())[:300] or "no message"
    frames = traceback.extract_tb(error.__traceback__)
    ours = _packages()
    theirs = [f for f in frames if not f.filename.startswith(ours)] or frames
    place = f" (at {Path(theirs[-1].filename).name}:{theirs[-1].lineno})" if theirs else ""
    return f"{type(error).__name__}: {text}{place}"


def _packages() -> tuple[str, ...]:
    """The folders of steptrace and, once imported, torch: code that is not the user's."""
    modules = (sys.modules.get(name) for name in ("steptrace", "torch"))
    files = [getattr(module, "__file__", None) for module in modules]
    return tuple(f"{Path(file).parent}{os.sep}" for file in files if file)
