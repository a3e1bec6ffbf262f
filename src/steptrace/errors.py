"""The one error type users see: a message naming the file and the problem."""

from __future__ import annotations


class TraceError(Exception):
    """A trace, or a path given as one, that cannot be analyzed.

    The message is one line that names the file and says what is wrong with it.
    """
