"""``constant_once_check`` (repeated-copy): the step as written (A) against the same step
with its constants built once (B), automatically, by a ``TorchFunctionMode``.

``ConstantCache`` intercepts, while B's step runs (torch 2.13 routes ``torch.tensor``,
``torch.as_tensor`` and ``Tensor.to`` through torch function modes: tested):

- ``torch.tensor`` / ``torch.as_tensor`` of Python data (numbers, and lists and tuples
  of them, nested): keyed by the exact content (pickled: types, float bits, -0.0 and
  nesting kept apart), the keyword arguments, the default dtype and device;
- ``Tensor.to`` / ``Tensor.cuda`` of a CPU tensor to another device: keyed by that very
  tensor (held, so its id cannot be reused), unchanged since (its version counter) and
  the arguments.

A hit returns the tensor built the first time, unless it was changed in place since (its
version counter moved): then it is built again. Tensors that require gradients are never
cached. Everything else passes through. The mode costs B about 3.4 µs per torch call in
its step (measured here: 3.0 µs is torch's mode machinery, a mode that does nothing; 0.4
µs this one's look-up), so a step without such a constant comes out slower, never faster,
and a dispatch-bound step's gain is understated: ``by_design`` says how many calls per
step went through the mode. Outputs must agree: a constant that
really changed (other content) is a miss, so caching cannot change a value that the
correctness check would not see.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from steptrace.errors import CaptureError
from steptrace.validate.ab import compare
from steptrace.validate.checks.factory import B_FAILED, refused_b, said, strict
from steptrace.validate.inputs import Batch, MakeState, Output, State, Step
from steptrace.validate.results import Comparison
from steptrace.validate.timing import CheckPlan, Instruments, TimingPlan

BUILDERS = (torch.tensor, torch.as_tensor)
MOVERS = (torch.Tensor.to, torch.Tensor.cuda)
PLAIN = (bool, int, float, complex, str, type(None), torch.dtype, torch.device, torch.memory_format)
Entry = tuple[torch.Tensor | None, torch.Tensor, tuple[int, int]]  # (source, tensor, versions)
Key = tuple[object, ...]  # the builder or mover, what it was given, the defaults
TorchFunction = Callable[..., Any]  # a torch function; what it returns flows on untouched
INSTEAD = (
    "create the tensor once on the device before the loop (or register it as a buffer) by "
    "hand, check the outputs are unchanged, then compare ms/step (steptrace compare)"
)


class _NotPlainError(Exception):
    """Raised while pickling anything that is not Python data."""


class _PlainPickler(pickle.Pickler):
    def reducer_override(self, obj: object) -> Any:  # pickle's own return type
        if type(obj) is complex:
            return NotImplemented  # pickled by value
        raise _NotPlainError  # exact ints, floats, bools, lists, tuples never come here


class ConstantCache(TorchFunctionMode):
    """Tensors built from unchanged data, built once and reused at later steps."""

    def __init__(self) -> None:
        super().__init__()
        self.built: dict[Key, Entry] = {}  # key -> (source, tensor, versions)
        self.hits = 0
        self.misses = 0
        self.calls = 0  # torch calls seen: each one pays the mode's own cost

    def __torch_function__(
        self,
        func: TorchFunction,
        types: Sequence[type],
        args: Sequence[object] = (),
        kwargs: Mapping[str, object] | None = None,
    ) -> Any:
        self.calls += 1
        kwargs = kwargs or {}
        key = _key(func, args, kwargs)
        if key is None:
            return func(*args, **kwargs)
        entry = self.built.get(key)
        if entry is not None and _unchanged(entry, args):
            self.hits += 1
            return entry[1]
        made = func(*args, **kwargs)
        if isinstance(made, torch.Tensor) and _cacheable(func, args, made):
            self.misses += 1
            source = args[0] if func in MOVERS and isinstance(args[0], torch.Tensor) else None
            version = 0 if source is None else source._version
            self.built[key] = (source, made, (version, made._version))
        return made


def _key(func: TorchFunction, args: Sequence[object], kwargs: Mapping[str, object]) -> Key | None:
    """The cache key, or None when this call is not one to cache."""
    if func not in BUILDERS and func not in MOVERS:
        return None
    if kwargs.get("requires_grad") or not args or not _plain_arguments(args[1:], kwargs):
        return None
    options = (tuple(map(repr, args[1:])), tuple(sorted((k, repr(v)) for k, v in kwargs.items())))
    if func in MOVERS:
        source = args[0]
        if not isinstance(source, torch.Tensor) or source.device.type != "cpu":
            return None
        return (func, id(source), options)
    content = _content(args[0])
    if content is None:
        return None
    defaults = (torch.get_default_dtype(), str(torch.get_default_device()))
    return (func, content, options, defaults)


def _content(data: object) -> bytes | None:
    """Python numbers, lists and tuples of them, pickled exactly; None for anything else."""
    if isinstance(data, torch.Tensor) or not isinstance(data, list | tuple | bool | int | float):
        return None
    buffer = io.BytesIO()
    try:
        _PlainPickler(buffer, protocol=5).dump(data)
    except (_NotPlainError, pickle.PicklingError, RecursionError):
        return None
    return buffer.getvalue()


def _plain_arguments(args: Sequence[object], kwargs: Mapping[str, object]) -> bool:
    return all(type(v) in PLAIN for v in (*args, *kwargs.values()))


def _cacheable(func: TorchFunction, args: Sequence[object], made: torch.Tensor) -> bool:
    if made.requires_grad:
        return False
    if func in MOVERS:  # a copy to another device, not the tensor itself
        source = args[0]
        return (
            isinstance(source, torch.Tensor) and made is not source and made.device != source.device
        )
    return True


def _unchanged(entry: Entry, args: Sequence[object]) -> bool:
    """The same source tensor, not changed in place, and a result not changed either."""
    source, made, (source_version, made_version) = entry
    if made._version != made_version:
        return False
    if source is None:
        return True
    return source is args[0] and source._version == source_version


def constant_once_check(
    step: Step,
    *,
    make_state: MakeState,
    batches: Sequence[Batch],
    device: str | torch.device = "cpu",
    check: CheckPlan | None = None,
    plan: TimingPlan | None = None,
    instruments: Instruments | None = None,
) -> Comparison:
    """The step as written (A) against the same step with its constants built once (B)."""
    cache = ConstantCache()
    ran = [0]

    def constants_once(state: State, batch: Batch) -> Output:
        ran[0] += 1
        with cache:
            return step(state, batch)

    try:
        result = compare(
            step,
            constants_once,
            make_state=make_state,
            batches=batches,
            device=device,
            check=strict(check, "constant_once_check"),
            plan=plan,
            instruments=instruments,
        )
    except CaptureError as error:
        if str(error).startswith(B_FAILED):
            raise refused_b(error, "the step fails with its constants cached", INSTEAD) from None
        raise
    return said(
        result,
        f"constants: B builds each tensor from unchanged data once and reuses it "
        f"({cache.misses} built, {cache.hits} reuses)",
        f"constants: B's {cache.calls // max(ran[0], 1)} torch calls per step run through a "
        "torch function mode (about 3 µs each on a CPU), which counts against B",
    )
