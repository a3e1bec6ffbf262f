"""Every public callable a user calls takes at most ten parameters, and none takes
``**kwargs``: what a call can say is what its signature lists (no keyword shims)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterator
from types import ModuleType

import pytest

import steptrace

pytest.importorskip("torch", reason="capture, validate and investigate need torch")

PACKAGES = ("steptrace.capturing", "steptrace.validate", "steptrace.investigation")
MOST = 10
# a method whose keywords are another value's fields, documented as such
KEYWORDS_BY_DESIGN = {"steptrace.capturing.session.Capture.amend"}


def modules() -> Iterator[ModuleType]:
    for name in PACKAGES:
        package = importlib.import_module(name)
        yield package
        for found in pkgutil.iter_modules(package.__path__, f"{name}."):
            yield importlib.import_module(found.name)


def callables() -> Iterator[tuple[str, Callable[..., object]]]:
    """Public functions, public classes' own ``__init__`` and public methods, by name."""
    seen: set[str] = set()
    values = [(f"steptrace.{n}", getattr(steptrace, n)) for n in steptrace.__all__]
    values += [(f"{m.__name__}.{n}", v) for m in modules() for n, v in vars(m).items()]
    for where, value in values:
        name = where.rpartition(".")[2]
        if name.startswith("_") or not getattr(value, "__module__", "").startswith("steptrace"):
            continue
        if inspect.isfunction(value):
            yield from _once(f"{value.__module__}.{value.__qualname__}", value, seen)
        elif inspect.isclass(value) and not getattr(value, "_is_protocol", False):
            for method_name, method in vars(value).items():
                if inspect.isfunction(method) and (
                    method_name == "__init__" or method_name[0] != "_"
                ):
                    full = f"{value.__module__}.{method.__qualname__}"
                    yield from _once(full, method, seen)


def _once(
    name: str, function: Callable[..., object], seen: set[str]
) -> Iterator[tuple[str, Callable[..., object]]]:
    if name not in seen:
        seen.add(name)
        yield name, function


def parameters(function: Callable[..., object]) -> list[inspect.Parameter]:
    listed = inspect.signature(function).parameters.values()
    return [p for p in listed if p.name not in ("self", "cls")]


def test_the_walk_finds_the_entry_points() -> None:
    names = {name for name, _ in callables()}
    for expected in (
        "steptrace.validate.ab.compare",
        "steptrace.capturing.training.profile_training",
        "steptrace.capturing.inference.profile_inference",
        "steptrace.capturing.session.Capture.__init__",
        "steptrace.validate.checks.profiler.profiler_check",
        "steptrace.investigation.run.investigate",
    ):
        assert expected in names


def test_no_public_callable_takes_more_than_ten_parameters() -> None:
    over = {name: len(parameters(f)) for name, f in callables() if len(parameters(f)) > MOST}
    assert over == {}


def test_no_public_callable_takes_arbitrary_keywords() -> None:
    open_ended = [
        name
        for name, function in callables()
        if name not in KEYWORDS_BY_DESIGN
        and any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters(function))
    ]
    assert open_ended == []


def test_no_exported_name_turns_into_its_submodule() -> None:
    """Once imported, a submodule is its package's attribute: a lazy name spelt like a
    submodule would then give the module where a function or class was meant."""
    found = list(pkgutil.walk_packages(steptrace.__path__, "steptrace."))
    for each in found:
        importlib.import_module(each.name)  # every submodule loaded, as in a long session
    clashes = [
        f"{each.name}.{name}"
        for each in found
        if each.ispkg
        for name in getattr(importlib.import_module(each.name), "__all__", ())
        if isinstance(getattr(importlib.import_module(each.name), name), ModuleType)
    ]
    assert clashes == []
