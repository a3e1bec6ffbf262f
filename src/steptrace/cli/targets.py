"""``MODULE:FUNCTION`` or ``FILE.py:FUNCTION`` -> the function (or the workload it makes),
with one-line errors."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from steptrace.errors import CaptureError, raised_at

if TYPE_CHECKING:
    from steptrace.capturing.workload import Workload


def load_callable(target: str) -> Callable[..., Any]:
    """Import the module (or file) and return its callable attribute."""
    where, _, name = target.rpartition(":")
    if not where or not name:
        raise CaptureError(f"{target}: expected MODULE:FUNCTION or FILE.py:FUNCTION")
    module = _import(where)
    function = getattr(module, name, None)
    if not callable(function):
        raise CaptureError(f"{target}: {where} has no function {name!r}")
    return function  # type: ignore[no-any-return]


def _import(where: str) -> Any:
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))  # as ``python -m`` does: modules of this folder
    path = Path(where)
    if where.endswith(".py") or path.exists():
        if not path.is_file():
            raise CaptureError(f"{where}: no such file")
        name = f"steptrace_target_{path.stem}"
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise CaptureError(f"{where}: cannot be imported")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # the user's module: one line, not a traceback
            del sys.modules[name]
            raise CaptureError(f"{where}: importing it failed: {exc!r}") from None
        return module
    try:
        return importlib.import_module(where)
    except ImportError as exc:
        raise CaptureError(f"{where}: cannot import ({exc})") from None
    except Exception as exc:  # the user's module failed while importing: one line
        raise CaptureError(f"{where}: importing it failed: {exc!r}") from None


def load_workload(target: str) -> Workload:
    """Call ``module:function`` or ``path/file.py:function`` and check it made a ``Workload``."""
    from steptrace.capturing.workload import Workload

    function = load_callable(target)
    try:
        workload = function()
    except Exception as exc:  # the user's code: say what failed, in one line
        raise CaptureError(f"{target}: the workload function raised {raised_at(exc)}") from None
    if not isinstance(workload, Workload):
        raise CaptureError(
            f"{target}: returned {type(workload).__name__}, not a steptrace.capturing.Workload"
        )
    return workload
