"""A package's public names, each imported from its module on first use (PEP 562)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_names(
    package: str, module_of: Mapping[str, str], *, unlisted: Iterable[str] = ()
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose names load when first used.

    ``unlisted`` names are left out of ``dir()``: those whose modules need an optional
    dependency, which ``help()`` and ``inspect`` would otherwise import (or fail on).
    """
    namespace = sys.modules[package].__dict__
    listed = set(module_of) - set(unlisted)

    def __getattr__(name: str) -> Any:  # noqa: N807 (the module hook's own name)
        if name not in module_of:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module_of[name]), name)
        namespace[name] = value  # later uses are plain attribute reads
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted({*namespace, *listed})

    return __getattr__, __dir__
