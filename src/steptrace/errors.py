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
