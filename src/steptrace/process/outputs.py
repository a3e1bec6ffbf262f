"""Files steptrace writes: whole or not at all, never over a file the user has.

``write_new(path, data)`` writes ``data`` to a temporary file in ``path``'s folder, then
links it to ``path`` (an existing ``path`` is refused: ``FileExistsError``) and removes
the temporary name: a full disk, a write error or a Ctrl-C leaves no partial file, only
the error. ``replace(path, data)`` does the same over a file of steptrace's own (a
capture's sidecar, rewritten with later figures). Errors are ``OSError`` s naming
``path``. Where the file system has no hard links, the temporary file is renamed into
place once ``path`` is known not to exist.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path

_NAME_BYTES = 64  # of the final name kept in the temporary one: it always fits in 255


def write_new(path: Path, data: bytes) -> Path:
    """Create ``path`` holding ``data``, whole, or raise leaving nothing behind."""
    temporary = _written(path, data)
    try:
        try:
            path.hardlink_to(temporary)
        except FileExistsError:
            raise
        except OSError as error:  # no hard links here (vfat, some network file systems)
            if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise
            if path.exists() or path.is_symlink():
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path)) from None
            temporary.rename(path)
    except OSError as error:
        raise _naming(error, path) from None
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()
    return path


def replace(path: Path, data: bytes) -> Path:
    """Write ``data`` over ``path`` (a file of steptrace's own), whole, or not at all."""
    temporary = _written(path, data)
    try:
        temporary.replace(path)
    except OSError as error:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise _naming(error, path) from None
    return path


def _written(path: Path, data: bytes) -> Path:
    """A temporary file beside ``path`` holding ``data``, flushed to the disk."""
    prefix = "." + os.fsdecode(os.fsencode(path.name)[:_NAME_BYTES]) + "."
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=prefix, suffix=".part")
    except OSError as error:
        raise _naming(error, path) from None
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
    except BaseException as error:
        with contextlib.suppress(OSError):
            Path(temporary).unlink()
        if isinstance(error, OSError):
            raise _naming(error, path) from None
        raise
    return Path(temporary)


def _naming(error: OSError, path: Path) -> OSError:
    """The same error, naming the file the user asked for (not a temporary one)."""
    return type(error)(error.errno, error.strerror or str(error), str(path))
