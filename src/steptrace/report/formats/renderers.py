"""Renderers found by name: each output format is one ``to_<name>`` module of this package.

A module defines a class with ``render(documents) -> str`` and names it ``RENDERER``;
``formats()`` lists them without importing any, so the command line can offer them at
start-up. A new format is a new module, and nothing else changes.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # the command line lists the formats before numpy is imported
    from steptrace.report.document import Document

_PREFIX = "to_"


class Renderer(Protocol):
    """Lays out documents in one format; it formats and escapes, it never computes."""

    def render(self, documents: Sequence[Document]) -> str: ...


class RendererClass(Protocol):
    def __call__(self, *, terminal: bool = False) -> Renderer: ...


def formats() -> tuple[str, ...]:
    """The output formats, by name (``text``, ``md``, ``json``, ``html``, ...)."""
    here = os.path.dirname(__file__)  # noqa: PTH120 (a listing, no pathlib: a fast start)
    return tuple(
        sorted(
            name[len(_PREFIX) : -len(".py")]
            for name in os.listdir(here)  # noqa: PTH208
            if name.startswith(_PREFIX) and name.endswith(".py")
        )
    )


def renderer(name: str, *, terminal: bool = False) -> Renderer:
    """The renderer of format ``name``; ``terminal``: the output is an interactive terminal."""
    if name not in formats():
        raise ValueError(f"unknown format {name!r}: one of {', '.join(formats())}")
    module = importlib.import_module(f"steptrace.report.formats.{_PREFIX}{name}")
    made: RendererClass = module.RENDERER
    return made(terminal=terminal)
