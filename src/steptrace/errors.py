"""The one error type users see: a message naming the file and the problem."""

from __future__ import annotations


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
